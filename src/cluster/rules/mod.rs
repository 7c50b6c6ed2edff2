//! Who may run where: the scheduler's matching rules and tidal's placement rules for revocable nodes,
//! as pure functions over the model.

pub(crate) mod anti_affinity;
pub(crate) mod label_index;
pub(crate) mod matching;
pub(crate) mod placement;
