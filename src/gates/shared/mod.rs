//! What several gates share and none owns. Gates import these and never each other.

mod job_ledger;
mod shared_limits;

pub(crate) use job_ledger::SharedLedger;
pub(crate) use shared_limits::SharedCounts;
