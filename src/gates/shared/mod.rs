//! What several gates share and none owns. Gates import these and never each other.

mod job_ledger;

pub(crate) use job_ledger::SharedLedger;
