//! Ages, for strategies that select pods by how long something has lasted.

/// `5m`, `3h12m`, `2d4h`: an age for messages.
pub(crate) fn format_age(seconds: i64) -> String {
    let seconds = seconds.max(0);
    let (days, hours, minutes, secs) = (
        seconds / 86_400,
        seconds % 86_400 / 3_600,
        seconds % 3_600 / 60,
        seconds % 60,
    );
    match (days, hours, minutes) {
        (0, 0, 0) => format!("{secs}s"),
        (0, 0, m) => format!("{m}m{secs}s"),
        (0, h, m) => format!("{h}h{m}m"),
        (d, h, _) => format!("{d}d{h}h"),
    }
}

/// Seconds from `since` to `now`, if `since` is known.
pub(crate) fn seconds_since(since: Option<jiff::Timestamp>, now: jiff::Timestamp) -> Option<i64> {
    since.map(|t| now.as_second() - t.as_second())
}
