//! What a drain estimate rests on and, when a close will be missed, what would make it: in sentences
//! an operator acts on.

use std::collections::BTreeMap;

use jiff::SignedDuration;

use super::{
    model::{Bound, STAYS_BUDGET, STAYS_LIMIT, STAYS_NO_ROOM, ZoneDrain},
    outlook::ZoneOutlook,
    settings::DrainSettings,
};
use crate::{api::DrainBefore, cluster::ZoneInfo};

/// `21m 4s`: a duration to the second, for people.
pub fn human(duration: SignedDuration) -> String {
    let seconds = duration.as_secs().unsigned_abs();
    let rounded = std::time::Duration::from_secs(if seconds == 0 { 0 } else { seconds });
    let text = humantime::format_duration(rounded).to_string();
    if duration.is_negative() {
        format!("-{text}")
    } else {
        text
    }
}

/// How an `auto` drain's start was chosen, said when it starts: what the drain needs given the other
/// drains in the queue (and alone, when they lengthen it), the lead that asks for, and the lead it got.
pub fn start_text(outlook: &ZoneOutlook, settings: &DrainSettings) -> String {
    let got = match (outlook.close, outlook.drain_start) {
        (Some(close), Some(start)) => format!(
            "started {} before the close",
            human(close.duration_since(start.max(outlook.estimate.first_round)))
        ),
        _ => "started".to_owned(),
    };
    let Some(lead) = outlook.lead.as_ref().filter(|_| outlook.remaining > 0) else {
        return format!("drainBefore auto: nothing left to drain; {got}");
    };
    let (needs, wanted) = match &lead.later {
        // A later start would have shared the queue: that is what set the start.
        Some(later) => (
            format!(
                "{} when the evictions of {} share the queue ({} started this early)",
                human(later.needs),
                names(&later.shared_with, "zone", "zones"),
                human(lead.needs)
            ),
            settings.lead_for(later.needs),
        ),
        None if !lead.shared_with.is_empty() && lead.needs > lead.alone => (
            format!(
                "{} ({} alone; the evictions of {} share the queue)",
                human(lead.needs),
                human(lead.alone),
                names(&lead.shared_with, "zone", "zones")
            ),
            settings.lead_for(lead.needs),
        ),
        None => (human(lead.needs), settings.lead_for(lead.needs)),
    };
    let over_max = match outlook.capped_lead {
        Some(_) => ", more than maxDrainBefore",
        None => "",
    };
    format!(
        "drainBefore auto: the drain needs {needs}; {} times that and {} is {}{over_max}: {got}",
        settings.margin,
        human(settings.slack),
        human(wanted)
    )
}

/// `zone za`, `zones za and zb`, `zones za, zb and zc`.
fn names(items: &[String], one: &str, many: &str) -> String {
    match items {
        [] => String::new(),
        [only] => format!("{one} {only}"),
        [rest @ .., last] => format!("{many} {} and {last}", rest.join(", ")),
    }
}

/// The typical termination the estimate assumed for the zone's pods: the longest of them.
fn longest_termination(drain: &ZoneDrain) -> SignedDuration {
    drain
        .jobs
        .iter()
        .flat_map(|j| j.pods.iter().map(|p| p.terminates_in))
        .max()
        .unwrap_or(SignedDuration::ZERO)
}

