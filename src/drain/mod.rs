//! Draining closing zones in time: one plan of every zone's drain and every eviction queued, which
//! the controller executes and the report, `explain` and the timeline read. The model estimates how
//! long drains take together (their pods' jobs and budgets, `evictPeriod`, one eviction queue served
//! least slack first, the shared rate limit, how long pods take to terminate); the plan decides when
//! each `auto` drain starts, given all the others, and whether each close will be missed by more than
//! the estimate's error, and what would fix it. Pure: a snapshot, settings and an instant in, plain
//! data out.

pub mod advice;
pub mod inputs;
pub mod model;
pub mod notice;
pub mod outlook;
pub mod pacing;
pub mod plan;
pub mod queue;
pub mod settings;

pub use model::{Bound, DrainEstimate, RoundEstimate};
pub use outlook::{AutoLead, ZoneOutlook};
pub use pacing::{Pacing, Sender, TokenBucket};
pub use plan::{Live, draining_policy, plan};
pub use queue::{EvictionQueue, Urgency};
pub use settings::{DEFAULT_MARGIN, DrainSettings, grace_period};
