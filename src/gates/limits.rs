//! Gate `limit`: caps on evictions per cycle, per node, per namespace and in total, shared by all
//! strategies of a policy.

use std::collections::HashMap;

use super::Gate;
use crate::{
    api::policy::EvictionLimits,
    plan::{Candidate, PlanContext},
};

pub const NAME: &str = "limit";

pub struct Limits {
    limits: EvictionLimits,
    total: u32,
    per_node: HashMap<String, u32>,
    per_namespace: HashMap<String, u32>,
}

impl Limits {
    pub fn new(limits: &EvictionLimits) -> Self {
        Limits {
            limits: limits.clone(),
            total: 0,
            per_node: HashMap::new(),
            per_namespace: HashMap::new(),
        }
    }
}

impl Gate for Limits {
    fn name(&self) -> &'static str {
        NAME
    }

    fn check(&mut self, candidate: &Candidate, _ctx: &PlanContext<'_>) -> Result<(), String> {
        let pod = &candidate.pod;
        if let Some(max) = self.limits.total
            && self.total >= max
        {
            return Err(format!("total limit {max} per cycle reached"));
        }
        if let (Some(max), Some(node)) = (self.limits.per_node, &pod.node_name)
            && self.per_node.get(node).copied().unwrap_or(0) >= max
        {
            return Err(format!("perNode limit {max} reached on {node}"));
        }
        let namespace = &pod.key.namespace;
        if let Some(max) = self.limits.per_namespace
            && self.per_namespace.get(namespace).copied().unwrap_or(0) >= max
        {
            return Err(format!("perNamespace limit {max} reached in {namespace}"));
        }
        Ok(())
    }

    fn admit(&mut self, candidate: &Candidate, _ctx: &PlanContext<'_>) {
        let pod = &candidate.pod;
        self.total += 1;
        if let Some(node) = &pod.node_name {
            *self.per_node.entry(node.clone()).or_default() += 1;
        }
        *self
            .per_namespace
            .entry(pod.key.namespace.clone())
            .or_default() += 1;
    }
}
