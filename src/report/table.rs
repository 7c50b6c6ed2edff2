//! The report for a terminal: kubectl-style aligned columns, grouped by section, summary last.

use comfy_table::{ContentArrangement, Table, presets::NOTHING};

use super::{Report, distinct, drain::DrainLine, pod_ref, zone_state};

/// How wide the table may be.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Layout {
    /// Columns as wide as their content (a pipe, a file: what scripts and the docs see).
    Natural,
    /// At most this many characters a line: long cells wrap within their column.
    Fit(u16),
    /// `-o wide`: extra columns, never wrapped.
    Wide,
}

impl Layout {
    /// The terminal's width when stdout is one, else natural widths (as kubectl, which never cuts
    /// what goes to a pipe).
    pub(super) fn for_stdout() -> Layout {
        use std::io::IsTerminal;
        if !std::io::stdout().is_terminal() {
            return Layout::Natural;
        }
        let columns = std::env::var("COLUMNS").ok().and_then(|c| c.parse().ok());
        match columns.or_else(|| comfy_table::Table::new().width()) {
            Some(width) if width >= 40 => Layout::Fit(width),
            _ => Layout::Natural,
        }
    }
}

pub(crate) fn table(header: &[&str]) -> Table {
    sized_table(header, Layout::Natural)
}

fn sized_table(header: &[&str], layout: Layout) -> Table {
    let mut table = Table::new();
    table.load_style(NOTHING).set_header(header.iter().copied());
    match layout {
        Layout::Fit(width) => {
            table
                .set_content_arrangement(ContentArrangement::Dynamic)
                .set_width(width);
        }
        Layout::Natural | Layout::Wide => {
            table.set_content_arrangement(ContentArrangement::Disabled);
        }
    }
    // kubectl's look: no borders, columns flush left, two spaces apart.
    for column in table.column_iter_mut() {
        column.set_padding((0, 2));
    }
    table
}

pub(crate) fn section(out: &mut String, title: &str, table: Table) {
    out.push_str(title);
    out.push('\n');
    for line in table.to_string().lines() {
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out.push('\n');
}

pub(super) fn render(report: &Report, layout: Layout) -> String {
    let wide = layout == Layout::Wide;
    // To the second: nanoseconds of the instant the command happened to start say nothing.
    let now = report
        .now
        .parse::<jiff::Timestamp>()
        .ok()
        .and_then(|t| t.round(jiff::Unit::Second).ok())
        .map_or_else(|| report.now.clone(), |t| t.to_string());
    let mut out = format!("tidal report at {now}\n");
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
        let mut zones = table(&header);
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
                zone.drain.as_ref().map_or("-".into(), DrainLine::verdict),
            ];
            if wide {
                row.extend(zone.drain.as_ref().map_or_else(
                    || vec!["-".to_owned(); 4],
                    |d| {
                        vec![
                            d.remaining_pods.to_string(),
                            d.expected_empty_at
                                .map_or("-".into(), |t| super::clock::local(&d.tz, t)),
                            d.margin_text(),
                            d.at_close.map_or("-".into(), |n| n.to_string()),
                        ]
                    },
                ));
            }
            zones.add_row(row);
        }
        section(&mut out, "ZONES", zones);
        let notes = drain_notes(report);
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
        sized_table(&header, layout)
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
                    e.reason.clone(),
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
            evictions,
        );
    }

    let waiting = super::waiting_rows(report);
    if !waiting.is_empty() {
        let mut table = labelled(
            &["POD", "NODE", "ZONE", "JOB", "NEXT ROUND", "HELD BY"],
            &["PROPOSED FOR"],
        );
        for w in &waiting {
            table.add_row(row(
                vec![
                    pod_ref(w.namespace, w.name),
                    w.node.to_owned(),
                    w.zone.to_owned(),
                    w.job.to_owned(),
                    w.when.to_owned(),
                    w.held_by.clone(),
                ],
                w.policy,
                vec![w.reason.to_owned()],
            ));
        }
        let pods = distinct(waiting.iter().map(|w| (w.namespace, w.name)));
        section(
            &mut out,
            &title("WAITING FOR A LATER ROUND", waiting.len(), pods),
            table,
        );
    }

    let skipped: Vec<&super::SkippedLine> = report.skipped_for_good().collect();
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
            table.add_row(row(
                vec![
                    pod_ref(&s.namespace, &s.name),
                    s.node.clone().unwrap_or_default(),
                    s.strategy.clone(),
                    s.gate.clone(),
                    detail,
                ],
                &s.policy,
                vec![s.reason.clone()],
            ));
        }
        let pods = distinct(
            skipped
                .iter()
                .map(|s| (s.namespace.as_str(), s.name.as_str())),
        );
        section(&mut out, &title("SKIPPED", skipped.len(), pods), table);
    }

    if !report.strategies.is_empty() {
        out.push_str("WHAT EACH STRATEGY SAW\n");
        for line in &report.strategies {
            let policy = if several {
                format!("{} ", line.policy)
            } else {
                String::new()
            };
            out.push_str(&super::wrap(
                &format!(
                    "{policy}{}: {}",
                    line.strategy,
                    super::strategy_outcome(line)
                ),
                super::WIDTH,
                "  ",
            ));
        }
        out.push('\n');
    }

    for warning in &report.warnings {
        out.push_str(&format!("warning: {warning}\n"));
    }
    if !report.warnings.is_empty() {
        out.push('\n');
    }
    out.push_str(&report.summary());
    out.push('\n');
    out
}

/// Under the zones: each drain's fix when at risk, what its estimate assumed, and what the close does
/// to pods left.
pub(super) fn drain_notes(report: &Report) -> String {
    let mut out = String::new();
    for zone in &report.zones {
        let Some(drain) = &zone.drain else {
            continue;
        };
        if let Some(fix) = &drain.fix {
            out.push_str(&format!("{} at risk: {fix}\n", zone.name));
        }
        out.push_str(&format!("{} estimate: {}\n", zone.name, drain.summary));
        out.push_str(&format!(
            "{} at the close: {}\n",
            zone.name, drain.after_close
        ));
    }
    out
}
