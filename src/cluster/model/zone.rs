//! A RevocableZone as the cache keeps it: its windows parsed and checked once when it changes.

use std::time::Duration;

use jiff::Timestamp;

use crate::cluster::Unnamed;
use crate::{
    api::{RevocableZone, RevocableZoneSpec},
    time_windows::{DailyWindow, ZoneSchedule, ZoneState},
};

#[derive(Clone, Debug)]
pub struct ZoneInfo {
    pub name: String,
    /// For the events tidal sends about the zone, and to tell it from a namesake deleted before it.
    pub uid: Option<String>,
    pub spec: RevocableZoneSpec,
    /// The parsed windows, or why they could not be parsed. A zone that does not parse evicts nothing.
    pub schedule: Result<ZoneSchedule, String>,
    /// From `status.lastEvictionRound`: `evictPeriod` counts from here.
    pub last_eviction_round: Option<Timestamp>,
    /// When what the last round left, because the API server throttled or dropped its evictions, is
    /// tried again: sooner than `evictPeriod`, which paces rounds the server took. Known to this
    /// process only.
    pub round_retry: Option<Timestamp>,
    /// From `status.drain`: the close an `auto` drain started for, and when.
    pub drain_started: Option<DrainStart>,
    /// From `status.conditions`: the drain the status calls at risk (`DrainOnTrack` False), as the
    /// leader that wrote it warned about it.
    pub at_risk_written: Option<AtRiskCall>,
}

/// A drain called at risk: of missing `close`, or (`None`) of a zone already closed with pods on it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AtRiskCall {
    pub close: Option<Timestamp>,
}

/// An `auto` drain decided for one close: the zone drains from `at` until `close`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DrainStart {
    pub close: Timestamp,
    pub at: Timestamp,
}

/// The condition type of a zone's status that says whether its drain will be done by the close.
pub const DRAIN_ON_TRACK: &str = "DrainOnTrack";

impl ZoneInfo {
    pub fn from_zone(zone: &RevocableZone) -> Result<ZoneInfo, Unnamed> {
        let name = zone
            .metadata
            .name
            .clone()
            .ok_or(Unnamed::name("RevocableZone"))?;
        Ok(ZoneInfo {
            schedule: schedule_of(&zone.spec).map_err(|e| format!("RevocableZone {name}: {e}")),
            last_eviction_round: zone
                .status
                .as_ref()
                .and_then(|s| s.last_eviction_round.as_ref())
                .map(|t| t.0),
            drain_started: zone
                .status
                .as_ref()
                .and_then(|s| s.drain.as_ref())
                .and_then(|drain| {
                    Some(DrainStart {
                        close: drain.close.as_ref()?.0,
                        at: drain.started_at.as_ref()?.0,
                    })
                }),
            round_retry: None,
            at_risk_written: zone.status.as_ref().and_then(|status| {
                let on_track = status
                    .conditions
                    .iter()
                    .find(|c| c.type_ == DRAIN_ON_TRACK)?;
                (on_track.status == "False").then(|| AtRiskCall {
                    close: status
                        .drain
                        .as_ref()
                        .and_then(|d| d.close.as_ref())
                        .map(|t| t.0),
                })
            }),
            uid: zone.metadata.uid.clone(),
            spec: zone.spec.clone(),
            name,
        })
    }

    /// The zone's state at `now`: open or closed, and draining when a fixed `drainBefore` puts `now`
    /// within that lead of the close, or when an `auto` drain was started for that close. `Err` when the
    /// windows cannot be read.
    pub fn state_at(&self, now: Timestamp) -> Result<ZoneState, String> {
        let schedule = self.schedule.as_ref().map_err(Clone::clone)?;
        let mut state = schedule.state_at(now, self.fixed_lead());
        if state.open
            && !state.draining
            && let (Some(started), Some(close)) = (self.drain_started, state.next_change)
        {
            state.draining = started.close == close && started.at <= now;
        }
        Ok(state)
    }

    /// When the zone's next eviction round may start after its round at `last_round`: `evictPeriod`
    /// later, or at the retry of a round the server cut short. `None`: a round is due now.
    pub fn next_round(&self, last_round: Option<Timestamp>, now: Timestamp) -> Option<Timestamp> {
        let last = last_round?;
        let period_over = last.checked_add(self.spec.evict_period.to_signed()).ok()?;
        let retry = self.round_retry.filter(|retry| *retry > last);
        Some(retry.map_or(period_over, |retry| retry.min(period_over))).filter(|next| *next > now)
    }

    /// The lead of a fixed `drainBefore`; zero for `auto`, whose drains start when decided.
    pub fn fixed_lead(&self) -> Duration {
        self.spec
            .drain_before
            .fixed()
            .map_or(Duration::ZERO, |lead| lead.as_std())
    }

    /// When a fixed `drainBefore` starts draining for the close at `close`; `None` for `auto`.
    pub fn fixed_drain_start(&self, close: Timestamp) -> Option<Timestamp> {
        let lead = self.spec.drain_before.fixed()?;
        close.checked_sub(lead.to_signed()).ok()
    }

    /// `evictionNotice`, when the zone asks for one (a zero notice asks none).
    pub fn eviction_notice(&self) -> Option<jiff::SignedDuration> {
        self.spec
            .eviction_notice
            .filter(|notice| !notice.as_std().is_zero())
            .map(|notice| notice.to_signed())
    }

    /// From when a notice counts for the drain the zone is in or nears at `now`: the opening of the
    /// window being closed. A notice given before it was for an earlier close, whose pods the zone
    /// has let back in since. `None` when the windows cannot be read.
    pub fn notice_era(&self, now: Timestamp) -> Option<Timestamp> {
        let schedule = self.schedule.as_ref().ok()?;
        let last_change = if schedule.is_open(now) {
            schedule.previous_change(now)
        } else {
            schedule
                .previous_change(now)
                .and_then(|close| close.checked_sub(jiff::SignedDuration::from_secs(1)).ok())
                .and_then(|open| schedule.previous_change(open))
        };
        // Open or closed for as far back as the windows are searched: any notice counts.
        Some(last_change.unwrap_or(Timestamp::MIN))
    }

    /// Whether the zone's `drainBefore` is `auto`.
    pub fn drains_automatically(&self) -> bool {
        self.spec.drain_before.fixed().is_none()
    }
}

fn schedule_of(spec: &RevocableZoneSpec) -> Result<ZoneSchedule, String> {
    let windows = spec
        .windows
        .iter()
        .map(|w| DailyWindow::parse(&w.time, &w.days))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| e.to_string())?;
    ZoneSchedule::new(windows, &spec.time_zone).map_err(|e| e.to_string())
}
