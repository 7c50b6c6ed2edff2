//! The parts of a pod's status that strategies filter on: its reason, conditions and container states.

use jiff::Timestamp;
use k8s_openapi::api::core::v1::{ContainerStatus, PodStatus};

#[derive(Clone, Debug, Default, PartialEq)]
pub struct PodStatusSummary {
    /// `status.reason`, e.g. `Evicted`, `NodeAffinity`, `Shutdown`.
    pub reason: Option<String>,
    pub conditions: Vec<ConditionInfo>,
    pub containers: Vec<ContainerInfo>,
    pub init_containers: Vec<ContainerInfo>,
    pub ephemeral_containers: Vec<ContainerInfo>,
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct ConditionInfo {
    pub type_: String,
    pub status: String,
    pub reason: Option<String>,
    pub last_transition: Option<Timestamp>,
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct ContainerInfo {
    pub restarts: i32,
    /// `state.waiting.reason`, e.g. `CrashLoopBackOff`.
    pub waiting: Option<String>,
    /// `state.terminated`, if the container has terminated.
    pub terminated: Option<Terminated>,
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct Terminated {
    pub reason: Option<String>,
    pub exit_code: i32,
}

/// Which containers a filter looks at: the app containers always, init and ephemeral ones on request.
#[derive(Clone, Copy, Debug, Default)]
pub struct ContainerScope {
    pub init: bool,
    pub ephemeral: bool,
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
                        waiting: state
                            .and_then(|s| s.waiting.as_ref())
                            .and_then(|w| w.reason.clone())
                            .filter(|r| !r.is_empty()),
                        terminated: state
                            .and_then(|s| s.terminated.as_ref())
                            .map(|t| Terminated {
                                reason: t.reason.clone().filter(|r| !r.is_empty()),
                                exit_code: t.exit_code,
                            }),
                    }
                })
                .collect()
        };
        PodStatusSummary {
            reason: status.reason.clone().filter(|r| !r.is_empty()),
            conditions: status
                .conditions
                .iter()
                .flatten()
                .map(|c| ConditionInfo {
                    type_: c.type_.clone(),
                    status: c.status.clone(),
                    reason: c.reason.clone().filter(|r| !r.is_empty()),
                    last_transition: c.last_transition_time.as_ref().map(|t| t.0),
                })
                .collect(),
            containers: containers(status.container_statuses.as_ref()),
            init_containers: containers(status.init_container_statuses.as_ref()),
            ephemeral_containers: containers(status.ephemeral_container_statuses.as_ref()),
        }
    }

    /// The app containers, plus init and ephemeral ones if `scope` says so.
    pub fn containers_in(&self, scope: ContainerScope) -> impl Iterator<Item = &ContainerInfo> {
        let init: &[ContainerInfo] = if scope.init {
            &self.init_containers
        } else {
            &[]
        };
        let ephemeral: &[ContainerInfo] = if scope.ephemeral {
            &self.ephemeral_containers
        } else {
            &[]
        };
        self.containers.iter().chain(init).chain(ephemeral)
    }

    /// The condition of `type_`, if the pod reports it.
    pub fn condition(&self, type_: &str) -> Option<&ConditionInfo> {
        self.conditions.iter().find(|c| c.type_ == type_)
    }

    /// Since when the scheduler has reported the pod unschedulable (`PodScheduled=False`, reason
    /// `Unschedulable`), if it currently does.
    pub fn unschedulable_since(&self) -> Option<Timestamp> {
        self.condition("PodScheduled")
            .filter(|c| c.status == "False" && c.reason.as_deref() == Some("Unschedulable"))
            .and_then(|c| c.last_transition)
    }
}
