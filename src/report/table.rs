//! The report for a terminal: kubectl-style aligned columns, grouped by section, summary last.

use super::{Report, distinct, pod_ref, zone_state};
use crate::{
    framework::SkipReason,
    text::{
        WIDTH, clock,
        columns::{Columns, Layout, section},
        wrap,
    },
};

pub(super) fn render(report: &Report, layout: Layout) -> String {
    let wide = layout == Layout::Wide;
    let clock = &report.clock;
    let mut out = format!("{}\n", super::header(report));
    for policy in &report.policies {
        out.push_str(&format!("policy {} ({})", policy.name, policy.mode));
        if let (Some(verified), Some(unverified)) = (policy.verified, policy.unverified) {
            out.push_str(&format!(
                ": dry runs verified {verified}, unverified {unverified}"
            ));
        }
        out.push('\n');
    }
    out.push('\n');

    if !report.zones.is_empty() {
        let mut header = vec![
            "ZONE",
            "STATE",
            "NEXT CHANGE",
            "WINDOWS",
            "TIME ZONE",
            "NODES",
            "NEXT ROUND",
            "DRAIN",
        ];
        if wide {
            header.extend(["PREEMPTABLE", "EXPECTED EMPTY", "MARGIN", "AT CLOSE"]);
        }
        let mut zones = Columns::new(&header);
        for zone in &report.zones {
            let shown = zone.shown.clone().unwrap_or_default();
            let mut row = vec![
                zone.name.clone(),
                zone_state(zone).to_owned(),
                shown
                    .next_change
                    .or_else(|| zone.next_change.clone())
                    .unwrap_or_else(|| "-".into()),
                zone.windows.clone(),
                zone.time_zone.clone(),
                zone.nodes.to_string(),
                shown
                    .next_round
                    .or_else(|| zone.next_round.clone())
                    .unwrap_or_else(|| "due".into()),
                zone.drain.as_ref().map_or("-".into(), |d| d.verdict(clock)),
            ];
            if wide {
                row.extend(zone.drain.as_ref().map_or_else(
                    || vec!["-".to_owned(); 4],
                    |d| {
                        vec![
                            d.remaining_pods.to_string(),
                            d.expected_empty_at.map_or("-".into(), |t| clock.at(t)),
                            d.margin_text(),
                            d.at_close.map_or("-".into(), |n| n.to_string()),
                        ]
                    },
                ));
            }
            zones.add_row(row);
        }
        section(&mut out, "ZONES", &zones, layout);
        // Windows read in their zone's own time zone, every other time in the report's one.
        let shown_in = report.clock.time_zone().iana_name();
        if report
            .zones
            .iter()
            .any(|z| Some(z.time_zone.as_str()) != shown_in)
        {
            out.push_str(&layout.line(&format!(
                "WINDOWS are in each zone's TIME ZONE; every other time in {}",
                report.clock.stated().trim_start_matches("times in ")
            )));
            out.push('\n');
        }
        let notes = drain_notes(report, layout);
        if !notes.is_empty() {
            out.push_str(&notes);
            out.push('\n');
        }
    }

    // With several policies a pod can be decided once by each: rows say which policy, and titles
    // count pods, not rows. `-o wide` always names the policy.
    let several = report.several_policies();
    let policy_column = several || wide;
    let labelled = |header: &[&'static str], wide_only: &[&'static str]| {
        let mut header = header.to_vec();
        if policy_column {
            header.insert(2, "POLICY");
        }
        if wide {
            header.extend(wide_only);
        }
        Columns::new(&header)
    };
    let row = |mut cells: Vec<String>, policy: &str, wide_only: Vec<String>| {
        if policy_column {
            cells.insert(2, policy.to_owned());
        }
        if wide {
            cells.extend(wide_only);
        }
        cells
    };
    let title = |name: &str, rows: usize, pods: usize| {
        if several {
            format!(
                "{name} ({pods} pod{}, {rows} rows)",
                if pods == 1 { "" } else { "s" }
            )
        } else {
            format!("{name} ({rows})")
        }
    };

    if report.evictions.is_empty() {
        out.push_str("EVICTIONS\nnothing to evict\n\n");
    } else {
        let mut evictions = labelled(&["POD", "NODE", "STRATEGY", "JOB", "REASON"], &["ZONE"]);
        for e in &report.evictions {
            evictions.add_row(row(
                vec![
                    pod_ref(&e.namespace, &e.name),
                    e.node.clone().unwrap_or_default(),
                    e.strategy.clone(),
                    e.job.clone(),
                    clock.text(&e.reason),
                ],
                &e.policy,
                vec![e.zone.clone().unwrap_or_else(|| "-".to_owned())],
            ));
        }
        let pods = distinct(
            report
                .evictions
                .iter()
                .map(|e| (e.namespace.as_str(), e.name.as_str())),
        );
        section(
            &mut out,
            &title("EVICTIONS", report.evictions.len(), pods),
            &evictions,
            layout,
        );
    }

    let waiting = super::waiting_rows(report);
    if !waiting.is_empty() {
        let mut table = labelled(
            &["POD", "NODE", "ZONE", "JOB", "NEXT ROUND", "HELD BY"],
            &["PROPOSED FOR"],
        );
        for w in &waiting {
            let pod = pod_ref(w.namespace, w.name);
            table.add_row(row(
                [pod].into_iter().chain(w.cells(clock)).collect(),
                w.policy,
                vec![clock.text(w.reason)],
            ));
        }
        let pods = distinct(waiting.iter().map(|w| (w.namespace, w.name)));
        section(
            &mut out,
            &title("WAITING FOR A LATER ROUND", waiting.len(), pods),
            &table,
            layout,
        );
    }

    let mut skipped: Vec<&super::SkippedLine> = report.skipped_for_good().collect();
    // Pods a policy's own settings leave alone (gate `policy`) are a count unless `-o wide`: a large
    // cluster has tens of thousands, and they are what the operator chose, not what to look into.
    let mut by_setting: std::collections::BTreeMap<&str, usize> = Default::default();
    if !wide {
        skipped.retain(|s| {
            let setting = s.gate == SkipReason::HeldByPolicy.name();
            if setting {
                *by_setting.entry(s.detail.as_str()).or_default() += 1;
            }
            !setting
        });
    }
    if !skipped.is_empty() {
        let mut table = labelled(
            &["POD", "NODE", "STRATEGY", "GATE", "DETAIL"],
            &["PROPOSED FOR"],
        );
        let mut rows = skipped.clone();
        rows.sort_by(|a, b| a.gate.cmp(&b.gate));
        for s in rows {
            let detail = match &s.next_round_shown {
                Some(when) => format!("{}; {when}", s.detail),
                None => s.detail.clone(),
            };
            let detail = clock.text(&detail);
            table.add_row(row(
                vec![
                    pod_ref(&s.namespace, &s.name),
                    s.node.clone().unwrap_or_default(),
                    s.strategy.clone(),
                    s.gate.clone(),
                    detail,
                ],
                &s.policy,
                vec![clock.text(&s.reason)],
            ));
        }
        let pods = distinct(
            skipped
                .iter()
                .map(|s| (s.namespace.as_str(), s.name.as_str())),
        );
        section(
            &mut out,
            &title("SKIPPED", skipped.len(), pods),
            &table,
            layout,
        );
    }
    if !by_setting.is_empty() {
        let total: usize = by_setting.values().sum();
        let settings: Vec<String> = by_setting
            .iter()
            .map(|(setting, n)| format!("{setting}: {n}"))
            .collect();
        out.push_str(&layout.line(&format!(
            "LEFT ALONE BY SETTINGS: {total} pod{} ({}); -o wide lists them",
            if total == 1 { "" } else { "s" },
            settings.join(", ")
        )));
        out.push('\n');
    }

    if !report.strategies.is_empty() {
        out.push_str("WHAT EACH STRATEGY SAW\n");
        for line in &report.strategies {
            let policy = if several {
                format!("{} ", line.policy)
            } else {
                String::new()
            };
            out.push_str(&wrap(
                &clock.text(&format!(
                    "{policy}{}: {}",
                    line.strategy,
                    super::strategy_outcome(line)
                )),
                layout.width().map_or(WIDTH, |w| w.min(WIDTH)),
                "  ",
            ));
        }
        out.push('\n');
    }

    for warning in &report.warnings {
        out.push_str(&layout.line(&format!("warning: {}", clock.text(warning))));
    }
    if !report.warnings.is_empty() {
        out.push('\n');
    }
    out.push_str(&layout.line(&report.summary()));
    out
}

