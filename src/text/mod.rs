//! Text for people, as the report, the timeline and `tidal explain` write it: kubectl-style columns
//! fitted to a terminal (`columns.rs`), sentences wrapped between words (`wrap.rs`), and instants shown
//! in one time zone per output, relative to the planning instant (`clock.rs`).

pub mod clock;
pub mod columns;
mod wrap;

pub use wrap::{WIDTH, wrap};
