//! Draining a closing zone in time. The model estimates how long a zone's drain takes (its pods'
//! jobs and budgets, `evictPeriod`, the shared eviction rate, how long pods take to terminate); the
//! outlook decides when an `auto` drain starts, whether each close will be met, and what would fix it
//! when not. Pure: a snapshot, settings and an instant in, plain data out. The controller, the report
//! and the timeline read the same outlook.

pub mod advice;
pub mod inputs;
pub mod model;
pub mod outlook;

pub use model::{Bound, DrainEstimate, Pacing, RoundEstimate, Sender};
pub use outlook::{
    DEFAULT_MARGIN, DrainSettings, ZoneOutlook, draining_policy, grace_period, outlook,
};
