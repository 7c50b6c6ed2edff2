//! tidal: a standalone Kubernetes descheduler.
//!
//! The flow of a cycle, one module per step: `cluster` (cache fed by events, snapshot per cycle) →
//! `plan` (zone states, `strategies` propose, `gates` refuse) → `report` (people and machines) or the
//! evictor. Decisions are pure functions of a snapshot and an instant; I/O lives in `dump` and the CLI.

pub mod admission;
pub mod api;
pub mod cli;
pub mod cluster;
pub mod dump;
pub mod gates;
pub mod keys;
pub mod plan;
pub mod report;
pub mod strategies;
pub mod taints;
pub mod watch;
pub mod windows;
