//! The arguments of tdm, as a policy spells them under `spec.strategies.tdm`: their type, their
//! defaults and the checks the CRD schema makes of them; what the schema cannot check, the plugin's
//! `validate` does.

// The schema derives (KubeSchema, JsonSchema) copy each type's visibility into items they generate,
// which `unreachable_pub` then reports; these are public CRD types.
#![allow(unreachable_pub)]

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TdmArgs {
    /// Also evict pods that may not run on revocable nodes at all (not preemptable, or opted into another
    /// zone), whatever the time. They pass the same gates as any other candidate.
    #[serde(default = "yes")]
    pub evict_placement_violations: bool,
    /// Let a pod that ends by itself before its zone's close (its `activeDeadlineSeconds`, or the run
    /// time it or its PodGroup declares with `tidal.dev/expected-run-time`) finish rather than evict it,
    /// as long as the close still leaves time to evict it should it overstay. Off: a drain evicts every
    /// preemptable pod, as Volcano's TDM does.
    #[serde(default = "yes")]
    pub let_pods_finish: bool,
}

impl Default for TdmArgs {
    fn default() -> Self {
        TdmArgs {
            evict_placement_violations: true,
            let_pods_finish: true,
        }
    }
}

fn yes() -> bool {
    true
}
