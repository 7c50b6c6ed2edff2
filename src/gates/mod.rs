//! Safety gates. Every candidate of every strategy passes all of them, in order; the first that refuses
//! names the reason in the report. Gates with a running tally (budgets, limits) count a candidate only
//! once every gate has let it through, so a refusal further down never uses up an allowance.
//!
//! A gate is one file named by its id. `job_ledger.rs` (what `invalid` and `budget` read of a job) and
//! `shared_limits.rs` (the counts behind `limits.shared`) are no gate: what several gates share and
//! none owns. Gates import them and never each other.

pub(crate) mod budget;
pub(crate) mod cooldown;
pub(crate) mod finishes;
pub(crate) mod invalid;
mod job_ledger;
pub(crate) mod limit;
pub(crate) mod nodefit;
pub(crate) mod notice;
pub(crate) mod protected;
mod shared_limits;

pub(crate) use job_ledger::SharedLedger;
pub(crate) use shared_limits::SharedCounts;
