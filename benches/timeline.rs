//! Cost of `tidal timeline` at 5,000 nodes / 150,000 pods: the synthetic cluster's policy (TDM over
//! its four revocable zones) simulated over the default 24 hours, one real plan per simulated cycle.
//! Not a criterion bench: one simulation is the measurement (it takes seconds to minutes), run twice.
//! Run with `cargo bench --bench timeline`.

use std::time::Instant;

use jiff::SignedDuration;
use tidal::{cluster::PolicyInfo, timeline};
use tidal_testkit::synthetic::{SyntheticSpec, generate};

fn main() {
    let spec = SyntheticSpec::large();
    let cluster = generate(&spec);
    let policy = PolicyInfo::from_policy(&cluster.policy).expect("the synthetic policy has a name");
    for run in 1..=2 {
        let mut cache = cluster.to_cache();
        let started = Instant::now();
        let simulated = timeline::simulate(
            &mut cache,
            &[&policy],
            spec.now,
            SignedDuration::from_hours(24),
            &timeline::Settings::new(tidal::drain::DrainSettings::new(tidal::drain::Pacing {
                qps: 20.0,
                burst: 40,
                concurrency: 8,
                request: tidal::drain::Pacing::ASSUMED_REQUEST,
            })),
        );
        let took = started.elapsed();
        let rounds = simulated
            .events
            .iter()
            .filter(|e| !e.evictions.is_empty())
            .count();
        let evictions: usize = simulated.events.iter().map(|e| e.evictions.len()).sum();
        println!(
            "timeline 24h, run {run}: {:.2} s, {} events ({rounds} with evictions, {evictions} evictions), {} warnings",
            took.as_secs_f64(),
            simulated.events.len(),
            simulated.warnings.len()
        );
    }
}
