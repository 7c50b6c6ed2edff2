//! The report for a terminal: kubectl-style aligned columns, grouped by section, summary last.

use comfy_table::{ContentArrangement, Table, presets::NOTHING};

use super::{Report, pod_ref, zone_state};

fn table(header: &[&str]) -> Table {
    let mut table = Table::new();
    table
        .load_style(NOTHING)
        .set_content_arrangement(ContentArrangement::Disabled)
        .set_header(header.iter().copied());
    // kubectl's look: no borders, columns flush left, two spaces apart.
    for column in table.column_iter_mut() {
        column.set_padding((0, 2));
    }
    table
}

fn section(out: &mut String, title: &str, table: Table) {
    out.push_str(title);
    out.push('\n');
    for line in table.to_string().lines() {
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out.push('\n');
}

pub fn render(report: &Report) -> String {
    let mut out = format!("tidal report at {}\n", report.now);
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
        let mut zones = table(&[
            "ZONE",
            "STATE",
            "NEXT CHANGE",
            "WINDOWS",
            "TIME ZONE",
            "NODES",
            "NEXT ROUND",
        ]);
        for zone in &report.zones {
            zones.add_row([
                zone.name.clone(),
                zone_state(zone).to_owned(),
                zone.next_change.clone().unwrap_or_else(|| "-".into()),
                zone.windows.clone(),
                zone.time_zone.clone(),
                zone.nodes.to_string(),
                zone.next_round.clone().unwrap_or_else(|| "due".into()),
            ]);
        }
        section(&mut out, "ZONES", zones);
    }

    if report.evictions.is_empty() {
        out.push_str("EVICTIONS\nnothing to evict\n\n");
    } else {
        let mut evictions = table(&["POD", "NODE", "STRATEGY", "JOB", "REASON"]);
        for e in &report.evictions {
            evictions.add_row([
                pod_ref(&e.namespace, &e.name),
                e.node.clone().unwrap_or_default(),
                e.strategy.clone(),
                e.job.clone(),
                e.reason.clone(),
            ]);
        }
        section(
            &mut out,
            &format!("EVICTIONS ({})", report.evictions.len()),
            evictions,
        );
    }

    if !report.skipped.is_empty() {
        let mut skipped = table(&["POD", "NODE", "STRATEGY", "GATE", "DETAIL"]);
        let mut rows: Vec<_> = report.skipped.iter().collect();
        rows.sort_by(|a, b| a.gate.cmp(&b.gate));
        for s in rows {
            skipped.add_row([
                pod_ref(&s.namespace, &s.name),
                s.node.clone().unwrap_or_default(),
                s.strategy.clone(),
                s.gate.clone(),
                s.detail.clone(),
            ]);
        }
        section(
            &mut out,
            &format!("SKIPPED ({})", report.skipped.len()),
            skipped,
        );
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
