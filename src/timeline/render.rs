//! The timeline as JSON, YAML, and for a terminal: what it assumed, a bar per zone over the span, the
//! events in time order (one line per round; each pod on a line of its own with `-o wide`), then each
//! zone's drain per close, in each zone's own time zone and relative to now.

use std::{
    collections::{BTreeMap, BTreeSet},
    sync::Arc,
};

use jiff::{SignedDuration, Timestamp};

use super::{Event, EventKind, Phase, PolicyRun, Timeline, Waiting};
use crate::{
    drain::advice::human,
    report::{drain::DrainLine, markdown::table, pod_ref},
    text::{
        clock::{self, Clock},
        columns::{Columns, Layout, section},
    },
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

    /// The timeline for a terminal: one line per round.
    pub fn to_table(&self) -> String {
        render(self, false, Layout::Natural)
    }

    /// [`Timeline::to_table`] fitted to `layout` (a terminal's width).
    pub fn to_table_for(&self, layout: Layout) -> String {
        render(self, false, layout)
    }

    /// The timeline as Markdown, for a ticket or a pull request: its tables as Markdown tables.
    pub fn to_markdown(&self) -> String {
        markdown(self)
    }

    /// The timeline for a terminal with every evicted and waiting pod on a line of its own.
    pub fn to_wide_table(&self) -> String {
        render(self, true, Layout::Wide)
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
fn render(timeline: &Timeline, wide: bool, layout: Layout) -> String {
    let span = timeline.until.duration_since(timeline.now);
    let clock = &timeline.clock;
    let mut out = layout.line(&heading(timeline));
    for policy in &timeline.policies {
        out.push_str(&format!("policy {}\n", policy_text(policy)));
    }
    for line in assumptions(timeline).lines() {
        out.push_str(&layout.line(line));
    }
    out.push('\n');

    if !timeline.zones.is_empty() {
        let mut zones = Columns::new(&["ZONE", "TIME ZONE", "NOW", &axis(span)]);
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
        section(&mut out, "ZONES", &zones, layout);
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
        let header: &[&str] = if wide {
            &["WHEN", "IN", "ZONE", "EVENT", "POD", "DETAIL"]
        } else {
            &["WHEN", "IN", "ZONE", "EVENT", "DETAIL"]
        };
        let mut rows = Columns::new(header);
        let mut staying = BTreeSet::new();
        for event in &timeline.events {
            for (index, row) in event_rows(event, wide, &mut staying, clock)
                .into_iter()
                .enumerate()
            {
                // The event's time and zone once, on its first row: the rest are its pods.
                let head = if index == 0 {
                    [
                        clock.at(event.shown),
                        event.relative.clone(),
                        event.zone.clone().unwrap_or_else(|| "-".into()),
                    ]
                } else {
                    Default::default()
                };
                let [when, relative, zone] = head;
                let [what, pod, detail] = row;
                if wide {
                    rows.add_row([when, relative, zone, what, pod, detail]);
                } else {
                    rows.add_row([when, relative, zone, what, detail]);
                }
            }
        }
        section(&mut out, "TIMELINE", &rows, layout);
    }

    out.push_str(&drains(timeline, layout));

    for warning in &timeline.warnings {
        out.push_str(&layout.line(&format!("warning: {}", clock.text(warning))));
    }
    if !timeline.warnings.is_empty() {
        out.push('\n');
    }
    for line in summary(timeline).lines() {
        out.push_str(&layout.line(line));
    }
    out
}

fn markdown(timeline: &Timeline) -> String {
    let clock = &timeline.clock;
    let mut out = format!("# {}\n\n", heading(timeline));
    for policy in &timeline.policies {
        out.push_str(&format!("- policy {}\n", policy_text(policy)));
    }
    out.push('\n');
    if !timeline.zones.is_empty() {
        out.push_str("## Zones\n\n");
        table(
            &mut out,
            &["Zone", "Time zone", "Windows", "drainBefore", "Now"],
            timeline.zones.iter().map(|zone| {
                vec![
                    zone.name.clone(),
                    zone.time_zone.clone(),
                    zone.windows.clone(),
                    zone.drain_before.clone(),
                    zone.phases
                        .first()
                        .map_or("invalid", |p| phase_name(p.phase))
                        .to_owned(),
                ]
            }),
        );
    }
    out.push_str("## Timeline\n\n");
    if timeline.events.is_empty() {
        out.push_str("Nothing happens in this span.\n\n");
    } else {
        let mut staying = BTreeSet::new();
        let mut rows = Vec::new();
        for event in &timeline.events {
            for [what, _, detail] in event_rows(event, false, &mut staying, clock) {
                rows.push(vec![
                    clock.at(event.shown),
                    event.relative.clone(),
                    event.zone.clone().unwrap_or_else(|| "-".into()),
                    what,
                    detail,
                ]);
            }
        }
        table(
            &mut out,
            &["When", "In", "Zone", "Event", "Detail"],
            rows.into_iter(),
        );
    }
    if !timeline.drains.is_empty() {
        out.push_str("## Drains\n\n");
        table(
            &mut out,
            &["Zone", "Closes", "Drain start", "Pods", "Verdict", "Fix"],
            timeline.drains.iter().map(|drain| {
                vec![
                    drain.zone.clone(),
                    drain
                        .close
                        .map(|close| clock.at(clock::close_boundary(&drain.tz, close)))
                        .unwrap_or_else(|| "before now".to_owned()),
                    drain.start_text(clock),
                    drain.remaining_pods.to_string(),
                    drain.verdict(clock),
                    drain
                        .fix
                        .as_deref()
                        .map(|f| clock.text(f))
                        .unwrap_or_default(),
                ]
            }),
        );
    }
    for warning in &timeline.warnings {
        out.push_str(&format!("- warning: {}\n", clock.text(warning)));
    }
    if !timeline.warnings.is_empty() {
        out.push('\n');
    }
    out.push_str("## Assumptions\n\n");
    for line in assumptions(timeline).lines() {
        out.push_str(&format!("- {line}\n"));
    }
    out
}

/// `tidal timeline from 2026-11-23T09:30:00Z to 2026-11-24T09:30:00Z (24h), times in UTC`.
pub(super) fn heading(timeline: &Timeline) -> String {
    let clock = &timeline.clock;
    let span = timeline.until.duration_since(timeline.now);
    format!(
        "tidal timeline from {} to {} ({}), {}",
        clock.instant(timeline.now),
        clock.instant(timeline.until),
        clock::duration(span.unsigned_abs().as_secs()),
        clock.stated()
    )
}

/// `revocable-zones (DryRun, simulated as if it evicted)`.
pub(super) fn policy_text(policy: &PolicyRun) -> String {
    let simulated = if policy.mode == "DryRun" {
        ", simulated as if it evicted"
    } else {
        ""
    };
    format!("{} ({}{simulated})", policy.name, policy.mode)
}

/// What the simulation assumed, in two lines.
pub(super) fn assumptions(timeline: &Timeline) -> String {
    let a = &timeline.assumptions;
    format!(
        "assumes evictions sent at {} a second after a burst of {}, {} at a time, {} each; {}\n\
         auto drains start {} times their estimate and {} before the close; other strategies' \
         evictions not sent within {} of their cycle are given up\n",
        a.eviction_qps,
        a.eviction_burst,
        a.eviction_concurrency,
        seconds(a.request_seconds),
        a.pods,
        a.drain_margin,
        human(SignedDuration::from_secs(a.drain_slack_seconds)),
        human(SignedDuration::from_secs(a.cycle_timeout_seconds)),
    )
}

/// `0.1s`, `2.5s`, `45s`, `5m 15s`.
fn seconds(seconds: f64) -> String {
    if seconds < 0.05 {
        "0s".to_owned()
    } else if seconds < 10.0 {
        format!("{seconds:.1}s")
    } else {
        human(SignedDuration::from_secs_f64(seconds))
    }
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

fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}

/// `[event, pod, detail]` rows for one event: the event's own line, then with `wide` its pods. A pod
/// that stays (no later round in the span takes it) gets its line once, the first time: later events
/// count it in their own line. `staying` holds the pods said to stay so far.
pub(super) fn event_rows(
    event: &Event,
    wide: bool,
    staying: &mut BTreeSet<(String, String)>,
    clock: &Clock,
) -> Vec<[String; 3]> {
    let mut rows = Vec::new();
    let detail = clock.text(event.detail.as_deref().unwrap_or_default());
    // The pods this event first says stay get a line each (with `wide`); those said before are
    // only counted, as still staying.
    let mut first_said = BTreeSet::new();
    for pod in event
        .waiting
        .iter()
        .filter(|p| event.waiting.next_round.is_none() && !left_to_finish(p))
    {
        let key = (pod.namespace.clone(), pod.name.clone());
        if staying.insert(key.clone()) {
            first_said.insert(key);
        }
    }
    let still = event.waiting.iter().any(|p| !left_to_finish(p)) && first_said.is_empty();
    match event.event {
        EventKind::Opens => rows.push(["opens".into(), String::new(), detail]),
        EventKind::Closes => rows.push(["closes".into(), String::new(), detail]),
        EventKind::DrainStarts => rows.push(["starts draining".into(), String::new(), detail]),
        EventKind::Notified => rows.push(["gives notice".into(), String::new(), detail]),
        EventKind::Round => {
            let pods = event.evictions.len();
            let what = match event.round {
                Some(n) => format!("round {n} evicts {pods} pod{}", plural(pods)),
                None => format!("evicts {pods} pod{}", plural(pods)),
            };
            let mut detail = pace_text(event);
            if let Some(waiting) = waiting_text(event, still, clock) {
                detail.push_str("; ");
                detail.push_str(&waiting);
            }
            rows.push([what, String::new(), detail]);
        }
        EventKind::Held => rows.push([
            "holds".into(),
            String::new(),
            waiting_text(event, still, clock).unwrap_or_default(),
        ]),
        EventKind::Finishes => rows.push([
            "ends by itself".into(),
            String::new(),
            format!(
                "{} left to finish, not evicted",
                event.pod.as_deref().unwrap_or("a pod")
            ),
        ]),
    }
    if !wide {
        return rows;
    }
    let after =
        |at: Option<Timestamp>| at.map(|t| seconds(t.duration_since(event.at).as_secs_f64()));
    for pod in &event.evictions {
        let detail = match (after(pod.sent_at), after(pod.gone_at)) {
            (Some(sent), Some(gone)) => {
                format!("{}; sent after {sent}, gone after {gone}", pod.job)
            }
            _ => format!("{}; given up, not sent", pod.job),
        };
        rows.push(["evicts".into(), pod_ref(&pod.namespace, &pod.name), detail]);
    }
    for pod in event.waiting.iter() {
        let waits = match event.waiting.next_round {
            _ if left_to_finish(pod) => "left to finish".to_owned(),
            Some(at) => format!("waits for {}", clock.at(at)),
            None if first_said.contains(&(pod.namespace.clone(), pod.name.clone())) => {
                "stays".to_owned()
            }
            None => continue,
        };
        rows.push([
            waits,
            pod_ref(&pod.namespace, &pod.name),
            clock.text(&format!("{}: {}", pod.gate, pod.detail)),
        ]);
    }
    rows
}

/// `2 jobs in 2 namespaces; sent within 0.3s, gone within 30s`: how long the round takes.
fn pace_text(event: &Event) -> String {
    let Some(pace) = &event.pace else {
        return String::new();
    };
    let mut text = format!(
        "{} job{} in {} namespace{}",
        pace.jobs,
        plural(pace.jobs as usize),
        pace.namespaces,
        plural(pace.namespaces as usize)
    );
    if !pace.gangs.is_empty() {
        // A round of a large zone takes hundreds of gangs: a few named, the rest counted (every one
        // is in `-o json`, and each pod's line with `-o wide` names its gang).
        const NAMED: usize = 3;
        let named = pace.gangs[..pace.gangs.len().min(NAMED)].join(", ");
        let more = match pace.gangs.len().saturating_sub(NAMED) {
            0 => String::new(),
            n => format!(" and {n} more"),
        };
        text.push_str(&format!(
            ", {} taken whole: {named}{more}",
            match pace.gangs.len() {
                1 => "a gang".to_owned(),
                n => format!("{n} gangs"),
            },
        ));
    }
    let within =
        |at: Option<Timestamp>| at.map(|t| seconds(t.duration_since(event.at).as_secs_f64()));
    if let (Some(sent), Some(gone)) = (within(pace.sent_by), within(pace.gone_by)) {
        text.push_str(&format!("; sent within {sent}, gone within {gone}"));
    }
    if pace.given_up > 0 {
        text.push_str(&format!(
            "; {} given up at the cycle timeout",
            pace.given_up
        ));
    }
    text
}

/// `3 wait for Mon 10:35 CET (budget 2, cooldown 1)` or `3 stay (budget 3)`; `3 still stay` when
/// every one of them was said to stay before (`still`); `1 left to finish` for pods that end by
/// themselves before the close.
fn waiting_text(event: &Event, still: bool, clock: &Clock) -> Option<String> {
    let (finishing, held): (Vec<&Arc<Waiting>>, Vec<&Arc<Waiting>>) =
        event.waiting.iter().partition(|pod| left_to_finish(pod));
    let mut parts = Vec::new();
    if !held.is_empty() {
        let mut gates: BTreeMap<&str, usize> = BTreeMap::new();
        for pod in &held {
            *gates.entry(pod.gate.as_str()).or_default() += 1;
        }
        let gates: Vec<String> = gates.iter().map(|(g, n)| format!("{g} {n}")).collect();
        let count = held.len();
        let what = match event.waiting.next_round {
            Some(at) => format!(
                "{count} wait{} for {}",
                if count == 1 { "s" } else { "" },
                clock.at(at)
            ),
            None => format!(
                "{count} {}stay{}",
                if still { "still " } else { "" },
                if count == 1 { "s" } else { "" }
            ),
        };
        parts.push(format!("{what} ({})", gates.join(", ")));
    }
    if !finishing.is_empty() {
        parts.push(format!("{} left to finish", finishing.len()));
    }
    (!parts.is_empty()).then(|| parts.join(", "))
}

/// A pod the drain leaves to finish: it ends by itself, neither waiting for a round nor staying.
fn left_to_finish(pod: &Waiting) -> bool {
    pod.gate == crate::framework::GateId::Finishes.name()
}

/// Each zone's drain per close: the verdict, then what it assumed, the fix and what the close does.
fn drains(timeline: &Timeline, layout: Layout) -> String {
    if timeline.drains.is_empty() {
        return String::new();
    }
    let clock = &timeline.clock;
    // A close as the operator wrote it (07:00), read in the zone's own time zone.
    let closes = |drain: &DrainLine| {
        drain
            .close
            .map(|close| clock.at(clock::close_boundary(&drain.tz, close)))
    };
    let mut rows = Columns::new(&["ZONE", "CLOSES", "DRAIN START", "PODS", "VERDICT"]);
    for drain in &timeline.drains {
        rows.add_row([
            drain.zone.clone(),
            closes(drain).unwrap_or_else(|| "before now".to_owned()),
            drain.start_text(clock),
            drain.remaining_pods.to_string(),
            drain.verdict(clock),
        ]);
    }
    let mut out = String::new();
    section(&mut out, "DRAINS", &rows, layout);
    for drain in &timeline.drains {
        let label = match closes(drain) {
            Some(close) => format!("{} ({close})", drain.zone),
            None => drain.zone.clone(),
        };
        if let Some(fix) = &drain.fix {
            out.push_str(&layout.line(&format!("{label} at risk: {}", clock.text(fix))));
        }
        if !drain.summary.is_empty() {
            out.push_str(
                &layout.line(&format!("{label} estimate: {}", clock.text(&drain.summary))),
            );
        }
        if let Some(lost) = drain.work_lost_seconds.filter(|lost| *lost > 0.0) {
            out.push_str(&layout.line(&format!(
                "{label} work thrown away: {} pod-hours (each evicted pod's run since its start or \
                 last checkpoint)",
                pod_hours(lost)
            )));
        }
    }
    // What a close does to the pods left: once per setting, naming its zones.
    let mut after: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for drain in &timeline.drains {
        let zones = after.entry(drain.after_close.as_str()).or_default();
        if !zones.contains(&drain.zone.as_str()) {
            zones.push(&drain.zone);
        }
    }
    for (sentence, zones) in after {
        out.push_str(&layout.line(&format!("at the close of {}: {sentence}", zones.join(", "))));
    }
    out.push('\n');
    out
}

/// Pod-seconds as pod-hours, to a tenth.
fn pod_hours(seconds: f64) -> String {
    format!("{:.1}", seconds / 3600.0)
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
            .map_or(0, |e| {
                e.waiting.iter().filter(|p| !left_to_finish(p)).count()
            });
        let finished = timeline
            .events
            .iter()
            .filter(|e| e.zone.as_deref() == Some(&zone.name) && e.event == EventKind::Finishes)
            .count();
        let mut line = format!(
            "{}: {} round{}, {evicted} eviction{}",
            zone.name,
            rounds.len(),
            if rounds.len() == 1 { "" } else { "s" },
            if evicted == 1 { "" } else { "s" },
        );
        if let Some(last) = rounds.last() {
            line.push_str(&format!(", the last {}", timeline.clock.at(last.shown)));
        }
        if finished > 0 {
            line.push_str(&format!(
                "; {finished} pod{} left to finish",
                plural(finished)
            ));
        }
        if last_waiting > 0 {
            line.push_str(&format!(
                "; {last_waiting} pod{} stay{}",
                plural(last_waiting),
                if last_waiting == 1 { "s" } else { "" }
            ));
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{testkit::ts, timeline::RoundPace};

    #[test]
    fn a_round_names_a_few_gangs_and_counts_the_rest() {
        let at = ts("2026-11-23T10:00:00Z");
        let mut event = Event::new(at, at, Some("z".into()), EventKind::Round);
        event.pace = Some(RoundPace {
            pods: 40,
            jobs: 5,
            namespaces: 1,
            gangs: (1..=5).map(|i| format!("PodGroup ml/g{i}")).collect(),
            ..RoundPace::default()
        });
        assert_eq!(
            pace_text(&event),
            "5 jobs in 1 namespace, 5 gangs taken whole: PodGroup ml/g1, PodGroup ml/g2, \
             PodGroup ml/g3 and 2 more"
        );
        event.pace.as_mut().unwrap().gangs.truncate(1);
        assert!(pace_text(&event).ends_with("a gang taken whole: PodGroup ml/g1"));
    }
}
