//! Which strategy: its identity, apart from the traits a strategy implements, so that what names a
//! strategy (a candidate, a verdict, a report) needs nothing else of it.

use std::fmt;

/// A row of the strategy table (`crate::strategies::strategy_table`) as `StrategyId` reads it.
macro_rules! strategy_ids {
    ($(
        $(#[$doc:meta])*
        $field:ident {
            id: $id:ident = $run:literal, name: $name:literal,
            args: $args:ident, plugin: $kind:ident($plugin:ident)
        }
    )*) => {
        /// The strategies tidal knows. `Display` is the name used in policies, reports, status and
        /// metric labels: the Kubernetes descheduler's plugin names, so that its users recognise them.
        /// Ordered as a policy runs them: a derived order compares the discriminants, the table's `id`.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub enum StrategyId {
            $($id = $run,)*
        }

        impl StrategyId {
            /// Every strategy, in the order of the table.
            pub const ALL: [StrategyId; [$($name),*].len()] = [$(StrategyId::$id),*];

            pub const fn name(self) -> &'static str {
                match self {
                    $(StrategyId::$id => $name,)*
                }
            }
        }
    };
}

crate::strategies::strategy_table!(strategy_ids);

impl fmt::Display for StrategyId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}
