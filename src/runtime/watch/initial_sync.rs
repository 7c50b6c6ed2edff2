//! How the core kinds are first filled (and refilled after a relist): a streaming watch-list
//! (KEP-3157), which the API server answers from its watch cache at about three times the speed of a
//! paginated list, with the paginated list as the fallback. The decisions are here, as pure functions:
//! when to fall back, and when to stop asking a server that does not do watch-list.

use std::time::Duration;

use tracing::warn;

/// How a core kind's initial state is read.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum InitialSync {
    /// A watch-list (`sendInitialEvents=true`), falling back to the paginated list when the server
    /// does not do it.
    #[default]
    WatchList,
    /// The paginated list only: to measure one against the other on a real API server, and a way
    /// around a server whose watch-list misbehaves. Hidden setting: `TIDAL_INITIAL_SYNC=list`.
    List,
}

impl InitialSync {
    pub const ENV: &str = "TIDAL_INITIAL_SYNC";

    /// The setting's value: `list` (any case) forces the paginated list; anything else keeps the
    /// default.
    pub fn from_setting(value: Option<&str>) -> InitialSync {
        match value {
            Some(v) if v.trim().eq_ignore_ascii_case("list") => InitialSync::List,
            _ => InitialSync::WatchList,
        }
    }

    /// From `$TIDAL_INITIAL_SYNC`.
    pub fn from_env() -> InitialSync {
        let value = std::env::var(Self::ENV).ok();
        let sync = Self::from_setting(value.as_deref());
        if let Some(value) =
            value.filter(|v| sync == InitialSync::WatchList && !v.trim().is_empty())
        {
            warn!(%value, "{} is not `list`: trying the watch-list first", Self::ENV);
        }
        sync
    }
}

/// Longest wait for the next event before the initial events end. A server that serves watch-list
/// streams its initial events back to back; one that predates it (before 1.27) ignores
/// `sendInitialEvents`, sends the objects as a plain watch would and then nothing that ends them: this
/// bounds how long tidal waits on it with a cache it cannot call complete. (client-go has no such bound
/// and waits for the watch's timeout, then asks again.)
pub(crate) const INITIAL_EVENTS_IDLE: Duration = Duration::from_secs(60);

/// Why a watch-list did not give the initial state: the sync goes on through the paginated list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Fallback {
    pub(crate) why: String,
    /// The server does not do watch-list (refused it, or ignored it): do not ask again for this kind
    /// while the process lives. Otherwise the failure may pass, and the next relist asks again.
    pub(crate) refused: bool,
}

impl Fallback {
    fn refused(why: impl Into<String>) -> Self {
        Fallback {
            why: why.into(),
            refused: true,
        }
    }

    pub(crate) fn passing(why: impl Into<String>) -> Self {
        Fallback {
            why: why.into(),
            refused: false,
        }
    }

    /// The watch-list request was answered with `code` instead of a stream. A client error is the
    /// server's no (400/403/422: the WatchList feature gate is off, or the parameters are unknown to
    /// it); 401, 408, 410, 429 and server errors may pass.
    pub(crate) fn answered(code: u16) -> Self {
        let why = format!("watch-list answered {code}");
        if (400..500).contains(&code) && !matches!(code, 401 | 408 | 410 | 429) {
            Fallback::refused(why)
        } else {
            Fallback::passing(why)
        }
    }

    /// An ERROR event before the initial events ended. A 1.36 server on etcd 3.4 answers 500 "the
    /// required storage feature RequestWatchProgress is disabled", on every try: the server's no.
    /// 410, 429 and 504 (the watch cache not fresh in time) may pass.
    pub(crate) fn error_event(code: i32, message: &str) -> Self {
        let why = format!("watch-list ended with error {code}: {message}");
        if matches!(code, 410 | 429 | 504) {
            Fallback::passing(why)
        } else {
            Fallback::refused(why)
        }
    }

    /// A bookmark without the initial-events-end annotation before the initial events ended: the
    /// server ignored `sendInitialEvents` and serves a plain watch (one that does watch-list marks its
    /// first bookmark).
    pub(crate) fn plain_bookmark() -> Self {
        Fallback::refused(
            "the server ignores sendInitialEvents (a bookmark without initial-events-end)",
        )
    }

    /// Nothing for [`INITIAL_EVENTS_IDLE`] before the initial events ended.
    pub(crate) fn idle() -> Self {
        Fallback::refused(format!(
            "no initial-events-end bookmark and nothing else for {}s: the server ignores sendInitialEvents",
            INITIAL_EVENTS_IDLE.as_secs()
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_list_forces_the_paginated_list() {
        assert_eq!(InitialSync::from_setting(Some("list")), InitialSync::List);
        assert_eq!(InitialSync::from_setting(Some(" LIST ")), InitialSync::List);
        for other in [None, Some(""), Some("watch-list"), Some("lists")] {
            assert_eq!(
                InitialSync::from_setting(other),
                InitialSync::WatchList,
                "{other:?}"
            );
        }
    }

    #[test]
    fn a_server_that_says_no_is_not_asked_again_and_a_passing_failure_is() {
        for refused in [400, 403, 404, 405, 406, 422] {
            assert!(Fallback::answered(refused).refused, "{refused}");
        }
        for passing in [401, 408, 410, 429, 500, 503, 504] {
            assert!(!Fallback::answered(passing).refused, "{passing}");
        }
        assert!(
            Fallback::error_event(
                500,
                "required storage feature RequestWatchProgress is disabled"
            )
            .refused
        );
        for passing in [410, 429, 504] {
            assert!(!Fallback::error_event(passing, "").refused, "{passing}");
        }
        assert!(Fallback::plain_bookmark().refused);
        assert!(Fallback::idle().refused);
        assert!(!Fallback::passing("the stream ended").refused);
    }
}
