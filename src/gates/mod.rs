//! Safety gates. Every candidate of every strategy passes all of them, in order; the first that refuses
//! names the reason in the report. Gates with a running tally (budgets, limits) count a candidate only
//! once every gate has let it through, so a refusal further down never uses up an allowance.

pub(crate) mod budget;
pub(crate) mod cooldown;
pub(crate) mod finishes;
pub(crate) mod invalid;
pub(crate) mod limit;
pub(crate) mod nodefit;
pub(crate) mod notice;
pub(crate) mod protected;
mod shared;

pub(crate) use shared::{SharedCounts, SharedLedger};
