//! Which strategy: its identity, apart from the traits a strategy implements, so that what names a
//! strategy (a candidate, a verdict, a report) needs nothing else of it.

use std::fmt;

/// The strategies tidal knows. `Display` is the name used in policies, reports, status and metric
/// labels: the Kubernetes descheduler's plugin names, so that its users recognise them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum StrategyId {
    Tdm,
    RemoveFailedPods,
    PodLifeTime,
    TooManyRestarts,
    NodeTaints,
    NodeAffinity,
    InterPodAntiAffinity,
    MakeRoomForPending,
    RemoveDuplicates,
    TopologySpread,
    LowNodeUtilization,
    HighNodeUtilization,
}

impl StrategyId {
    pub const fn name(self) -> &'static str {
        match self {
            StrategyId::Tdm => "tdm",
            StrategyId::RemoveFailedPods => "removeFailedPods",
            StrategyId::PodLifeTime => "podLifeTime",
            StrategyId::TooManyRestarts => "removePodsHavingTooManyRestarts",
            StrategyId::NodeTaints => "removePodsViolatingNodeTaints",
            StrategyId::NodeAffinity => "removePodsViolatingNodeAffinity",
            StrategyId::InterPodAntiAffinity => "removePodsViolatingInterPodAntiAffinity",
            StrategyId::MakeRoomForPending => "makeRoomForPending",
            StrategyId::RemoveDuplicates => "removeDuplicates",
            StrategyId::TopologySpread => "removePodsViolatingTopologySpreadConstraint",
            StrategyId::LowNodeUtilization => "lowNodeUtilization",
            StrategyId::HighNodeUtilization => "highNodeUtilization",
        }
    }
}

impl fmt::Display for StrategyId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}
