//! Cost of `tidal timeline` at 5,000 nodes / 150,000 pods: the synthetic cluster's policy (TDM over
//! its four revocable zones) simulated over the default 24 hours with `tidal timeline`'s default
//! flags (eviction rate, burst, concurrency, drain margin, cycle timeout), one real plan per simulated
//! cycle, every eviction paced through the simulated queue; then the size of what it prints, one line
//! per round (`-o table`), every pod on a line of its own (`-o wide`, `-o json`), and the page
//! (`-o html`, written to target/browser/timeline-150k.html for the browser test).
//! Not a criterion bench: one simulation is the measurement (it takes seconds), run twice.
//! Run with `cargo bench --bench timeline`.

use std::time::Instant;

use jiff::SignedDuration;
use tidal::{cluster::PolicyInfo, timeline};
use tidal_testkit::synthetic::{SyntheticSpec, generate};

fn size(text: &str) -> String {
    format!("{} bytes, {} lines", text.len(), text.lines().count())
}

fn main() {
    let spec = SyntheticSpec::large();
    let cluster = generate(&spec);
    let policy = PolicyInfo::from_policy(&cluster.policy).expect("the synthetic policy has a name");
    let settings = tidal::cli::TimelineArgs::default_settings();
    for run in 1..=2 {
        let mut cache = cluster.to_cache();
        let started = Instant::now();
        let simulated = timeline::simulate(
            &mut cache,
            &[&policy],
            spec.now,
            SignedDuration::from_hours(24),
            &settings,
        );
        let took = started.elapsed();
        let rounds = simulated
            .events
            .iter()
            .filter(|e| !e.evictions.is_empty())
            .count();
        let evictions: usize = simulated.events.iter().map(|e| e.evictions.len()).sum();
        let at_risk = simulated.drains.iter().filter(|d| d.at_risk).count();
        println!(
            "timeline 24h, run {run}: {:.2} s, {} events ({rounds} with evictions, {evictions} evictions), \
             {} drains ({at_risk} at risk), {} warnings",
            took.as_secs_f64(),
            simulated.events.len(),
            simulated.drains.len(),
            simulated.warnings.len()
        );
        if run == 1 {
            let started = Instant::now();
            let table = simulated.to_table();
            let wide = simulated.to_wide_table();
            let json = simulated.to_json();
            println!(
                "output: table {}; wide {}; json {} (all three rendered in {:.2} s)",
                size(&table),
                size(&wide),
                size(&json),
                started.elapsed().as_secs_f64()
            );
            for line in table.lines().filter(|l| l.contains("round 1 ")).take(4) {
                println!("  {line}");
            }
            // The page, for the browser test: TIDAL_TIMELINE_PAGE=target/browser/timeline-150k.html
            // scripts/test-browser.
            let started = Instant::now();
            let html = simulated.to_html();
            let took = started.elapsed();
            let page = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("target/browser/timeline-150k.html");
            if let Some(dir) = page.parent() {
                let _ = std::fs::create_dir_all(dir);
            }
            let _ = std::fs::write(&page, &html);
            println!(
                "html: {} ({} round marks) in {:.2} s, written to {}",
                size(&html),
                html.matches("class=\"round\"").count(),
                took.as_secs_f64(),
                page.display()
            );
        }
    }
}
