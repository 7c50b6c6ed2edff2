//! The timeline as one self-contained HTML page (`-o html`): a picture of the span, each zone a lane
//! (its windows, the drain start, the expected-empty instant, the close with its margin or miss, the
//! rounds and a curve of the pods left), the zones that miss a close first; then the tables of the
//! text output. Every mark says what it is when hovered (SVG `<title>`). Nothing is fetched: no
//! script, no font, no stylesheet from elsewhere, and the page's Content-Security-Policy forbids it.
//!
//! The picture's size does not grow with the cluster: rounds and the curve are gathered per column
//! of pixels, so that a week of rounds at 150,000 pods draws a few hundred marks.

use std::collections::BTreeSet;

use jiff::{Timestamp, ToSpan, Unit, ZonedRound};
use maud::{DOCTYPE, Markup, PreEscaped, html};

use super::{Event, EventKind, Phase, Timeline, ZoneTrack, render};
use crate::{
    report::drain::DrainLine,
    text::clock::{self, Clock},
};

/// The picture's width in SVG units (it scales to the page).
const WIDTH: f64 = 1200.0;
/// Room for the zones' names, left of the span.
const LABELS: f64 = 190.0;
const RIGHT: f64 = 24.0;
/// The time axis above the lanes.
const AXIS: f64 = 34.0;
const LANE: f64 = 78.0;
/// Columns the span is gathered into for rounds and curves: about one per 4 units.
pub(super) const COLUMNS: usize = 246;

/// Where the instants of the span fall across the picture.
#[derive(Clone, Copy, Debug)]
struct Scale {
    now: Timestamp,
    until: Timestamp,
}

impl Scale {
    fn plot_width() -> f64 {
        WIDTH - LABELS - RIGHT
    }

    /// The x of `at`, held within the span.
    fn x(&self, at: Timestamp) -> f64 {
        let span = self.until.duration_since(self.now).as_secs_f64().max(1.0);
        let offset = at.duration_since(self.now).as_secs_f64().clamp(0.0, span);
        LABELS + offset / span * Scale::plot_width()
    }

    fn within(&self, at: Timestamp) -> bool {
        at >= self.now && at <= self.until
    }

    /// The column `at` falls in.
    fn column(&self, at: Timestamp) -> usize {
        let share = (self.x(at) - LABELS) / Scale::plot_width();
        ((share * COLUMNS as f64) as usize).min(COLUMNS - 1)
    }
}

/// One zone's lane: its drains within the span, and how badly they go.
struct Lane<'a> {
    zone: &'a ZoneTrack,
    drains: Vec<&'a DrainLine>,
}

impl Lane<'_> {
    /// A close this zone misses.
    fn misses(&self) -> bool {
        self.drains.iter().any(|d| d.at_risk)
    }

    /// Its tightest margin in seconds (the largest miss, negative).
    fn tightest(&self) -> Option<i64> {
        self.drains.iter().filter_map(|d| d.margin_seconds).min()
    }
}

/// The zones in the order an operator reads them: those missing a close first, then by the
/// tightest margin, then by name.
fn lanes(timeline: &Timeline) -> Vec<Lane<'_>> {
    let mut lanes: Vec<Lane<'_>> = timeline
        .zones
        .iter()
        .map(|zone| Lane {
            zone,
            drains: timeline
                .drains
                .iter()
                .filter(|d| d.zone == zone.name)
                .collect(),
        })
        .collect();
    lanes.sort_by(|a, b| {
        b.misses()
            .cmp(&a.misses())
            .then(
                a.tightest()
                    .unwrap_or(i64::MAX)
                    .cmp(&b.tightest().unwrap_or(i64::MAX)),
            )
            .then(a.zone.name.cmp(&b.zone.name))
    });
    lanes
}

/// Rounds gathered into one column of the picture.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct RoundMark {
    pub column: usize,
    pub rounds: usize,
    pub pods: usize,
    pub first: Timestamp,
    pub last: Timestamp,
}

