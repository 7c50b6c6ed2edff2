//! The timeline as JSON, YAML, and for a terminal: a bar per zone over the span, then the events in
//! time order, one row per pod, in each zone's own time zone and relative to now.

use jiff::Timestamp;

use super::{Event, EventKind, Phase, Timeline};
use crate::report::{
    clock, pod_ref,
    table::{section, table},
};

impl Timeline {
    /// The timeline as pretty JSON; like the report's, fields are only ever added.
    pub fn to_json(&self) -> String {
        let mut json = serde_json::to_string_pretty(self).expect("the timeline is plain data");
        json.push('\n');
        json
    }

    pub fn to_yaml(&self) -> String {
        serde_saphyr::to_string(self).expect("the timeline is plain data as YAML too")
    }

    /// The timeline for a terminal.
    pub fn to_table(&self) -> String {
        render(self)
    }
}

/// Characters in a zone's bar.
pub const BAR_WIDTH: usize = 48;

/// Fills each zone's bar: one character per `span / BAR_WIDTH`, showing the most disruptive phase of
/// its slot, so that a 20-minute drain still shows on a 30-minute slot.
pub(super) fn draw_bars(timeline: &mut Timeline) {
    let span = timeline.until.duration_since(timeline.now);
    let width = i32::try_from(BAR_WIDTH).unwrap_or(48);
    for zone in &mut timeline.zones {
        if zone.phases.is_empty() {
            zone.bar = "?".repeat(BAR_WIDTH);
            continue;
        }
        let mut bar = String::with_capacity(BAR_WIDTH);
        let at = |slot: i32| {
            timeline
                .now
                .checked_add(span / width * slot)
                .unwrap_or(Timestamp::MAX)
        };
        for slot in 0..width {
            let (start, end) = (at(slot), at(slot + 1));
            let at_start = zone
                .phases
                .iter()
                .rev()
                .find(|p| p.from <= start)
                .map(|p| p.phase);
            let within = zone
                .phases
                .iter()
                .filter(|p| p.from > start && p.from < end)
                .map(|p| p.phase);
            let phase = at_start.into_iter().chain(within).max();
            bar.push(phase.map_or('?', Phase::symbol));
        }
        zone.bar = bar;
    }
}
fn render(timeline: &Timeline) -> String {
    let span = timeline.until.duration_since(timeline.now);
    let span_text = clock::duration(span.unsigned_abs().as_secs());
    let mut out = format!(
        "tidal timeline from {} to {} ({span_text})\n",
        timeline.now, timeline.until
    );
    for policy in &timeline.policies {
        let simulated = if policy.mode == "DryRun" {
            ", simulated as if it evicted"
        } else {
            ""
        };
        out.push_str(&format!(
            "policy {} ({}{simulated})\n",
            policy.name, policy.mode
        ));
    }
    out.push_str("assumes evicted pods leave and nothing new arrives\n\n");

    if !timeline.zones.is_empty() {
        let mut zones = table(&["ZONE", "TIME ZONE", "NOW", &axis(span)]);
        for zone in &timeline.zones {
            let now = zone
                .phases
                .first()
                .map_or("invalid", |p| phase_name(p.phase));
            zones.add_row([
                zone.name.clone(),
                zone.time_zone.clone(),
                now.to_owned(),
                zone.bar.clone(),
            ]);
        }
        section(&mut out, "ZONES", zones);
        let slot = clock::duration(
            (span / i32::try_from(BAR_WIDTH).unwrap_or(48))
                .unsigned_abs()
                .as_secs(),
        );
        out.push_str(&format!(
            "one character is {slot}: # closed, ~ draining, . open\n\n"
        ));
    }

    if timeline.events.is_empty() {
        out.push_str("TIMELINE\nnothing happens in this span\n\n");
    } else {
        let mut rows = table(&["WHEN", "IN", "ZONE", "EVENT", "POD", "DETAIL"]);
        for event in &timeline.events {
            for (index, row) in event_rows(event).into_iter().enumerate() {
                // The event's time and zone once, on its first row: the rest are its pods.
                let head = if index == 0 {
                    [
                        event.when.clone(),
                        event.relative.clone(),
                        event.zone.clone().unwrap_or_else(|| "-".into()),
                    ]
                } else {
                    Default::default()
                };
                let [when, relative, zone] = head;
                let [what, pod, detail] = row;
                rows.add_row([when, relative, zone, what, pod, detail]);
            }
        }
        section(&mut out, "TIMELINE", rows);
    }

    for warning in &timeline.warnings {
        out.push_str(&format!("warning: {warning}\n"));
    }
    if !timeline.warnings.is_empty() {
        out.push('\n');
    }
    out.push_str(&summary(timeline));
    out
}

