//! The strategies tidal knows, in the order a policy runs them: one row per row of the strategy table
//! (`crate::strategies::strategy_table`), which builds the strategy's plugin from its arguments when
//! the policy enables it. Nothing here changes for a new strategy. A new strategy is registered in two
//! places: its folder `src/strategies/<id>/` (the plugin, its arguments and its tests) and
//! `src/strategies/mod.rs` (its `mod` line and its row in the strategy table).

use crate::{
    api::policy::Strategies,
    framework::{Strategy, StrategyId},
};

/// Builds the strategy if the policy enables it.
type Build = fn(&Strategies) -> Option<Strategy>;

/// A row of the strategy table as the registry reads it.
macro_rules! registry {
    ($(
        $(#[$doc:meta])*
        $field:ident {
            id: $id:ident = $run:literal, name: $name:literal,
            args: $args:ident, plugin: $kind:ident($plugin:ident)
        }
    )*) => {
        /// In the order of the table; [`enabled`] puts them in the order they run.
        const REGISTRY: &[(StrategyId, Build)] = &[$(
            (StrategyId::$id, |s| {
                let args = s.$field.clone()?;
                Some(Strategy::$kind(Box::new(
                    crate::strategies::$field::$plugin::new(args),
                )))
            }),
        )*];
    };
}

crate::strategies::strategy_table!(registry);

/// The strategies a policy enables, in registry order.
pub(super) fn enabled(strategies: &Strategies) -> Vec<Strategy> {
    let mut enabled: Vec<Strategy> = REGISTRY
        .iter()
        .filter_map(|(_, build)| build(strategies))
        .collect();
    enabled.sort_by_key(Strategy::id);
    enabled
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every strategy's key in a policy, with arguments it accepts.
    fn all() -> serde_json::Value {
        serde_json::json!({
            "tdm": {},
            "removeFailedPods": {},
            "podLifeTime": {"maxPodLifeTimeSeconds": 60},
            "removePodsHavingTooManyRestarts": {"podRestartThreshold": 3},
            "removePodsViolatingNodeTaints": {},
            "removePodsViolatingNodeAffinity": {},
            "removePodsViolatingInterPodAntiAffinity": {},
            "makeRoomForPending": {},
            "removeDuplicates": {},
            "removePodsViolatingTopologySpreadConstraint": {},
            "lowNodeUtilization": {"thresholds": {"cpu": 20}, "targetThresholds": {"cpu": 50}},
            "highNodeUtilization": {"thresholds": {"cpu": 20}},
        })
    }

    #[test]
    fn every_row_builds_the_strategy_it_names() {
        // The row's id and the built plugin's id must agree, or reports would name the wrong strategy.
        let all: Strategies = serde_json::from_value(all()).expect("every strategy's arguments");
        let built: Vec<StrategyId> = enabled(&all).iter().map(Strategy::id).collect();
        let mut rows: Vec<StrategyId> = REGISTRY.iter().map(|(id, _)| *id).collect();
        rows.sort();
        assert_eq!(built, rows);
        let mut unique = rows.clone();
        unique.dedup();
        assert_eq!(unique.len(), rows.len(), "a strategy registered twice");
        assert_eq!(rows.len(), StrategyId::ALL.len());
        assert!(enabled(&Strategies::default()).is_empty());
    }

    #[test]
    fn a_strategy_is_named_by_its_key_in_the_policy() {
        // The name reports and metrics use is the key that enables the strategy.
        for id in StrategyId::ALL {
            let key = id.name();
            let one = serde_json::json!({ key: all()[key].clone() });
            let strategies: Strategies = serde_json::from_value(one).expect(key);
            let built: Vec<StrategyId> = enabled(&strategies).iter().map(Strategy::id).collect();
            assert_eq!(built, [id], "{key}");
        }
    }

    #[test]
    fn strategies_run_in_a_fixed_order() {
        let all: Strategies = serde_json::from_value(all()).expect("every strategy's arguments");
        let order: Vec<&str> = enabled(&all).iter().map(|s| s.id().name()).collect();
        assert_eq!(
            order,
            [
                "tdm",
                "removeFailedPods",
                "podLifeTime",
                "removePodsHavingTooManyRestarts",
                "removePodsViolatingNodeTaints",
                "removePodsViolatingNodeAffinity",
                "removePodsViolatingInterPodAntiAffinity",
                "makeRoomForPending",
                "removeDuplicates",
                "removePodsViolatingTopologySpreadConstraint",
                "lowNodeUtilization",
                "highNodeUtilization",
            ]
        );
    }
}
