//! The placement rules for revocable nodes, as pure functions of plain data:
//!
//! 1. a non-preemptable pod is never bound to a revocable node (one labelled `volcano.sh/revocable-zone`);
//! 2. a preemptable pod is bound to a revocable node only while that node's zone is open;
//! 3. preemptable pods prefer revocable nodes (see `mutate`).
//!
//! They agree with the TDM strategy's notion of a placement violation, so that what admission lets
//! through is exactly what the controller's sweep leaves alone.

use jiff::Timestamp;

pub(crate) use crate::cluster::rules::placement::{Preemptable, is_exempt, preemptable};
use crate::{
    api::labels,
    cluster::{
        NodeInfo, PodGroupInfo, PodInfo, ZoneInfo,
        rules::placement::{Refused, revocable_rule},
    },
};

/// The pod's own `volcano.sh/preemptable` says nothing, so its PodGroup (if it names one) decides.
pub(crate) fn needs_podgroup(pod: &PodInfo) -> bool {
    !pod.preemptable.is_set() && pod.group_name.is_some()
}

/// An admission answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    Allow { warnings: Vec<String> },
    Deny(String),
}

impl Verdict {
    pub fn allow() -> Verdict {
        Verdict::Allow {
            warnings: Vec::new(),
        }
    }

    pub fn allow_with(warning: impl Into<String>) -> Verdict {
        Verdict::Allow {
            warnings: vec![warning.into()],
        }
    }

    pub fn is_allowed(&self) -> bool {
        matches!(self, Verdict::Allow { .. })
    }
}

