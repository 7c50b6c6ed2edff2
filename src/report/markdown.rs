//! The report as Markdown, for pasting into a change ticket or a pull request.

use super::{Report, pod_ref, zone_state};

fn escape(cell: &str) -> String {
    cell.replace('|', "\\|").replace('\n', " ")
}

/// A Markdown table: `header`, then one line per row, each cell escaped.
pub(crate) fn table(out: &mut String, header: &[&str], rows: impl Iterator<Item = Vec<String>>) {
    out.push_str(&format!("| {} |\n", header.join(" | ")));
    out.push_str(&format!("|{}\n", "---|".repeat(header.len())));
    for row in rows {
        let cells: Vec<String> = row.iter().map(|c| escape(c)).collect();
        out.push_str(&format!("| {} |\n", cells.join(" | ")));
    }
    out.push('\n');
}

pub(super) fn render(report: &Report) -> String {
    let clock = &report.clock;
    let mut out = format!("# {}\n\n", super::header(report));
    for policy in &report.policies {
        out.push_str(&format!("- policy `{}` ({})\n", policy.name, policy.mode));
    }
    out.push_str(&format!("\n**{}**\n\n", report.summary()));
    if !report.zones.is_empty() {
        out.push_str("## Zones\n\n");
        table(
            &mut out,
            &[
                "Zone",
                "State",
                "Next change",
                "Windows",
                "Time zone",
                "Nodes",
            ],
            report.zones.iter().map(|z| {
                vec![
                    z.name.clone(),
                    zone_state(z).to_owned(),
                    z.shown
                        .as_ref()
                        .and_then(|shown| shown.next_change.clone())
                        .or_else(|| z.next_change.clone())
                        .unwrap_or_else(|| "-".into()),
                    z.windows.clone(),
                    z.time_zone.clone(),
                    z.nodes.to_string(),
                ]
            }),
        );
    }
    let drains: Vec<&super::ZoneLine> = report.zones.iter().filter(|z| z.drain.is_some()).collect();
    if !drains.is_empty() {
        out.push_str("## Drains\n\n");
        table(
            &mut out,
            &[
                "Zone",
                "Drain start",
                "Preemptable pods",
                "Expected empty",
                "Margin",
                "At close",
                "Verdict",
            ],
            drains.iter().filter_map(|z| {
                let d = z.drain.as_ref()?;
                Some(vec![
                    z.name.clone(),
                    d.start_text(clock),
                    d.remaining_pods.to_string(),
                    d.expected_empty_at.map_or("-".into(), |t| clock.at(t)),
                    d.margin_text(),
                    d.at_close.map_or("-".into(), |n| n.to_string()),
                    if d.at_risk {
                        format!("**at risk**: {}", d.verdict(clock))
                    } else {
                        d.verdict(clock)
                    },
                ])
            }),
        );
        for zone in &drains {
            let Some(d) = &zone.drain else { continue };
            if let Some(fix) = &d.fix {
                out.push_str(&format!(
                    "- `{}` at risk: {}\n",
                    zone.name,
                    escape(&clock.text(fix))
                ));
            }
            out.push_str(&format!(
                "- `{}` estimate: {}\n",
                zone.name,
                escape(&clock.text(&d.summary))
            ));
            out.push_str(&format!(
                "- `{}` at the close: {}\n",
                zone.name,
                escape(&d.after_close)
            ));
        }
        out.push('\n');
    }
    // With several policies a pod can be decided once by each: rows say which policy.
    let several = report.several_policies();
    let header = |columns: &[&'static str]| {
        let mut columns = columns.to_vec();
        if several {
            columns.insert(2, "Policy");
        }
        columns
    };
    let row = move |mut cells: Vec<String>, policy: &str| {
        if several {
            cells.insert(2, policy.to_owned());
        }
        cells
    };
    out.push_str(&format!("## Evictions ({})\n\n", report.evictions.len()));
    if report.evictions.is_empty() {
        out.push_str("Nothing to evict.\n\n");
    } else {
        table(
            &mut out,
            &header(&["Pod", "Node", "Strategy", "Job", "Reason"]),
            report.evictions.iter().map(|e| {
                row(
                    vec![
                        format!("`{}`", pod_ref(&e.namespace, &e.name)),
                        e.node.clone().unwrap_or_default(),
                        e.strategy.clone(),
                        e.job.clone(),
                        clock.text(&e.reason),
                    ],
                    &e.policy,
                )
            }),
        );
    }
    let waiting = super::waiting_rows(report);
    if !waiting.is_empty() {
        out.push_str(&format!(
            "## Waiting for a later round ({})\n\n",
            waiting.len()
        ));
        table(
            &mut out,
            &header(&["Pod", "Node", "Zone", "Job", "Next round", "Held by"]),
            waiting.iter().map(|w| {
                let pod = format!("`{}`", pod_ref(w.namespace, w.name));
                row([pod].into_iter().chain(w.cells(clock)).collect(), w.policy)
            }),
        );
    }
    let skipped: Vec<&super::SkippedLine> = report.skipped_for_good().collect();
    if !skipped.is_empty() {
        out.push_str(&format!("## Skipped ({})\n\n", skipped.len()));
        table(
            &mut out,
            &header(&["Pod", "Node", "Strategy", "Gate", "Detail"]),
            skipped.iter().map(|s| {
                row(
                    vec![
                        format!("`{}`", pod_ref(&s.namespace, &s.name)),
                        s.node.clone().unwrap_or_default(),
                        s.strategy.clone(),
                        s.gate.clone(),
                        clock.text(&match &s.next_round_shown {
                            Some(when) => format!("{}; {when}", s.detail),
                            None => s.detail.clone(),
                        }),
                    ],
                    &s.policy,
                )
            }),
        );
    }
    if !report.strategies.is_empty() {
        out.push_str("## What each strategy saw\n\n");
        for line in &report.strategies {
            let policy = if several {
                format!("`{}` ", line.policy)
            } else {
                String::new()
            };
            out.push_str(&format!(
                "- {policy}{}: {}\n",
                line.strategy,
                escape(&clock.text(&super::strategy_outcome(line)))
            ));
        }
        out.push('\n');
    }
    if !report.warnings.is_empty() {
        out.push_str("## Warnings\n\n");
        for warning in &report.warnings {
            out.push_str(&format!("- {}\n", escape(&clock.text(warning))));
        }
    }
    out
}
