//! Time windows of revocable zones.
//!
//! Nodes in a revocable zone may only be used inside the zone's daily windows;
//! outside them tidal evicts pods. This module is the pure decision of *when*
//! a zone is open: it never reads the clock (callers pass the instant), so
//! every decision is reproducible in tests and in `explain`-style reports.
//!
//! All evaluation happens on the zone's local civil time as computed by jiff,
//! never by hand-written offset arithmetic, so DST gaps and folds are handled
//! by the same tz database the operator's wall clock uses.

mod schedule;
mod window;

#[cfg(test)]
mod tests;

pub use schedule::{ZoneSchedule, ZoneState, close_boundary, time_zone_named};
pub use window::{DailyWindow, Weekday};

/// Why a window or a zone schedule could not be built.
///
/// Every message names the offending configuration text, because these errors
/// surface at startup and the operator must find the bad line quickly.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum WindowError {
    /// The window text is not `HH:MM-HH:MM` with valid hours and minutes.
    #[error("window {text:?}: {reason} (expected \"HH:MM-HH:MM\")")]
    InvalidWindow {
        /// The text as configured.
        text: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// A window lists a day twice: the CRD declares `days` a set, so the API server refuses it, and a
    /// saved cluster that never passed one is refused the same way.
    #[error("window {text:?}: {day} is listed twice in its days")]
    RepeatedDay {
        /// The window's text as configured.
        text: String,
        day: Weekday,
    },
    /// The time zone is not in the bundled IANA database.
    #[error(
        "unknown time zone {name:?} (expected an IANA time zone name such as \"Europe/Berlin\" or \"UTC\"){}",
        likely.as_ref().map_or(String::new(), |l| format!("; did you mean {l:?}?"))
    )]
    UnknownTimeZone {
        /// The name as configured.
        name: String,
        /// The database's name it most likely misspells.
        likely: Option<String>,
    },
    /// A zone without windows would be closed forever; that is almost
    /// certainly a configuration mistake rather than an intent.
    #[error("a revocable zone needs at least one time window (e.g. \"08:00-21:00\")")]
    NoWindows,
}
