//! When a pod was told that a drain evicts it, and from when it may go: the rule gate `notice`, the
//! drain plan and the controller's notices share (see `crate::drain::notice` for who is told when).

use jiff::Timestamp;

use super::{pod::PodInfo, zone::ZoneInfo};
use crate::api::labels;

/// When `pod` was told that a drain of `zone` evicts it, if told for the close the zone is draining
/// for or nears at `now`.
pub fn noticed_at(pod: &PodInfo, zone: &ZoneInfo, now: Timestamp) -> Option<Timestamp> {
    let given = pod
        .status
        .condition(labels::EVICTION_NOTICE)
        .filter(|condition| condition.status == "True")?
        .last_transition?;
    let era = zone.notice_era(now)?;
    (given >= era).then_some(given)
}

/// From when a drain of `zone` may evict `pod`: its notice plus the zone's `evictionNotice`, or, not
/// told yet, `now` plus the notice (it is told at the earliest now). `None` when the zone asks no
/// notice.
pub fn evictable_from(pod: &PodInfo, zone: &ZoneInfo, now: Timestamp) -> Option<Timestamp> {
    let notice = zone.eviction_notice()?;
    let told = noticed_at(pod, zone, now).unwrap_or(now);
    Some(told.checked_add(notice).unwrap_or(Timestamp::MAX))
}
