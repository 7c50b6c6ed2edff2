//! Test support for tidal, kept out of the library: synthetic clusters at any scale for benchmarks and
//! property tests, a small stateful fake Kubernetes API server for end-to-end tests, the builders of
//! the objects those tests hand it (the same builders tidal's unit tests use), and the one seeded
//! generator, so that every run sees the same cluster.

pub mod alloc;
pub mod fake_apiserver;
pub mod objects;
pub mod protobuf;
pub mod rng;
pub mod synthetic;

/// The clock the object builders count from: the wall clock, which the processes under test read.
fn now() -> jiff::Timestamp {
    jiff::Timestamp::now()
}
