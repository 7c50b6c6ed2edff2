//! Test support for tidal, kept out of the library: synthetic clusters at any scale for benchmarks and
//! property tests, a small stateful fake Kubernetes API server for end-to-end tests, and the one seeded
//! generator both use, so that every run sees the same cluster.

pub mod fake_apiserver;
pub mod protobuf;
pub mod rng;
pub mod synthetic;
