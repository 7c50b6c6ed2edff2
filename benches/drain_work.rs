//! Work a drain throws away: a revocable zone of mixed work (`tidal_testkit::mixed_drain`: batch Jobs
//! with deadlines, services, training jobs that declare their run time, some checkpointed) drained for
//! its close by `tidal timeline`'s simulation with its default flags, evicting every preemptable pod
//! (`letPodsFinish: false`, as Volcano's TDM does) and letting those that end before the close finish.
//! Prints pod-hours thrown away, evictions, pods left to finish, and whether the close is met.
//! Not a criterion bench: the figures are the measurement. Run with `cargo bench --bench drain_work`.

// What the binary runs on, so that the figures are the binary's.
tidal::global_allocator!();

use tidal_testkit::mixed_drain::{drain, mixed_zone};

fn main() {
    let settings = tidal::cli::TimelineArgs::default_settings();
    for jobs in [50, 500] {
        for let_pods_finish in [false, true] {
            let mut zone = mixed_zone(jobs, 7, let_pods_finish);
            let outcome = drain(&mut zone, &settings);
            println!(
                "{jobs} jobs of each kind ({} pods), letPodsFinish {let_pods_finish}: {:.1} pod-hours \
                 thrown away, {} evictions, {} left to finish, {} at the close, margin {} s",
                jobs * 8,
                outcome.work_lost_pod_hours,
                outcome.evictions,
                outcome.left_to_finish,
                outcome
                    .at_close
                    .map_or_else(|| "?".to_owned(), |n| n.to_string()),
                outcome
                    .margin_seconds
                    .map_or_else(|| "?".to_owned(), |m| m.to_string()),
            );
        }
    }
}
