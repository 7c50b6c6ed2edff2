//! Cost of `tidal timeline` at 5,000 nodes / 150,000 pods: the synthetic cluster's policy (TDM over
//! its four revocable zones) simulated over the default 24 hours with `tidal timeline`'s default
//! flags (eviction rate, burst, concurrency, drain margin, cycle timeout), one real plan per simulated
//! cycle, every eviction paced through the simulated queue; then the size of what it prints, one line
//! per round (`-o table`), every pod on a line of its own (`-o wide`, `-o json`), and the page
//! (`-o html`, written to target/browser/timeline-150k.html for the browser test).
//! Not a criterion bench: one simulation is the measurement (it takes seconds), run twice.
//! Run with `cargo bench --bench timeline`.

// What the binary runs on, so that the figures are the binary's.
tidal::global_allocator!();

use std::time::Instant;

use jiff::SignedDuration;
use tidal::{cluster::PolicyInfo, timeline};
use tidal_testkit::synthetic::{SyntheticSpec, generate};

/// One of the timeline's outputs.
type Render = fn(&timeline::Timeline) -> String;

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
            // The page first, for the browser test: TIDAL_TIMELINE_PAGE=target/browser/timeline-150k.html
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
            // Each output alone, dropped before the next: what each costs by itself.
            let outputs: [(&str, Render); 4] = [
                ("table", timeline::Timeline::to_table),
                ("markdown", timeline::Timeline::to_markdown),
                ("wide", timeline::Timeline::to_wide_table),
                ("json", timeline::Timeline::to_json),
            ];
            for (name, render) in outputs {
                let started = Instant::now();
                let text = render(&simulated);
                println!(
                    "{name}: {} in {:.2} s",
                    size(&text),
                    started.elapsed().as_secs_f64()
                );
                if name == "table" {
                    for line in text.lines().filter(|l| l.contains("round 1 ")).take(4) {
                        println!("  {line}");
                    }
                }
            }
        }
    }
}
