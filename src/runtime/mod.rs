//! What both long-running processes (`tidal run` and `tidal webhook`) are built from, wired once: the
//! kube client and its flags, the admin HTTP server (metrics, health) and the connection limits of every listener, the watches that feed the
//! shared cache, and the lease with the wait for "leading and synced" that every leader loop starts
//! with. Nothing here plans or decides.

pub mod admin;
pub mod allocator;
pub mod client;
pub mod connections;
pub(crate) mod leader;
pub mod logs;
pub mod prometheus;
pub mod protobuf;
pub mod watch;

pub use client::ClientArgs;
pub use leader::until_leading_and_synced;
pub use logs::LogFormat;
pub use prometheus::PrometheusArgs;