/// One line: how much there is to do, how long it takes, what bounds it and what it assumed.
pub fn summary(outlook: &ZoneOutlook, drain: &ZoneDrain, settings: &DrainSettings) -> String {
    let estimate = &outlook.estimate;
    let pacing = settings.pacing;
    let mut parts = Vec::new();
    if estimate.pods == 0 && outlook.remaining == 0 {
        parts.push("no preemptable pods".to_owned());
    } else if estimate.pods == 0 && estimate.ending > 0 {
        parts.push("nothing to evict".to_owned());
    } else if estimate.rounds.is_empty() && estimate.done_at.is_none() {
        parts.push(format!(
            "{}, no round can take any",
            count(estimate.pods, "pod", "pods"),
        ));
    } else {
        parts.push(format!(
            "{} in {}, {}, {} ({})",
            count(estimate.pods, "pod", "pods"),
            count(estimate.jobs, "job", "jobs"),
            count(
                u32::try_from(estimate.rounds.len()).unwrap_or(u32::MAX),
                "round",
                "rounds"
            ),
            human(estimate.duration()),
            bound_text(&estimate.bound),
        ));
    }
    if estimate.ending > 0 {
        parts.push(format!(
            "{} left to finish, ending by {} before the close",
            count(estimate.ending, "pod", "pods"),
            if estimate.ending == 1 {
                "itself"
            } else {
                "themselves"
            },
        ));
    }
    if let Some(gangs) = gangs_text(drain) {
        parts.push(gangs);
    }
    let stays = estimate.stays_total();
    if stays > 0 {
        parts.push(format!("{stays} stay ({})", reasons(&estimate.stays)));
    }
    if estimate.pods > 0 {
        parts.push(format!(
            "assumes {:.0} evictions/s (qps {}, burst {}, {} at a time) and pods gone {} after \
             eviction",
            pacing.rate(),
            pacing.qps,
            pacing.burst,
            pacing.concurrency,
            human(longest_termination(drain)),
        ));
    }
    parts.join("; ")
}

/// `1 gang taken whole, each in one round: PodGroup ml/train (gang of 8 (minMember 6))`, when the
/// drain takes any whole.
fn gangs_text(drain: &ZoneDrain) -> Option<String> {
    let gangs: Vec<String> = drain
        .jobs
        .iter()
        .filter_map(|job| Some(format!("{} ({})", job.job, job.gang?)))
        .collect();
    if gangs.is_empty() {
        return None;
    }
    // A few by name: the line is a zone's status, not a list of its jobs.
    const NAMED: usize = 3;
    let mut named = gangs[..gangs.len().min(NAMED)].join(", ");
    if gangs.len() > NAMED {
        named.push_str(&format!(" and {} more", gangs.len() - NAMED));
    }
    Some(format!(
        "{} taken whole, each in one round: {named}",
        count(
            u32::try_from(gangs.len()).unwrap_or(u32::MAX),
            "gang",
            "gangs"
        ),
    ))
}

/// What would let the pods that stay go, one sentence per reason.
fn stays_fixes(stays: &BTreeMap<String, u32>) -> Vec<String> {
    let mut fixes = Vec::new();
    let mut other = BTreeMap::new();
    for (why, &n) in stays {
        match why.as_str() {
            STAYS_NO_ROOM => fixes.push(format!(
                "{n} preemptable pods wait for their jobs' evicted pods, whose replacements have no \
                 node to run on outside the closing zones and stay Pending: add schedulable nodes \
                 outside revocable zones, let the jobs lose more pods at once \
                 (volcano.sh/jdb-max-unavailable), or set the zone's budgetsAfterClose: Ignore"
            )),
            STAYS_BUDGET => fixes.push(format!(
                "{n} preemptable pods are held by budgets that never allow an eviction \
                 (volcano.sh/jdb-min-available as large as the job, or jdb-max-unavailable 0): lower \
                 them, or set the zone's budgetsAfterClose: Ignore"
            )),
            STAYS_LIMIT => fixes.push(format!(
                "{n} preemptable pods are held by the policy's limits, which allow no eviction: \
                 raise spec.limits"
            )),
            _ => {
                other.insert(why.clone(), n);
            }
        }
    }
    if !other.is_empty() {
        fixes.push(format!(
            "{} preemptable pods are never evicted ({}): change the policy's protections or the \
             pods' settings",
            other.values().sum::<u32>(),
            reasons(&other)
        ));
    }
    fixes
}

