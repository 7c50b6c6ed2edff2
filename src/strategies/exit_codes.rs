//! Container exit codes, which podLifeTime and removeFailedPods both filter on.

use crate::cluster::{ContainerScope, PodInfo};

/// A terminated container of the pod exited with one of `codes`.
pub(crate) fn has_exit_code(pod: &PodInfo, codes: &[i32], scope: ContainerScope) -> bool {
    pod.status
        .containers_in(ContainerScope {
            ephemeral: false,
            ..scope
        })
        .any(|c| {
            c.terminated
                .as_ref()
                .is_some_and(|t| codes.contains(&t.exit_code))
        })
}
