//! The parts of a pod's status that strategies filter on: its reason, conditions and container states.
//!
//! Kept lean because every cached pod has one: conditions are kept whole (filters may name any type,
//! status or reason), but a container is kept only if it says something a filter reads (restarts, a
//! waiting reason, a termination), and those and the status reason, which most pods lack, live in one
//! boxed part.

use std::{ops::Deref, sync::Arc};

use jiff::Timestamp;
use k8s_openapi::api::core::v1::{ContainerStatus, PodStatus};

use crate::cluster::model::keys::{Interner, Name};

#[derive(Clone, Debug, Default, PartialEq)]
pub struct PodStatusSummary {
    pub conditions: Box<[ConditionInfo]>,
    /// `None` when there is no reason and no container worth reading.
    notable: Option<Box<Notable>>,
}

#[derive(Clone, Debug, Default, PartialEq)]
struct Notable {
    reason: Option<Name>,
    containers: Vec<ContainerInfo>,
    init_containers: Vec<ContainerInfo>,
    ephemeral_containers: Vec<ContainerInfo>,
}

/// A pod condition. Reads as its type, status and reason (`condition.type_`, ...) and its time.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ConditionInfo {
    /// Shared with every pod reporting the same type, status and reason (the cache interns it): a
    /// pod pays a pointer for them and keeps only its own time.
    state: Arc<ConditionState>,
    pub last_transition: Option<Timestamp>,
}

/// What a condition says, apart from since when.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct ConditionState {
    pub type_: Name,
    pub status: Name,
    pub reason: Option<Name>,
}

// A condition reads as what it says: filters name its type, status and reason as fields.
impl Deref for ConditionInfo {
    type Target = ConditionState;
    fn deref(&self) -> &ConditionState {
        &self.state
    }
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct ContainerInfo {
    pub restarts: i32,
    /// `state.waiting.reason`, e.g. `CrashLoopBackOff`.
    pub waiting: Option<Name>,
    /// `state.terminated`, if the container has terminated.
    pub terminated: Option<Terminated>,
}

impl ContainerInfo {
    /// Whether any filter could read something here: readers sum restarts (counting negative ones
    /// as none), match waiting and terminated reasons and exit codes. A container without any of
    /// those reads the same as no container.
    fn says_anything(&self) -> bool {
        self.restarts > 0 || self.waiting.is_some() || self.terminated.is_some()
    }
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct Terminated {
    pub reason: Option<Name>,
    pub exit_code: i32,
}

/// Which containers a filter looks at: the app containers always, init and ephemeral ones on request.
#[derive(Clone, Copy, Debug, Default)]
pub struct ContainerScope {
    pub init: bool,
    pub ephemeral: bool,
}

fn non_empty(text: Option<&String>) -> Option<Name> {
    text.filter(|t| !t.is_empty()).map(Name::from)
}

impl PodStatusSummary {
    pub fn from_status(status: Option<&PodStatus>) -> PodStatusSummary {
        let Some(status) = status else {
            return PodStatusSummary::default();
        };
        let containers = |list: Option<&Vec<ContainerStatus>>| -> Vec<ContainerInfo> {
            list.into_iter()
                .flatten()
                .map(|c| {
                    let state = c.state.as_ref();
                    ContainerInfo {
                        restarts: c.restart_count,
                        waiting: non_empty(
                            state
                                .and_then(|s| s.waiting.as_ref())
                                .and_then(|w| w.reason.as_ref()),
                        ),
                        terminated: state
                            .and_then(|s| s.terminated.as_ref())
                            .map(|t| Terminated {
                                reason: non_empty(t.reason.as_ref()),
                                exit_code: t.exit_code,
                            }),
                    }
                })
                .filter(ContainerInfo::says_anything)
                .collect()
        };
        let notable = Notable {
            reason: non_empty(status.reason.as_ref()),
            containers: containers(status.container_statuses.as_ref()),
            init_containers: containers(status.init_container_statuses.as_ref()),
            ephemeral_containers: containers(status.ephemeral_container_statuses.as_ref()),
        };
        PodStatusSummary {
            conditions: status
                .conditions
                .iter()
                .flatten()
                .map(|c| ConditionInfo {
                    state: Arc::new(ConditionState {
                        type_: c.type_.as_str().into(),
                        status: c.status.as_str().into(),
                        reason: non_empty(c.reason.as_ref()),
                    }),
                    last_transition: c.last_transition_time.as_ref().map(|t| t.0),
                })
                .collect(),
            notable: (notable != Notable::default()).then(|| Box::new(notable)),
        }
    }

    /// `status.reason`, e.g. `Evicted`, `NodeAffinity`, `Shutdown`.
    pub fn reason(&self) -> Option<&str> {
        self.notable.as_ref()?.reason.as_deref()
    }

    /// The app containers, plus init and ephemeral ones if `scope` says so; only those with restarts,
    /// a waiting reason or a termination (the others have nothing to read).
    pub fn containers_in(&self, scope: ContainerScope) -> impl Iterator<Item = &ContainerInfo> {
        let (containers, init, ephemeral): (&[_], &[_], &[_]) = match &self.notable {
            Some(n) => (
                &n.containers,
                if scope.init { &n.init_containers } else { &[] },
                if scope.ephemeral {
                    &n.ephemeral_containers
                } else {
                    &[]
                },
            ),
            None => (&[], &[], &[]),
        };
        containers.iter().chain(init).chain(ephemeral)
    }

    /// The condition of `type_`, if the pod reports it.
    pub fn condition(&self, type_: &str) -> Option<&ConditionInfo> {
        self.conditions.iter().find(|c| c.type_ == type_)
    }

