//! What several strategies share and none owns: pod selection, victim order, node fit, ages and exit
//! codes. Strategies import these and never each other.

mod age;
mod exit_codes;
mod fit;
mod order;
mod selection;

pub(crate) use age::{format_age, seconds_since};
pub(crate) use exit_codes::has_exit_code;
pub(crate) use fit::{fits_elsewhere, fits_on, fits_on_after};
pub(crate) use order::{newest_first, oldest_first, victim_key, victim_order, weighed_in_order};
pub(crate) use selection::{Selection, movable, still_movable, still_movable_briefed};
