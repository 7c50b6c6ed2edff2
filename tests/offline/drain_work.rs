//! What a drain throws away, on a zone of mixed work (`tidal_testkit::mixed_drain`) lived by the
//! timeline's simulation: letting the pods that end before the close finish throws away less work
//! and evicts fewer pods, and the close is met either way.

use tidal::cli::TimelineArgs;
use tidal_testkit::mixed_drain::{drain, mixed_zone};

#[test]
fn letting_pods_finish_throws_away_less_and_still_meets_the_close() {
    let settings = TimelineArgs::default_settings();
    let before = drain(&mut mixed_zone(50, 7, false), &settings);
    let after = drain(&mut mixed_zone(50, 7, true), &settings);
    eprintln!(
        "evict all: {:.1} pod-hours, {} evictions; let finish: {:.1} pod-hours, {} evictions, {} left \
         to finish",
        before.work_lost_pod_hours,
        before.evictions,
        after.work_lost_pod_hours,
        after.evictions,
        after.left_to_finish
    );
    assert_eq!(before.left_to_finish, 0);
    assert!(after.left_to_finish > 0);
    assert!(after.evictions < before.evictions);
    assert!(
        after.work_lost_pod_hours < before.work_lost_pod_hours,
        "{} pod-hours let finish, {} evicting all",
        after.work_lost_pod_hours,
        before.work_lost_pod_hours
    );
    for outcome in [&before, &after] {
        assert_eq!(outcome.at_close, Some(0));
        assert!(outcome.margin_seconds.is_some_and(|m| m >= 0));
    }
}