/// The rounds among `events` (a zone's, or those outside zones), gathered per column.
fn round_marks<'a>(events: impl Iterator<Item = &'a Event>, scale: Scale) -> Vec<RoundMark> {
    let mut marks: Vec<RoundMark> = Vec::new();
    for event in events.filter(|e| e.event == EventKind::Round && scale.within(e.at)) {
        let column = scale.column(event.at);
        match marks.last_mut() {
            Some(mark) if mark.column == column => {
                mark.rounds += 1;
                mark.pods += event.evictions.len();
                mark.last = event.shown;
            }
            _ => marks.push(RoundMark {
                column,
                rounds: 1,
                pods: event.evictions.len(),
                first: event.shown,
                last: event.shown,
            }),
        }
    }
    marks
}

/// Where each of a zone's drains starts on the picture, and the pods it starts with: a zone closed
/// before now drains from now; a drain with nothing to take draws nothing.
fn drain_starts(drains: &[&DrainLine], scale: Scale) -> Vec<(Timestamp, u32)> {
    drains
        .iter()
        .filter(|d| d.remaining_pods > 0)
        .filter_map(|d| {
            let start = match (d.drain_start, d.close) {
                (Some(start), _) => start,
                (None, None) => scale.now,
                (None, Some(_)) => return None,
            };
            Some((start.max(scale.now), d.remaining_pods))
        })
        .filter(|(at, _)| *at <= scale.until)
        .collect()
}

/// The preemptable pods left on a zone over the span, as `(instant, pods)` steps, at most one per
/// column: each drain (`starts`, in time order) starts from its pods, and every pod evicted (once
/// gone) or ending by itself takes one off.
fn remaining_curve(
    events: &[&Event],
    starts: &[(Timestamp, u32)],
    scale: Scale,
) -> Vec<(Timestamp, u32)> {
    // (instant, pods left, whether a drain starts there)
    let mut steps: Vec<(Timestamp, i64, bool)> = Vec::new();
    for (index, &(start, pods)) in starts.iter().enumerate() {
        let end = starts.get(index + 1).map_or(scale.until, |next| next.0);
        let mut changes: Vec<Timestamp> = Vec::new();
        for event in events.iter().filter(|e| e.at >= start && e.at < end) {
            match event.event {
                EventKind::Round => changes.extend(
                    event
                        .evictions
                        .iter()
                        .filter_map(|m| m.gone_at)
                        .filter(|at| *at < end),
                ),
                EventKind::Finishes => changes.push(event.at),
                _ => {}
            }
        }
        changes.sort_unstable();
        let mut left = i64::from(pods);
        steps.push((start, left, true));
        for at in changes {
            left -= 1;
            steps.push((at.min(scale.until), left, false));
        }
    }
    // One step per column, the count at its end; and each drain's start, where the curve begins.
    let mut curve: Vec<(Timestamp, u32)> = Vec::new();
    let mut last: Option<(usize, bool)> = None;
    for (at, left, starts) in steps {
        let left = u32::try_from(left.max(0)).unwrap_or(0);
        let column = scale.column(at);
        if last == Some((column, false))
            && !starts
            && let Some(step) = curve.last_mut()
        {
            step.1 = left;
            continue;
        }
        last = Some((column, starts));
        curve.push((at, left));
    }
    curve
}

/// Instants for the axis: at most a dozen, on whole quarter hours, hours or days of `clock`'s zone.
fn ticks(scale: Scale, clock: &Clock) -> Vec<Timestamp> {
    let span_minutes = scale.until.duration_since(scale.now).as_mins().max(1);
    let step = [15, 30, 60, 120, 180, 360, 720, 1440, 2880]
        .into_iter()
        .find(|step| span_minutes / step <= 12)
        .unwrap_or(2880);
    let zoned = scale.now.to_zoned(clock.time_zone().clone());
    let round = if step >= 1440 {
        ZonedRound::new().smallest(Unit::Day)
    } else if step >= 60 {
        ZonedRound::new().smallest(Unit::Hour).increment(step / 60)
    } else {
        ZonedRound::new().smallest(Unit::Minute).increment(step)
    };
    let Ok(mut at) = zoned.round(round.mode(jiff::RoundMode::Ceil)) else {
        return Vec::new();
    };
    let mut ticks = Vec::new();
    while at.timestamp() <= scale.until && ticks.len() < 16 {
        ticks.push(at.timestamp());
        let next = if step >= 1440 {
            at.checked_add((step / 1440).days())
        } else {
            at.checked_add(step.minutes())
        };
        match next {
            Ok(next) => at = next,
            Err(_) => break,
        }
    }
    ticks
}

