//! tidal: a standalone Kubernetes descheduler.
//!
//! The flow of a cycle, one module per step: `cluster` (cache fed by events, snapshot per cycle) →
//! `plan` (zone states, `strategies` propose, `gates` refuse) → `report` (people and machines) or the
//! evictor. Decisions are pure functions of a snapshot and an instant; I/O lives in `dump`, the CLI
//! and the live controller's adapters (`controller`, `evictor`, `leader`, `status`, `server`,
//! `metrics`).

pub mod admission;
pub mod api;
pub mod cli;
pub mod cluster;
pub mod controller;
pub mod evictor;
pub mod gates;

pub mod framework;
pub mod leader;
pub mod metrics;
pub mod planner;
pub mod report;
pub mod server;
pub mod status;
pub mod strategies;
pub mod synthetic;
pub mod taints;
pub mod watch;
pub mod windows;