/// May `pod` be bound to `node` at `now`? `zone` is the RevocableZone named by the node's label, if
/// one exists; `group` the pod's PodGroup, if it names one that exists.
pub fn check_binding(
    pod: &PodInfo,
    group: Option<&PodGroupInfo>,
    node: &NodeInfo,
    zone: Option<&ZoneInfo>,
    now: Timestamp,
) -> Verdict {
    let pod_key = &pod.key;
    let node_name = &node.name;
    let zone_name = node.revocable_zone.as_deref().unwrap_or_default();
    let zone_name = match revocable_rule(pod, &preemptable(pod, group), node) {
        Ok(None) => return Verdict::allow(),
        Ok(Some(zone)) => zone,
        Err(Refused::NotPreemptable) => {
            return Verdict::Deny(format!(
                "tidal: pod {pod_key} is not preemptable and may not run on node {node_name} of revocable zone \
                 {zone_name}; label or annotate it (or its PodGroup) {}: \"true\" to allow it there",
                labels::PREEMPTABLE
            ));
        }
        Err(Refused::Unreadable(invalid)) => {
            return Verdict::Deny(format!(
                "tidal: {invalid}; tidal cannot tell whether pod {pod_key} is preemptable, so it may not run \
                 on node {node_name} of revocable zone {zone_name}"
            ));
        }
        Err(Refused::OtherZone(opted)) => {
            return Verdict::Deny(format!(
                "tidal: pod {pod_key} is annotated {}={opted} but node {node_name} is in revocable zone {zone_name}",
                labels::REVOCABLE_ZONE
            ));
        }
    };
    let Some(zone) = zone else {
        return Verdict::allow_with(format!(
            "tidal: node {node_name} is labelled {}={zone_name} but there is no RevocableZone {zone_name}, \
             so tidal does not manage it",
            labels::REVOCABLE_ZONE
        ));
    };
    let schedule = match &zone.schedule {
        Ok(schedule) => schedule,
        Err(error) => {
            return Verdict::allow_with(format!(
                "tidal: the windows of RevocableZone {zone_name} cannot be read ({error}); placement not checked"
            ));
        }
    };
    let Ok(state) = zone.state_at(now) else {
        return Verdict::allow();
    };
    if !state.evicting() {
        return Verdict::allow();
    }
    // The boundary as the operator wrote it (`06:00`), not the first closed second (`06:00:01`).
    let next = state.next_change.map_or_else(
        || "never".to_owned(),
        |t| schedule.shown_change(t).to_string(),
    );
    let why = if state.open {
        // Draining: TDM is already evicting this zone's pods, so a pod placed now would be evicted at once.
        format!(
            "closes at {next} and is draining (drainBefore {})",
            zone.spec.drain_before
        )
    } else {
        format!("is closed until {next}")
    };
    Verdict::Deny(format!(
        "tidal: revocable zone {zone_name} {why}; pod {pod_key} may not be bound to its node {node_name}"
    ))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::{cluster::Setting, testkit as kit};

    /// A bare, unscheduled pod `ns/p`: placement reads only its labels and annotations.
    fn unscheduled_pod(labels: serde_json::Value, annotations: serde_json::Value) -> PodInfo {
        kit::pod("ns/p", "")
            .bare()
            .patch(json!({"metadata": {"labels": labels, "annotations": annotations}}))
            .build()
    }

    /// Node `n1`, in revocable zone `zone` if given.
    fn node_in(zone: Option<&str>) -> NodeInfo {
        let node = kit::node("n1");
        match zone {
            Some(zone) => node.zone(zone),
            None => node,
        }
        .build()
    }

    /// Zone `z1`, open in `windows` (UTC), draining `drain` before each close.
    fn zone_z1(windows: &[&str], drain: &str) -> ZoneInfo {
        windows
            .iter()
            .fold(kit::zone("z1"), |zone, window| zone.window(window))
            .spec(json!({"drainBefore": drain}))
            .build()
    }

    fn at(hhmm: &str) -> Timestamp {
        format!("2026-03-04T{hhmm}:00Z").parse().unwrap()
    }

    fn preemptable_pod() -> PodInfo {
        unscheduled_pod(json!({}), json!({"volcano.sh/preemptable": "true"}))
    }

    #[test]
    fn preemptable_comes_from_the_pod_then_its_podgroup_and_defaults_to_no() {
        let group = |value: &str| PodGroupInfo {
            key: crate::cluster::ObjectKey::new("ns", "g"),
            preemptable: Setting::Valid(value == "true"),
            budget: Setting::Unset,
            min_member: None,
            expected_run_time: Setting::Unset,
        };
        assert_eq!(
            preemptable(&unscheduled_pod(json!({}), json!({})), None),
            Preemptable::No
        );
        assert_eq!(
            preemptable(&unscheduled_pod(json!({}), json!({})), Some(&group("true"))),
            Preemptable::Yes
        );
        // The pod's own label beats its group.
        assert_eq!(
            preemptable(
                &unscheduled_pod(json!({"volcano.sh/preemptable": "false"}), json!({})),
                Some(&group("true"))
            ),
            Preemptable::No
        );
        assert!(matches!(
            preemptable(
                &unscheduled_pod(json!({}), json!({"volcano.sh/preemptable": "yes"})),
                None
            ),
            Preemptable::Unreadable(_)
        ));
    }

    #[test]
    fn ordinary_nodes_take_anything() {
        let verdict = check_binding(
            &unscheduled_pod(json!({}), json!({})),
            None,
            &node_in(None),
            None,
            at("12:00"),
        );
        assert_eq!(verdict, Verdict::allow());
    }

    #[test]
    fn rule_1_non_preemptable_pods_stay_off_revocable_nodes() {
        let z = zone_z1(&["08:00-21:00"], "0s");
        let verdict = check_binding(
            &unscheduled_pod(json!({}), json!({})),
            None,
            &node_in(Some("z1")),
            Some(&z),
            at("12:00"),
        );
        let Verdict::Deny(message) = verdict else {
            panic!("expected a denial")
        };
        assert!(message.contains("ns/p is not preemptable"), "{message}");
        assert!(
            message.contains("node n1 of revocable zone z1"),
            "{message}"
        );
        // Also when no RevocableZone exists: the rule is about the node label.
        assert!(
            !check_binding(
                &unscheduled_pod(json!({}), json!({})),
                None,
                &node_in(Some("z1")),
                None,
                at("12:00")
            )
            .is_allowed()
        );
    }

    #[test]
    fn rule_2_preemptable_pods_only_while_the_zone_is_open() {
        let z = zone_z1(&["08:00-21:00"], "0s");
        let open = check_binding(
            &preemptable_pod(),
            None,
            &node_in(Some("z1")),
            Some(&z),
            at("12:00"),
        );
        assert_eq!(open, Verdict::allow());
        let Verdict::Deny(message) = check_binding(
            &preemptable_pod(),
            None,
            &node_in(Some("z1")),
            Some(&z),
            at("22:00"),
        ) else {
            panic!("closed zone must deny")
        };
        assert!(
            message.contains("zone z1 is closed until 2026-03-05T08:00:00Z"),
            "{message}"
        );
    }

    #[test]
    fn a_draining_zone_takes_no_new_pods() {
        let z = zone_z1(&["08:00-21:00"], "1h");
        let Verdict::Deny(message) = check_binding(
            &preemptable_pod(),
            None,
            &node_in(Some("z1")),
            Some(&z),
            at("20:30"),
        ) else {
            panic!("draining zone must deny")
        };
        assert!(
            message.contains("draining (drainBefore 1h0m0s)"),
            "{message}"
        );
        // The close as written in the window, not the first closed second.
        assert!(
            message.contains("closes at 2026-03-04T21:00:00Z"),
            "{message}"
        );
        assert!(
            check_binding(
                &preemptable_pod(),
                None,
                &node_in(Some("z1")),
                Some(&z),
                at("19:30")
            )
            .is_allowed()
        );
    }

    #[test]
    fn zone_opt_in_must_match_the_node_zone() {
        let z = zone_z1(&["00:00-00:00"], "0s");
        let opted = |value: &str| {
            unscheduled_pod(
                json!({}),
                json!({"volcano.sh/preemptable": "true", "volcano.sh/revocable-zone": value}),
            )
        };
        let n = node_in(Some("z1"));
        assert!(check_binding(&opted("*"), None, &n, Some(&z), at("12:00")).is_allowed());
        assert!(check_binding(&opted("z1"), None, &n, Some(&z), at("12:00")).is_allowed());
        let Verdict::Deny(message) = check_binding(&opted("z2"), None, &n, Some(&z), at("12:00"))
        else {
            panic!("other zone must deny")
        };
        assert!(
            message.contains("volcano.sh/revocable-zone=z2"),
            "{message}"
        );
    }

    #[test]
    fn unreadable_preemptable_is_denied_with_key_and_value() {
        let z = zone_z1(&["00:00-00:00"], "0s");
        let bad = unscheduled_pod(json!({}), json!({"volcano.sh/preemptable": "maybe"}));
        let Verdict::Deny(message) =
            check_binding(&bad, None, &node_in(Some("z1")), Some(&z), at("12:00"))
        else {
            panic!("unreadable must deny")
        };
        assert!(
            message.contains("volcano.sh/preemptable=\"maybe\""),
            "{message}"
        );
    }

    #[test]
    fn unmanaged_or_unreadable_zones_allow_with_a_warning() {
        let Verdict::Allow { warnings } = check_binding(
            &preemptable_pod(),
            None,
            &node_in(Some("z1")),
            None,
            at("12:00"),
        ) else {
            panic!("unknown zone allows")
        };
        assert!(warnings[0].contains("no RevocableZone z1"));
        let mut broken = zone_z1(&["08:00-21:00"], "0s");
        broken.schedule = Err("unknown time zone".to_owned());
        let Verdict::Allow { warnings } = check_binding(
            &preemptable_pod(),
            None,
            &node_in(Some("z1")),
            Some(&broken),
            at("12:00"),
        ) else {
            panic!("unreadable zone allows")
        };
        assert!(warnings[0].contains("cannot be read"));
    }

    #[test]
    fn daemonset_pods_are_exempt() {
        let ds = kit::pod("ns/agent", "")
            .owned_by("DaemonSet", "agent")
            .build();
        let z = zone_z1(&["08:00-21:00"], "0s");
        assert!(check_binding(&ds, None, &node_in(Some("z1")), Some(&z), at("23:00")).is_allowed());
    }
}