fn fixed(x: f64) -> String {
    format!("{x:.1}")
}

fn phase_name(phase: Phase) -> &'static str {
    match phase {
        Phase::Open => "open",
        Phase::Draining => "draining",
        Phase::Closed => "closed",
    }
}

/// The close as its zone's windows write it (07:00, not the first closed second).
fn close_shown(drain: &DrainLine, clock: &Clock) -> Option<String> {
    drain
        .close
        .map(|close| clock.at(clock::close_boundary(&drain.tz, close)))
}

fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}

const STYLE: &str = "
body { font: 14px/1.45 system-ui, -apple-system, 'Segoe UI', Roboto, sans-serif; margin: 24px; color: #1d2330; }
h1 { font-size: 20px; margin: 0 0 4px; }
h2 { font-size: 16px; margin: 28px 0 8px; }
p.meta, p.assume { color: #4a5366; margin: 2px 0; }
.verdicts { margin: 12px 0; padding: 8px 12px; border-radius: 6px; }
.verdicts.miss { background: #fdecec; border: 1px solid #e0a3a3; }
.verdicts.ok { background: #eaf6ea; border: 1px solid #a7cfa7; }
svg.picture { width: 100%; height: auto; max-width: 1400px; display: block; }
svg text { font: 12px system-ui, sans-serif; fill: #1d2330; }
svg text.small { font-size: 10px; fill: #4a5366; }
svg text.miss { fill: #b3261e; font-weight: 600; }
svg text.margin { fill: #1e7a34; font-weight: 600; }
svg .open { fill: #d6ecd6; }
svg .draining { fill: #f7d88f; }
svg .closed { fill: #bcbcbc; }
svg .round { fill: #3b5bdb; }
svg .curve { fill: none; stroke: #3b5bdb; stroke-width: 1.5; }
svg .start { stroke: #c77c00; stroke-width: 1.5; stroke-dasharray: 4 3; }
svg .close { stroke: #1d2330; stroke-width: 1.5; }
svg .close.missed { stroke: #b3261e; stroke-width: 2.5; }
svg .empty { fill: #1e7a34; }
svg .span-margin { stroke: #1e7a34; stroke-width: 2; }
svg .span-miss { stroke: #b3261e; stroke-width: 2; }
svg .now { stroke: #4a5366; stroke-width: 1; }
svg .grid { stroke: #e3e6ec; stroke-width: 1; }
svg .hit { fill: transparent; stroke: none; }
.legend span { display: inline-block; margin-right: 14px; }
.legend i { display: inline-block; width: 14px; height: 10px; margin-right: 4px; vertical-align: middle; }
table { border-collapse: collapse; margin: 4px 0 12px; }
th, td { text-align: left; padding: 3px 10px 3px 0; vertical-align: top; border-bottom: 1px solid #eceef2; }
th { font-weight: 600; color: #4a5366; }
td.num { text-align: right; }
td.time { white-space: nowrap; }
tr.miss td { color: #b3261e; }
";

impl Timeline {
    /// The timeline as a self-contained HTML page.
    pub fn to_html(&self) -> String {
        page(self).into_string()
    }
}

fn page(timeline: &Timeline) -> Markup {
    let clock = &timeline.clock;
    let missed: Vec<&DrainLine> = timeline.drains.iter().filter(|d| d.at_risk).collect();
    html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta http-equiv="Content-Security-Policy"
                    content="default-src 'none'; style-src 'unsafe-inline'; img-src data:";
                meta name="viewport" content="width=device-width, initial-scale=1";
                title { "tidal timeline from " (clock.instant(timeline.now)) }
                style { (PreEscaped(STYLE)) }
            }
            body {
                h1 { "tidal timeline" }
                p.meta { (render::heading(timeline)) }
                @for policy in &timeline.policies {
                    p.meta { "policy " (render::policy_text(policy)) }
                }
                (verdicts(timeline, &missed))
                (picture(timeline))
                (legend())
                (drains_table(timeline))
                (events_table(timeline))
                @if !timeline.warnings.is_empty() {
                    h2 { "Warnings" }
                    ul {
                        @for warning in &timeline.warnings { li { (clock.text(warning)) } }
                    }
                }
                h2 { "Assumptions" }
                @for line in render::assumptions(timeline).lines() {
                    p.assume { (line) }
                }
            }
        }
    }
}

/// The closes missed, named at the top; or that every close is met.
fn verdicts(timeline: &Timeline, missed: &[&DrainLine]) -> Markup {
    let clock = &timeline.clock;
    html! {
        @if !missed.is_empty() {
            div.verdicts.miss role="alert" {
                strong {
                    (missed.len()) " close" (plural(missed.len())) " missed: "
                }
                @for (index, drain) in missed.iter().enumerate() {
                    @if index > 0 { "; " }
                    (drain.zone)
                    @if let Some(close) = close_shown(drain, clock) { " (" (close) ")" }
                    ": " (drain.verdict(clock))
                }
            }
        } @else if !timeline.drains.is_empty() {
            div.verdicts.ok {
                "Every close in the span is met: " (timeline.drains.len()) " drain"
                (plural(timeline.drains.len())) "."
            }
        }
    }
}

fn picture(timeline: &Timeline) -> Markup {
    let scale = Scale {
        now: timeline.now,
        until: timeline.until,
    };
    let clock = &timeline.clock;
    let lanes = lanes(timeline);
    let outside: Vec<&Event> = timeline
        .events
        .iter()
        .filter(|e| e.zone.is_none())
        .collect();
    let has_outside = outside.iter().any(|e| e.event == EventKind::Round);
    let lane_count = lanes.len() + usize::from(has_outside);
    let height = AXIS + LANE * lane_count.max(1) as f64 + 8.0;
    let bottom = height - 8.0;
    let zone_names: Vec<&str> = lanes.iter().map(|l| l.zone.name.as_str()).collect();
    let label = format!(
        "Timeline of zones {} from {} to {}",
        zone_names.join(", "),
        clock.at(timeline.now),
        clock.at(timeline.until)
    );
    html! {
        svg.picture xmlns="http://www.w3.org/2000/svg" role="img" aria-label=(label)
            viewBox=(format!("0 0 {WIDTH} {height}")) {
            @for tick in ticks(scale, clock) {
                line.grid x1=(fixed(scale.x(tick))) x2=(fixed(scale.x(tick)))
                    y1=(fixed(AXIS - 6.0)) y2=(fixed(bottom)) {}
                text.small x=(fixed(scale.x(tick))) y=(fixed(AXIS - 12.0)) text-anchor="middle" {
                    (clock.at(tick))
                }
            }
            line.now x1=(fixed(LABELS)) x2=(fixed(LABELS)) y1=(fixed(AXIS - 6.0)) y2=(fixed(bottom)) {
                title { "now: " (clock.at(timeline.now)) }
            }
            text.small x=(fixed(LABELS)) y=(fixed(AXIS - 24.0)) text-anchor="start" { "now" }
            @if lanes.is_empty() && !has_outside {
                text x=(fixed(LABELS + 8.0)) y=(fixed(AXIS + 30.0)) { "No zone and no eviction in this span." }
            }
            @for (index, lane) in lanes.iter().enumerate() {
                (zone_lane(timeline, lane, AXIS + LANE * index as f64, scale))
            }
            @if has_outside {
                (outside_lane(&outside, AXIS + LANE * lanes.len() as f64, scale, clock))
            }
        }
    }
}

fn zone_lane(timeline: &Timeline, lane: &Lane<'_>, top: f64, scale: Scale) -> Markup {
    let clock = &timeline.clock;
    let zone = lane.zone;
    let events: Vec<&Event> = timeline
        .events
        .iter()
        .filter(|e| e.zone.as_deref() == Some(zone.name.as_str()))
        .collect();
    let band = (top + 8.0, 18.0);
    let curve_top = top + 32.0;
    let curve_height = 30.0;
    let marks_y = top + 66.0;
    let curve = remaining_curve(&events, &drain_starts(&lane.drains, scale), scale);
    let most = curve.iter().map(|(_, n)| *n).max().unwrap_or(0).max(1);
    let y_of = |pods: u32| curve_top + curve_height * (1.0 - f64::from(pods) / f64::from(most));
    let mut points = String::new();
    for (index, (at, pods)) in curve.iter().enumerate() {
        let x = fixed(scale.x(*at));
        if index > 0 {
            // A step: across at the count before, then down.
            points.push_str(&format!("{x},{} ", fixed(y_of(curve[index - 1].1))));
        }
        points.push_str(&format!("{x},{} ", fixed(y_of(*pods))));
    }
    // Past its last change the line goes on only while pods are left.
    if let Some((_, last)) = curve.last().filter(|(_, last)| *last > 0) {
        points.push_str(&format!(
            "{},{}",
            fixed(scale.x(scale.until)),
            fixed(y_of(*last))
        ));
    }
    let class = if lane.misses() {
        "zone at-risk"
    } else {
        "zone"
    };
    html! {
        g class=(class) data-zone=(zone.name) {
            title { (zone.name) ": " (zone.windows) " (" (zone.time_zone) ")" }
            text x="8" y=(fixed(top + 22.0)) { tspan font-weight="600" { (zone.name) } }
            text.small x="8" y=(fixed(top + 36.0)) { (zone.time_zone) }
            text.small x="8" y=(fixed(top + 49.0)) { "drainBefore " (zone.drain_before) }
            @if lane.misses() {
                g.at-risk-mark {
                    rect x="8" y=(fixed(top + 55.0)) width="104" height="16" rx="3" fill="#b3261e" {}
                    text x="14" y=(fixed(top + 67.0)) fill="#ffffff" style="fill:#fff;font-weight:600" { "misses a close" }
                    title { "A close of " (zone.name) " is missed in this span" }
                }
            }
            @if let Some(error) = &zone.error {
                text.miss x=(fixed(LABELS + 8.0)) y=(fixed(band.0 + 13.0)) { "windows unreadable: " (error) }
            }
            @for (index, change) in zone.phases.iter().enumerate() {
                @let end = zone.phases.get(index + 1).map_or(scale.until, |next| next.from);
                @let (x0, x1) = (scale.x(change.from), scale.x(end));
                @if x1 > x0 {
                    rect class=(phase_name(change.phase)) x=(fixed(x0)) y=(fixed(band.0))
                        width=(fixed(x1 - x0)) height=(fixed(band.1)) {
                        title {
                            (zone.name) " " (phase_name(change.phase)) " from " (clock.at(change.from.max(scale.now)))
                            " to " (clock.at(end))
                        }
                    }
                }
            }
            @if !points.is_empty() {
                polyline.curve points=(points) {
                    title { "Preemptable pods left on " (zone.name) " (at most " (most) ")" }
                }
            }
            @for mark in round_marks(events.iter().copied(), scale) {
                @let x = LABELS + (mark.column as f64 + 0.5) / COLUMNS as f64 * Scale::plot_width();
                rect.round x=(fixed(x - 1.5)) y=(fixed(marks_y)) width="3" height="8" {
                    title {
                        @if mark.rounds == 1 {
                            "round at " (clock.at(mark.first)) ": " (mark.pods) " pod" (plural(mark.pods)) " evicted"
                        } @else {
                            (mark.rounds) " rounds from " (clock.at(mark.first)) " to " (clock.at(mark.last))
                            ": " (mark.pods) " pod" (plural(mark.pods)) " evicted"
                        }
                    }
                }
            }
            @for drain in &lane.drains {
                (drain_marks(drain, top, scale, clock))
            }
        }
    }
}

/// A drain's start, expected-empty instant and close, with the margin or the miss between them.
fn drain_marks(drain: &DrainLine, top: f64, scale: Scale, clock: &Clock) -> Markup {
    let (y0, y1) = (top + 4.0, top + 74.0);
    let close = drain.close.filter(|c| scale.within(*c));
    let empty = drain.expected_empty_at.filter(|e| scale.within(*e));
    let start = drain.drain_start.filter(|s| scale.within(*s));
    let label_y = top + 30.0;
    html! {
        @if let Some(start) = start {
            @let x = scale.x(start);
            @let tip = format!(
                "{} starts draining {}: {} pods",
                drain.zone,
                drain.start_text(clock),
                drain.remaining_pods
            );
            g.start-mark {
                line.start x1=(fixed(x)) x2=(fixed(x)) y1=(fixed(y0)) y2=(fixed(y1)) { title { (tip) } }
                rect.hit x=(fixed(x - 4.0)) y=(fixed(y0)) width="8" height=(fixed(y1 - y0)) { title { (tip) } }
            }
        }
        @if let (Some(close), Some(empty)) = (close, empty) {
            @let class = if drain.at_risk { "span-miss" } else { "span-margin" };
            line class=(class) x1=(fixed(scale.x(empty))) x2=(fixed(scale.x(close)))
                y1=(fixed(top + 28.0)) y2=(fixed(top + 28.0)) {
                title { (drain.verdict(clock)) }
            }
        }
        @if let Some(empty) = empty {
            circle.empty cx=(fixed(scale.x(empty))) cy=(fixed(top + 28.0)) r="4" {
                title { (drain.zone) " expected empty " (clock.at_precisely(empty)) }
            }
        }
        @if let Some(close) = close {
            @let x = scale.x(close);
            @let class = if drain.at_risk { "close missed" } else { "close" };
            @let tip = format!(
                "{} closes {}: {}",
                drain.zone,
                close_shown(drain, clock).unwrap_or_default(),
                drain.verdict(clock)
            );
            g class=(if drain.at_risk { "close-mark missed" } else { "close-mark" }) {
                line class=(class) x1=(fixed(x)) x2=(fixed(x)) y1=(fixed(y0)) y2=(fixed(y1)) { title { (tip) } }
                rect.hit x=(fixed(x - 4.0)) y=(fixed(y0)) width="8" height=(fixed(y1 - y0)) { title { (tip) } }
            }
            @let text = if drain.at_risk {
                match drain.at_close {
                    Some(n) if n > 0 => format!("missed: {n} pod{} left", plural(n as usize)),
                    _ => "missed".to_owned(),
                }
            } else {
                format!("margin {}", drain.margin_text())
            };
            @let class = if drain.at_risk { "miss" } else { "margin" };
            @let (anchor, dx) = if x > WIDTH - 180.0 { ("end", -4.0) } else { ("start", 4.0) };
            text class=(class) x=(fixed(x + dx)) y=(fixed(label_y + 14.0)) text-anchor=(anchor) {
                (text)
                title { (drain.verdict(clock)) }
            }
        }
    }
}

fn outside_lane(events: &[&Event], top: f64, scale: Scale, clock: &Clock) -> Markup {
    html! {
        g.outside data-zone="" {
            text x="8" y=(fixed(top + 22.0)) { tspan font-weight="600" { "outside zones" } }
            text.small x="8" y=(fixed(top + 36.0)) { "other strategies" }
            @for mark in round_marks(events.iter().copied(), scale) {
                @let x = LABELS + (mark.column as f64 + 0.5) / COLUMNS as f64 * Scale::plot_width();
                rect.round x=(fixed(x - 1.5)) y=(fixed(top + 40.0)) width="3" height="16" {
                    title {
                        (mark.rounds) " cycle" (plural(mark.rounds)) " from " (clock.at(mark.first)) ": "
                        (mark.pods) " pod" (plural(mark.pods)) " evicted"
                    }
                }
            }
        }
    }
}

fn legend() -> Markup {
    html! {
        p.legend {
            span { i style="background:#d6ecd6" {} "open" }
            span { i style="background:#f7d88f" {} "draining" }
            span { i style="background:#bcbcbc" {} "closed" }
            span { i style="background:#3b5bdb" {} "rounds; the line: pods left" }
            span { i style="background:#1e7a34;border-radius:7px;width:10px" {} "expected empty, then the margin" }
            span { i style="background:#b3261e" {} "a close missed" }
            span { i style="background:repeating-linear-gradient(90deg,#c77c00 0 4px,transparent 4px 7px);height:2px" {} "drain start" }
        }
    }
}

fn drains_table(timeline: &Timeline) -> Markup {
    let clock = &timeline.clock;
    html! {
        @if !timeline.drains.is_empty() {
            h2 { "Drains" }
            table {
                thead { tr { th { "Zone" } th { "Closes" } th { "Drain start" } th { "Pods" } th { "Verdict" } th { "Fix" } } }
                tbody {
                    @for drain in &timeline.drains {
                        tr class=[drain.at_risk.then_some("miss")] {
                            td.time { (drain.zone) }
                            td.time { (close_shown(drain, clock).unwrap_or_else(|| "before now".to_owned())) }
                            td.time { (drain.start_text(clock)) }
                            td.num { (drain.remaining_pods) }
                            td { (drain.verdict(clock)) }
                            td { (drain.fix.as_deref().map(|f| clock.text(f)).unwrap_or_default()) }
                        }
                    }
                }
            }
            @for drain in timeline.drains.iter().filter(|d| !d.summary.is_empty()) {
                p.assume { (drain.zone) " estimate: " (clock.text(&drain.summary)) }
            }
        }
    }
}

fn events_table(timeline: &Timeline) -> Markup {
    let clock = &timeline.clock;
    let mut staying = BTreeSet::new();
    html! {
        h2 { "Events" }
        @if timeline.events.is_empty() {
            p { "Nothing happens in this span." }
        } @else {
            table {
                thead { tr { th { "When" } th { "In" } th { "Zone" } th { "Event" } th { "Detail" } } }
                tbody {
                    @for event in &timeline.events {
                        @for row in render::event_rows(event, false, &mut staying, clock) {
                            @let [what, _, detail] = row;
                            tr {
                                td.time { (clock.at(event.shown)) }
                                td.time { (event.relative) }
                                td { (event.zone.as_deref().unwrap_or("-")) }
                                td { (what) }
                                td { (detail) }
                            }
                        }
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use jiff::SignedDuration;
    use serde_json::json;

    use super::*;
    use crate::{
        drain::{DrainSettings, Pacing},
        testkit::{Cluster, node, pod, policy, ts, zone},
        timeline::{Move, Settings, simulate},
    };

    /// Two zones closing at 10:00 UTC, seen from 08:00 over 4 hours: `tight` drains 10 minutes ahead
    /// a job of 40 pods that lose one at a time, each a minute to terminate, and misses its close;
    /// `roomy` (auto) holds 3 pods that may all go, and makes it.
    fn two_zones_one_missing() -> Timeline {
        let window = |name: &str, lead: &str| {
            zone(name)
                .window("20:00-10:00")
                .spec(json!({"evictPeriod": "1m", "drainBefore": lead}))
        };
        let mut world = Cluster::new()
            .zone(window("tight", "10m"))
            .zone(window("roomy", "auto"))
            .node(node("plain-1"))
            .node(node("tight-1").zone("tight"))
            .node(node("roomy-1").zone("roomy"));
        world = world.pods((0..40).map(|i| {
            pod(&format!("batch/crunch-{i}"), "tight-1")
                .owned_by("ReplicaSet", "crunch")
                .annotation("volcano.sh/jdb-max-unavailable", "1")
                .spec("terminationGracePeriodSeconds", json!(60))
                .preemptable()
        }));
        world = world.pods((0..3).map(|i| {
            pod(&format!("batch/tidy-{i}"), "roomy-1")
                .owned_by("ReplicaSet", "tidy")
                .annotation("volcano.sh/jdb-max-unavailable", "100%")
                .preemptable()
        }));
        let tdm = policy(json!({"mode": "Evict", "strategies": {"tdm": {}}}));
        let settings = Settings::new(DrainSettings::new(Pacing {
            qps: 20.0,
            burst: 40,
            concurrency: 8,
            request: Pacing::ASSUMED_REQUEST,
        }));
        simulate(
            &mut world.cache,
            &[&tdm],
            ts("2026-11-23T08:00:00Z"),
            SignedDuration::from_hours(4),
            &settings,
        )
    }

    #[test]
    fn the_page_draws_every_zone_the_missed_close_first_and_fetches_nothing() {
        let timeline = two_zones_one_missing();
        let tight = timeline.drains.iter().find(|d| d.zone == "tight").unwrap();
        assert!(tight.at_risk, "{tight:?}");
        let page = timeline.to_html();
        assert!(page.starts_with("<!DOCTYPE html>"));
        let tight_lane = page.find(r#"<g class="zone at-risk" data-zone="tight">"#);
        let roomy_lane = page.find(r#"<g class="zone" data-zone="roomy">"#);
        assert!(
            tight_lane.is_some() && roomy_lane.is_some() && tight_lane < roomy_lane,
            "lanes out of order:\n{page}"
        );
        assert!(page.contains("1 close missed: "), "{page}");
        assert!(page.contains("missed: "), "{page}");
        assert!(page.contains(">margin 45s<"), "{page}");
        // Nothing to fetch: no source, link or stylesheet import; the only address is SVG's namespace.
        for fetching in ["src=", "href=", "url(", "@import", "<script", "<link"] {
            assert!(!page.contains(fetching), "{fetching} in the page");
        }
        assert_eq!(page.matches("://").count(), 1, "{page}");
        assert!(page.contains(r#"xmlns="http://www.w3.org/2000/svg""#));
        assert!(page.contains("default-src 'none'"));
        // Every mark says what it is when hovered.
        let svg = &page[page.find("<svg").unwrap()..page.find("</svg>").unwrap()];
        for mark in ["<rect", "<line", "<circle", "<polyline"] {
            for piece in svg.split(mark).skip(1) {
                let element = &piece[..piece.find('>').unwrap()];
                if element.contains("class=\"grid\"") || element.contains("fill=\"#b3261e\"") {
                    continue;
                }
                let body = &piece[piece.find('>').unwrap()..];
                assert!(
                    body.trim_start_matches('>').starts_with("<title>"),
                    "{mark}{element}> says nothing when hovered"
                );
            }
        }
    }

    fn round(at: Timestamp, pods: usize) -> Event {
        let mut event = Event::new(at, at, Some("rz".into()), EventKind::Round);
        event.evictions = (0..pods)
            .map(|i| Move {
                namespace: "batch".into(),
                name: format!("p-{i}"),
                node: None,
                job: "ReplicaSet batch/j".into(),
                policy: "p".into(),
                strategy: "tdm".into(),
                reason: String::new(),
                gang: None,
                sent_at: Some(at),
                gone_at: Some(at + SignedDuration::from_secs(30)),
            })
            .collect();
        event
    }

    /// A week of a round a minute, 15 pods each (151,200 evictions): the picture gathers them into
    /// at most one mark and one step per column, and loses no pod in the count.
    #[test]
    fn a_week_of_rounds_draws_at_most_a_mark_per_column() {
        let now = ts("2026-11-23T08:00:00Z");
        let scale = Scale {
            now,
            until: now + SignedDuration::from_hours(7 * 24),
        };
        let events: Vec<Event> = (0..7 * 24 * 60)
            .map(|minute| round(now + SignedDuration::from_mins(minute), 15))
            .collect();
        let marks = round_marks(events.iter(), scale);
        assert!(marks.len() <= COLUMNS, "{} marks", marks.len());
        assert_eq!(marks.iter().map(|m| m.rounds).sum::<usize>(), 10_080);
        assert_eq!(marks.iter().map(|m| m.pods).sum::<usize>(), 151_200);

        let refs: Vec<&Event> = events.iter().collect();
        let curve = remaining_curve(&refs, &[(now, 151_200)], scale);
        assert!(curve.len() <= COLUMNS + 1, "{} steps", curve.len());
        assert_eq!(curve.first(), Some(&(now, 151_200)));
        assert_eq!(curve.last().map(|(_, left)| *left), Some(0));
        assert!(
            curve
                .windows(2)
                .all(|w| w[0].1 >= w[1].1 && w[0].0 < w[1].0)
        );
    }

    #[test]
    fn axis_ticks_fall_on_whole_hours_of_the_shown_time_zone() {
        let now = ts("2026-11-23T08:20:00Z");
        let berlin = jiff::tz::TimeZone::get("Europe/Berlin").unwrap();
        let clock = Clock::new(berlin, now);
        let day = Scale {
            now,
            until: now + SignedDuration::from_hours(24),
        };
        let shown: Vec<String> = ticks(day, &clock).iter().map(|t| clock.at(*t)).collect();
        assert_eq!(shown.first().map(String::as_str), Some("Mon 10:00"));
        assert_eq!(shown.len(), 12, "{shown:?}");
        let week = Scale {
            now,
            until: now + SignedDuration::from_hours(7 * 24),
        };
        let days = ticks(week, &clock);
        assert_eq!(days.len(), 7);
        assert!(days.iter().all(|t| clock.at(*t).ends_with("00:00")));
    }
}
