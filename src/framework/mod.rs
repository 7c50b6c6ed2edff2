//! What strategies and gates are written against, and all they may depend on besides the API types and
//! the cluster model: the [`Strategy`] and [`Gate`] traits, the [`Candidate`] a strategy proposes, the
//! [`Gatekeeper`] handle through which it offers candidates to the gates, the [`PlanContext`] both read,
//! the zone views computed once per cycle, and the [`Warning`]s a plan carries about the cluster's
//! data. The planner implements the handle and runs the plugins; plugins never import the planner or
//! each other.

mod candidate;
mod context;
mod gate;
mod gatekeeper;
mod strategy;
mod strategy_id;
mod verdict;
mod warning;
mod zones;

pub use candidate::{Candidate, Exemptions, Gang, PlannedEviction, Skipped};
pub(crate) use context::PlacementGroups;
pub use context::{PlanContext, Violation, ZonePlacement};
pub use gate::Gate;
pub use gatekeeper::{AcceptAll, Gatekeeper};
pub use strategy::{Balancing, Plugin, PodByPod, Strategy};
pub use strategy_id::StrategyId;
pub use verdict::{GateId, Refusal, SkipReason};
pub use warning::{Warning, WarningKey};
pub use zones::{ZoneView, zone_views};