    /// Sets the condition of `type_` as a status write would: replaced where the pod reports it,
    /// added otherwise. What a simulation does with the conditions tidal writes.
    pub fn set_condition(&mut self, type_: &str, status: &str, at: Timestamp) {
        let condition = ConditionInfo {
            state: Arc::new(ConditionState {
                type_: Name::from(type_),
                status: Name::from(status),
                reason: None,
            }),
            last_transition: Some(at),
        };
        let mut conditions = std::mem::take(&mut self.conditions).into_vec();
        match conditions.iter_mut().find(|c| c.type_ == type_) {
            Some(known) => *known = condition,
            None => conditions.push(condition),
        }
        self.conditions = conditions.into_boxed_slice();
    }

    /// Since when the scheduler has reported the pod unschedulable (`PodScheduled=False`, reason
    /// `Unschedulable`), if it currently does.
    pub fn unschedulable_since(&self) -> Option<Timestamp> {
        self.condition("PodScheduled")
            .filter(|c| c.status == "False" && c.reason.as_deref() == Some("Unschedulable"))
            .and_then(|c| c.last_transition)
    }

    /// Shares what conditions say, and container reasons, with other pods.
    pub(super) fn intern(
        &mut self,
        names: &mut Interner,
        conditions: &mut Interner<Arc<ConditionState>>,
    ) {
        for condition in &mut self.conditions {
            conditions.intern_new(&mut condition.state, |fresh| {
                // Only this pod holds a state seen for the first time, so it can still be changed.
                if let Some(state) = Arc::get_mut(fresh) {
                    names.intern(&mut state.type_);
                    names.intern(&mut state.status);
                    names.intern_option(&mut state.reason);
                }
            });
        }
        if let Some(notable) = &mut self.notable {
            names.intern_option(&mut notable.reason);
            for container in notable
                .containers
                .iter_mut()
                .chain(&mut notable.init_containers)
                .chain(&mut notable.ephemeral_containers)
            {
                names.intern_option(&mut container.waiting);
                if let Some(terminated) = &mut container.terminated {
                    names.intern_option(&mut terminated.reason);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn status(value: serde_json::Value) -> PodStatusSummary {
        PodStatusSummary::from_status(Some(&serde_json::from_value(value).unwrap()))
    }

    #[test]
    fn a_plain_running_pod_keeps_its_conditions_and_nothing_else() {
        let summary = status(serde_json::json!({
            "phase": "Running",
            "conditions": [{"type": "Ready", "status": "True"}],
            "containerStatuses": [{"name": "c", "image": "i", "imageID": "", "ready": true,
                "restartCount": 0, "state": {"running": {}}}],
        }));
        assert_eq!(summary.conditions.len(), 1);
        assert!(summary.notable.is_none(), "{summary:?}");
        let scope = ContainerScope {
            init: true,
            ephemeral: true,
        };
        assert_eq!(summary.containers_in(scope).count(), 0);
        assert_eq!(summary.reason(), None);
    }

    #[test]
    fn containers_worth_reading_are_kept_in_scope() {
        let container = |name: &str, restarts: i32, state: serde_json::Value| {
            serde_json::json!({"name": name, "image": "i", "imageID": "", "ready": false,
                "restartCount": restarts, "state": state})
        };
        let summary = status(serde_json::json!({
            "reason": "Evicted",
            "containerStatuses": [
                container("quiet", 0, serde_json::json!({"running": {}})),
                container("restarting", 3, serde_json::json!({"running": {}})),
                container("waiting", 0,
                    serde_json::json!({"waiting": {"reason": "CrashLoopBackOff"}})),
            ],
            "initContainerStatuses": [
                container("init", 0, serde_json::json!({"terminated": {"exitCode": 1, "reason": "Error"}})),
            ],
        }));
        assert_eq!(summary.reason(), Some("Evicted"));
        let app = summary.containers_in(ContainerScope::default());
        assert_eq!(
            app.map(|c| (c.restarts, c.waiting.as_deref()))
                .collect::<Vec<_>>(),
            [(3, None), (0, Some("CrashLoopBackOff"))]
        );
        let with_init = ContainerScope {
            init: true,
            ephemeral: false,
        };
        let last = summary.containers_in(with_init).last().unwrap();
        assert_eq!(last.terminated.as_ref().unwrap().exit_code, 1);
    }

    #[test]
    fn conditions_share_what_they_say_and_keep_their_own_time() {
        let at = |time: &str| {
            status(serde_json::json!({"conditions": [
                {"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
                 "lastTransitionTime": time},
                {"type": "Ready", "status": "True"},
            ]}))
        };
        let (mut a, mut b) = (at("2026-11-22T03:00:00Z"), at("2026-11-22T04:00:00Z"));
        let before = (a.clone(), b.clone());
        let (mut names, mut conditions) = (Interner::default(), Interner::default());
        a.intern(&mut names, &mut conditions);
        b.intern(&mut names, &mut conditions);
        assert_eq!((a.clone(), b.clone()), before, "interning changes no value");
        assert!(Arc::ptr_eq(&a.conditions[0].state, &b.conditions[0].state));
        assert!(Arc::ptr_eq(&a.conditions[1].state, &b.conditions[1].state));
        let scheduled = b.condition("PodScheduled").unwrap();
        assert_eq!(
            (
                &*scheduled.type_,
                &*scheduled.status,
                scheduled.reason.as_deref()
            ),
            ("PodScheduled", "False", Some("Unschedulable"))
        );
        assert_eq!(
            b.unschedulable_since(),
            Some("2026-11-22T04:00:00Z".parse().unwrap())
        );
        assert_eq!(
            a.unschedulable_since(),
            Some("2026-11-22T03:00:00Z".parse().unwrap())
        );
        assert_eq!(b.condition("Ready").unwrap().last_transition, None);
    }
}
