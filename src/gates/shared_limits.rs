//! The counts behind `limits.shared`: caps that several policies count against together, as the
//! descheduler's global `maxNoOfPodsToEvict*` cap all its profiles at once. The planner makes one
//! set of counts per cycle and hands it to every policy's gate `limit`.

use std::{cell::RefCell, collections::HashMap, rc::Rc};

use crate::api::policy::SharedLimits;

/// Evictions admitted so far this cycle under each shared name. Cloning shares the counts.
#[derive(Clone, Debug, Default)]
pub(crate) struct SharedCounts(Rc<RefCell<HashMap<String, Counts>>>);

#[derive(Debug, Default)]
struct Counts {
    total: u32,
    per_node: HashMap<String, u32>,
    per_namespace: HashMap<String, u32>,
}

impl SharedCounts {
    /// Whether one more eviction on `node` in `namespace` stays within `limits`, counting what every
    /// policy sharing `limits.name` admitted before it.
    pub(crate) fn check(
        &self,
        limits: &SharedLimits,
        node: Option<&str>,
        namespace: &str,
    ) -> Result<(), String> {
        let all = self.0.borrow();
        let none = Counts::default();
        let counts = all.get(&limits.name).unwrap_or(&none);
        if let Some(max) = limits.total
            && counts.total >= max
        {
            return Err(reached(limits, &format!("total {max} per cycle")));
        }
        if let (Some(max), Some(node)) = (limits.per_node, node)
            && counts.per_node.get(node).copied().unwrap_or(0) >= max
        {
            return Err(reached(limits, &format!("perNode {max} on {node}")));
        }
        if let Some(max) = limits.per_namespace
            && counts.per_namespace.get(namespace).copied().unwrap_or(0) >= max
        {
            return Err(reached(
                limits,
                &format!("perNamespace {max} in {namespace}"),
            ));
        }
        Ok(())
    }

    /// Counts one eviction in (`up`) or takes it back out.
    pub(crate) fn tally(&self, name: &str, node: Option<&str>, namespace: &str, up: bool) {
        let mut all = self.0.borrow_mut();
        let counts = all.entry(name.to_owned()).or_default();
        let step = |n: &mut u32| {
            *n = if up {
                n.saturating_add(1)
            } else {
                n.saturating_sub(1)
            }
        };
        step(&mut counts.total);
        if let Some(node) = node {
            step(counts.per_node.entry(node.to_owned()).or_default());
        }
        step(
            counts
                .per_namespace
                .entry(namespace.to_owned())
                .or_default(),
        );
    }
}

fn reached(limits: &SharedLimits, which: &str) -> String {
    format!(
        "shared limit {}: {which} reached, counting every policy that shares it",
        limits.name
    )
}