fn count(n: u32, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

fn bound_text(bound: &Bound) -> String {
    match bound {
        Bound::Nothing => "nothing to wait for".to_owned(),
        Bound::Rate => "bounded by the eviction rate".to_owned(),
        Bound::Budget { job, .. } => format!("bounded by the budget of job {job}"),
        Bound::Cooldown => "bounded by cooldowns".to_owned(),
        Bound::Notice { notice } => format!("bounded by the {} of notice pods get", human(*notice)),
        Bound::PodEnds { last } => {
            format!("bounded by pods left to finish, ending by {last}")
        }
    }
}

fn reasons(stays: &BTreeMap<String, u32>) -> String {
    stays
        .iter()
        .map(|(why, n)| format!("{n} {why}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// What would get the zone empty by its close.
pub fn fix(
    outlook: &ZoneOutlook,
    drain: &ZoneDrain,
    zone: &ZoneInfo,
    settings: &DrainSettings,
) -> String {
    let estimate = &outlook.estimate;
    let mut fixes = Vec::new();
    let stays = estimate.stays_total();
    if stays > 0 {
        fixes.extend(stays_fixes(&estimate.stays));
    }
    let Some(close) = outlook.close else {
        // Closed: what stays is said above; otherwise the pods leave round by round.
        if outlook.remaining > 0 && fixes.is_empty() {
            let left = count(outlook.remaining, "preemptable pod", "preemptable pods");
            fixes.push(match estimate.empty_at() {
                Some(empty) => format!(
                    "the zone closed with {left} still on it; they leave round by round, the last \
                     expected gone at {empty}"
                ),
                None => format!("the zone closed with {left} still on it"),
            });
        }
        return fixes.join("; ");
    };
    let needed = settings.lead_for(estimate.duration());
    let lead_text = human(needed);
    match outlook.drain_before {
        DrainBefore::Fixed(lead) if lead.to_signed() < needed => fixes.push(format!(
            "drainBefore {lead} is shorter than the {} the drain needs: set drainBefore: auto, or at \
             least {lead_text}",
            human(estimate.duration())
        )),
        DrainBefore::Auto => {
            if let Some(wanted) = outlook.capped_lead {
                fixes.push(format!(
                    "an auto drain needs {} but maxDrainBefore is {}: raise maxDrainBefore to at \
                     least {}",
                    human(wanted),
                    zone.spec.max_drain_before,
                    human(wanted)
                ));
            }
        }
        DrainBefore::Fixed(_) => {}
    }
    let started = outlook.drain_start.unwrap_or(drain.first_round);
    let available = close
        .duration_since(started.max(drain.first_round))
        .saturating_sub(longest_termination(drain));
    match &estimate.bound {
        Bound::Rate => {
            let secs = available.as_secs_f64().max(1.0);
            let qps = (f64::from(estimate.pods) / secs).ceil().max(1.0);
            if qps > settings.pacing.qps {
                fixes.push(format!(
                    "or raise --eviction-qps to at least {qps:.0} (now {}; {} evictions in {})",
                    settings.pacing.qps,
                    estimate.pods,
                    human(available)
                ));
            }
        }
        Bound::Budget { job, pods, rounds } => {
            fixes.push(format!(
                "job {job} needs {rounds} rounds for its {pods} pods on the zone (evictPeriod {}, and \
                 each evicted pod holds its budget until it has terminated): let it lose more pods at \
                 once (volcano.sh/jdb-max-unavailable), or start earlier",
                zone.spec.evict_period
            ));
        }
        Bound::Cooldown => fixes.push(
            "pods in their cooldown (volcano.sh/cooldown-time) cannot go before it ends: shorten \
             the cooldown or start earlier"
                .to_owned(),
        ),
        Bound::Notice { notice } => fixes.push(format!(
            "pods not yet told are evicted {} after they are (evictionNotice): shorten \
             spec.evictionNotice or start the drain earlier, so that they are told in time",
            human(*notice)
        )),
        // They end before the close by the rule that left them: never what a miss is made of.
        Bound::Nothing | Bound::PodEnds { .. } => {}
    }
    if fixes.is_empty() {
        fixes.push(format!(
            "start the drain at least {lead_text} before the close"
        ));
    }
    fixes.join("; ")
}
