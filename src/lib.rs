//! tidal: a standalone Kubernetes descheduler.
//!
//! The folder tree is the architecture (see docs/architecture.md); each layer imports only the ones
//! above it in this list:
//!
//! - `api`: CRD types tidal owns (policies with every strategy's args and the protections, zones)
//!   and foreign types it reads; pure data.
//! - `windows`: zone windows and time zones.
//! - `cluster`: the cluster model: slim objects, ingest, a cache fed by events, snapshots.
//! - `framework`: what plugins are written against: `Strategy`, `Gate`, `Candidate`, `Admission`, the
//!   plan context, zone views, identities and verdicts.
//! - `strategies`, `gates`: one file per plugin.
//! - `planner`: the registry, the gate chain, `plan_policy` / `plan_all`. Decisions are pure functions
//!   of a snapshot and an instant.
//! - `report`: table, JSON and Markdown output of a plan; saved-cluster dumps.
//! - `runtime`: what both processes share: client, admin server, watches, the lease.
//! - `controller` (`tidal run`) and `webhook` (`tidal webhook`), which never import each other.
//! - `cli`: parsing and the offline commands.

#![warn(unreachable_pub)]

pub mod api;
pub mod cli;
pub mod cluster;
pub mod controller;
pub mod framework;
pub(crate) mod gates;
pub mod planner;
pub mod report;
pub mod runtime;
pub(crate) mod strategies;
#[cfg(test)]
mod testkit;
pub mod webhook;
pub mod windows;
