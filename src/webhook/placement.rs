//! The placement rules for revocable nodes, as pure functions of plain data:
//!
//! 1. a non-preemptable pod is never bound to a revocable node (one labelled `volcano.sh/revocable-zone`);
//! 2. a preemptable pod is bound to a revocable node only while that node's zone is open;
//! 3. preemptable pods prefer revocable nodes (see `mutate`);
//! 4. a preemptable pod that says how long it runs (`activeDeadlineSeconds`,
//!    `tidal.dev/expected-run-time`) is kept off a zone that closes before it could finish there, by
//!    the rule the drain uses to let a pod finish (`crate::cluster::finishes_before`).
//!
//! They agree with the TDM strategy's notion of a placement violation, so that what admission lets
//! through is exactly what the controller's sweep leaves alone.

use jiff::Timestamp;

pub(crate) use crate::cluster::rules::placement::{
    ClosesFirst, Preemptable, is_exempt, preemptable, zones_closing_first,
};
use crate::{
    api::labels,
    cluster::{
        NodeInfo, PodGroupInfo, PodInfo, Setting, ZoneInfo,
        rules::placement::{Refused, revocable_rule},
    },
};

/// The pod names a PodGroup that says what the pod itself does not: whether it is preemptable (the
/// pod's own `volcano.sh/preemptable` says nothing), or, for a pod preemptable by its own word, how
/// long it runs (it declares no `tidal.dev/expected-run-time` of its own).
pub(crate) fn needs_podgroup(pod: &PodInfo) -> bool {
    pod.group_name.is_some() && (!pod.preemptable.is_set() || needs_podgroup_run_time_only(pod))
}

/// The pod says for itself that it is preemptable: its PodGroup is read only for its run time, so a
/// missing group leaves the pod's own rules to apply, without that declaration.
pub(crate) fn needs_podgroup_run_time_only(pod: &PodInfo) -> bool {
    pod.group_name.is_some()
        && pod.preemptable == Setting::Valid(true)
        && !pod.expected_run_time().is_set()
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
        return match zones_closing_first(pod, group, [zone], now) {
            Ok(closing) => match closing.first() {
                None => Verdict::allow(),
                Some(closes) => Verdict::Deny(format!(
                    "tidal: pod {pod_key} {closes}; it may not be bound to node {node_name}"
                )),
            },
            // Gate `invalid` never evicts a pod whose declaration cannot be read, so the zone's
            // drain could not empty the zone of it: it is kept off, as an unreadable
            // `volcano.sh/preemptable` is.
            Err(invalid) => Verdict::Deny(format!(
                "tidal: {invalid}; tidal cannot tell when pod {pod_key} ends and would never evict it, \
                 so it may not run on node {node_name} of revocable zone {zone_name}"
            )),
        };
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
    fn rule_4_a_pod_that_needs_longer_than_the_zone_has_left_is_denied() {
        let z = zone_z1(&["08:00-21:00"], "0s");
        let runs = |run_time: &str| {
            unscheduled_pod(
                json!({}),
                json!({"volcano.sh/preemptable": "true", "tidal.dev/expected-run-time": run_time}),
            )
        };
        let bind =
            |pod: &PodInfo| check_binding(pod, None, &node_in(Some("z1")), Some(&z), at("19:30"));
        let Verdict::Deny(message) = bind(&runs("3h")) else {
            panic!("a pod that runs past the close must be denied")
        };
        for says in [
            "pod ns/p needs 3h0m0s (expected-run-time 3h0m0s)",
            "revocable zone z1 closes at 2026-03-04T21:00:00Z, 1h30m0s from now",
            "at least 2m0s before its close",
            "may not be bound to node n1",
        ] {
            assert!(message.contains(says), "{says:?} in {message}");
        }
        // Ends at 20:30, half an hour before the close: the drain would let it finish.
        assert_eq!(bind(&runs("1h")), Verdict::allow());
        // The group's declaration counts for a pod that makes none.
        let group = PodGroupInfo {
            key: crate::cluster::ObjectKey::new("ns", "g"),
            preemptable: Setting::Unset,
            budget: Setting::Unset,
            min_member: None,
            expected_run_time: Setting::Valid("4h".parse().unwrap()),
        };
        let member = unscheduled_pod(
            json!({}),
            json!({"volcano.sh/preemptable": "true", "scheduling.k8s.io/group-name": "g"}),
        );
        assert!(
            !check_binding(
                &member,
                Some(&group),
                &node_in(Some("z1")),
                Some(&z),
                at("19:30")
            )
            .is_allowed()
        );
        // The rule is about revocable zones only.
        assert_eq!(
            check_binding(&runs("3h"), None, &node_in(None), None, at("19:30")),
            Verdict::allow()
        );
    }

    /// The controller never evicts a pod whose run time cannot be read (gate `invalid`), so a zone's
    /// drain could not empty the zone of it: it is denied, never taken as saying nothing.
    #[test]
    fn an_unreadable_run_time_is_denied_on_revocable_nodes() {
        let z = zone_z1(&["08:00-21:00"], "0s");
        let pod = unscheduled_pod(
            json!({}),
            json!({"volcano.sh/preemptable": "true", "tidal.dev/expected-run-time": "overnight"}),
        );
        let Verdict::Deny(message) =
            check_binding(&pod, None, &node_in(Some("z1")), Some(&z), at("12:00"))
        else {
            panic!("an unreadable run time must be denied")
        };
        assert!(
            message.contains("tidal.dev/expected-run-time") && message.contains("overnight"),
            "{message}"
        );
        assert!(
            message.contains("cannot tell when pod ns/p ends"),
            "{message}"
        );
        assert!(check_binding(&pod, None, &node_in(None), None, at("12:00")).is_allowed());
    }

    #[test]
    fn the_podgroup_is_needed_for_a_run_time_only_when_the_pod_is_preemptable_and_declares_none() {
        let pod = |annotations: serde_json::Value| unscheduled_pod(json!({}), annotations);
        let in_group = |extra: serde_json::Value| {
            let mut annotations = json!({"scheduling.k8s.io/group-name": "g"});
            annotations
                .as_object_mut()
                .unwrap()
                .extend(extra.as_object().unwrap().clone());
            pod(annotations)
        };
        assert!(needs_podgroup(&in_group(json!({}))));
        let own = in_group(json!({"volcano.sh/preemptable": "true"}));
        assert!(needs_podgroup(&own) && needs_podgroup_run_time_only(&own));
        let declares = in_group(
            json!({"volcano.sh/preemptable": "true", "tidal.dev/expected-run-time": "1h"}),
        );
        assert!(!needs_podgroup(&declares));
        assert!(!needs_podgroup(&in_group(
            json!({"volcano.sh/preemptable": "false"})
        )));
        assert!(!needs_podgroup(&pod(
            json!({"volcano.sh/preemptable": "true"})
        )));
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
