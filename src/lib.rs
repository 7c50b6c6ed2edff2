//! tidal: a standalone Kubernetes descheduler.
//!
//! The folder tree is the architecture, described once in `docs/architecture.md`: each top-level
//! module is a layer that imports only the layers below it in this list (`tests/offline/layers.rs`
//! enforces it), strategies and gates are plugins that never import each other, and decisions are
//! pure functions of a snapshot and an instant.
//!
//! `time_windows` → `api` → `cluster` → `framework` → `strategies`, `gates` → `planner` → `report` →
//! `timeline`, with `drain` between `planner` and `report` and `text` (over `time_windows`) under
//! `report`; `runtime` (over `cluster`) → `controller`, `webhook`; `cli` on top. A strategy's
//! arguments (`strategies/<id>/args.rs`) are API types kept in the strategy's folder.

#![warn(unreachable_pub)]

pub mod api;
pub mod cli;
pub mod cluster;
pub mod controller;
pub mod drain;
pub mod framework;
pub(crate) mod gates;
pub mod planner;
pub mod report;
pub mod runtime;
pub mod strategies;
#[cfg(test)]
mod testkit;
pub mod text;
pub mod time_windows;
pub mod timeline;
pub mod webhook;