/// `now         +6h         +12h        +18h`: a label every quarter of the bar.
fn axis(span: jiff::SignedDuration) -> String {
    let quarter = BAR_WIDTH / 4;
    let mut axis = format!("{:<quarter$}", "now");
    for part in 1..4 {
        let offset = clock::duration((span / 4 * part).unsigned_abs().as_secs());
        axis.push_str(&format!("{:<quarter$}", format!("+{offset}")));
    }
    axis.trim_end().to_owned()
}

fn phase_name(phase: Phase) -> &'static str {
    match phase {
        Phase::Open => "open",
        Phase::Draining => "draining",
        Phase::Closed => "closed",
    }
}

/// `[event, pod, detail]` rows for one event.
fn event_rows(event: &Event) -> Vec<[String; 3]> {
    let mut rows = Vec::new();
    match event.event {
        EventKind::Opens => rows.push(["opens".into(), String::new(), String::new()]),
        EventKind::Closes => rows.push(["closes".into(), String::new(), String::new()]),
        EventKind::DrainStarts => rows.push([
            "starts draining".into(),
            String::new(),
            "preemptable pods leave before the close".into(),
        ]),
        EventKind::Round | EventKind::Held => {}
    }
    let what = match event.round {
        Some(n) => format!("round {n} evicts"),
        None => "evicts".to_owned(),
    };
    for pod in &event.evictions {
        rows.push([
            what.clone(),
            pod_ref(&pod.namespace, &pod.name),
            pod.job.clone(),
        ]);
    }
    for pod in &event.waiting {
        let waits = match &pod.next_round_when {
            Some(when) => format!("waits for {when}"),
            None => "stays".to_owned(),
        };
        rows.push([
            waits,
            pod_ref(&pod.namespace, &pod.name),
            format!("{}: {}", pod.gate, pod.detail),
        ]);
    }
    rows
}

/// Per zone: its rounds and what is left waiting at the end.
fn summary(timeline: &Timeline) -> String {
    let mut lines = Vec::new();
    for zone in &timeline.zones {
        let rounds: Vec<&Event> = timeline
            .events
            .iter()
            .filter(|e| e.zone.as_deref() == Some(&zone.name) && e.event == EventKind::Round)
            .collect();
        let evicted: usize = rounds.iter().map(|e| e.evictions.len()).sum();
        let last_waiting = timeline
            .events
            .iter()
            .rev()
            .find(|e| {
                e.zone.as_deref() == Some(&zone.name)
                    && matches!(e.event, EventKind::Round | EventKind::Held)
            })
            .map_or(0, |e| e.waiting.len());
        let mut line = format!(
            "{}: {} round{}, {evicted} eviction{}",
            zone.name,
            rounds.len(),
            if rounds.len() == 1 { "" } else { "s" },
            if evicted == 1 { "" } else { "s" },
        );
        if let Some(last) = rounds.last() {
            line.push_str(&format!(", the last {}", last.when));
        }
        if last_waiting > 0 {
            line.push_str(&format!("; {last_waiting} pod(s) stay"));
        }
        lines.push(line);
    }
    let elsewhere: usize = timeline
        .events
        .iter()
        .filter(|e| e.zone.is_none())
        .map(|e| e.evictions.len())
        .sum();
    if elsewhere > 0 {
        lines.push(format!("outside zones: {elsewhere} eviction(s)"));
    }
    let mut out = lines.join("\n");
    out.push('\n');
    out
}
