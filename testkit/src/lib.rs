//! Test support for tidal, kept out of the library: synthetic clusters at any scale for benchmarks and
//! property tests, a small stateful fake Kubernetes API server for end-to-end tests, the builders of
//! the objects those tests hand it (the same builders tidal's unit tests use), the one seeded generator, so that every run sees the same
//! cluster, and the webhook as a process of its own with the hostile clients that flood it.

pub mod admission;
pub mod alloc;
pub mod fake_apiserver;
pub mod flood;
pub mod listing;
pub mod mixed_drain;
pub mod objects;
pub mod protobuf;
pub mod rng;
pub mod saved;
pub mod synthetic;
pub mod webhook_process;

/// The clock the object builders count from: the wall clock, which the processes under test read.
fn now() -> jiff::Timestamp {
    jiff::Timestamp::now()
}