/// Under the zones: each drain's fix when at risk, what its estimate assumed, and what the close does
/// to pods left.
fn drain_notes(report: &Report, layout: Layout) -> String {
    let mut out = String::new();
    for zone in &report.zones {
        let Some(drain) = &zone.drain else {
            continue;
        };
        let clock = &report.clock;
        if let Some(fix) = &drain.fix {
            out.push_str(&layout.line(&format!("{} at risk: {}", zone.name, clock.text(fix))));
        }
        out.push_str(&layout.line(&format!(
            "{} estimate: {}",
            zone.name,
            clock.text(&drain.summary)
        )));
        let lost: i64 = report
            .evictions
            .iter()
            .filter(|e| e.zone.as_deref() == Some(zone.name.as_str()))
            .filter_map(|e| e.work_lost_seconds)
            .sum();
        if lost > 0 {
            out.push_str(&layout.line(&format!(
                "{} work thrown away by this round: {:.1} pod-hours (each evicted pod's run since its \
                 start or last checkpoint)",
                zone.name,
                lost as f64 / 3600.0
            )));
        }
        if let Some(notice) = &zone.notice {
            out.push_str(&layout.line(&format!(
                "{} notice: {}",
                zone.name,
                notice_text(notice, clock)
            )));
        }
        out.push_str(&layout.line(&format!(
            "{} at the close: {}",
            zone.name, drain.after_close
        )));
    }
    out
}

/// `10m before each eviction (evictionNotice): 2 pods told, 1 told now`.
fn notice_text(notice: &super::NoticeLine, clock: &clock::Clock) -> String {
    let pods = |n: u32| format!("{n} pod{}", if n == 1 { "" } else { "s" });
    let mut text = format!(
        "{} before each eviction (evictionNotice): {} told",
        notice.notice,
        pods(notice.told)
    );
    if notice.untold > 0 {
        let when = match notice.tells_from {
            Some(from) if from > clock.now() => {
                format!("told at {}, before the drain", clock.at_precisely(from))
            }
            Some(_) => "told now".to_owned(),
            None => "told once a drain is planned".to_owned(),
        };
        text.push_str(&format!(", {} {when}", pods(notice.untold)));
    }
    text
}
