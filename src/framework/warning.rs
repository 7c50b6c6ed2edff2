//! Warnings about the cluster's data that a plan carries (a zone label without its zone, a PodGroup
//! that does not exist, values tidal cannot read). Each has a stable identity beside its text: the
//! text counts objects, and the counts move as pods come and go while the problem stays the same.

use std::fmt;

/// What a warning is about, whatever its numbers. `Display` says it in a few words, for the line
/// that says it cleared.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum WarningKey {
    /// A zone's `status.lastEvictionRound` lies in the future.
    RoundInFuture { zone: String },
    /// Nodes carry a zone label with no RevocableZone of that name.
    UnknownZone { zone: String },
    /// Pods name a PodGroup that does not exist.
    MissingPodGroup { namespace: String, name: String },
    /// Pods with values tidal cannot read.
    UnreadablePods,
    /// Nodes with values tidal cannot read.
    UnreadableNodes,
    /// Nodes whose pods request more than their allocatable.
    ImplausibleCapacity,
}

impl fmt::Display for WarningKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WarningKey::RoundInFuture { zone } => {
                write!(
                    f,
                    "RevocableZone {zone}'s last eviction round in the future"
                )
            }
            WarningKey::UnknownZone { zone } => write!(
                f,
                "nodes labelled volcano.sh/revocable-zone={zone} without a RevocableZone"
            ),
            WarningKey::MissingPodGroup { namespace, name } => {
                write!(
                    f,
                    "pods naming PodGroup {namespace}/{name}, which does not exist"
                )
            }
            WarningKey::UnreadablePods => f.write_str("pods with values tidal cannot read"),
            WarningKey::UnreadableNodes => f.write_str("nodes with values tidal cannot read"),
            WarningKey::ImplausibleCapacity => {
                f.write_str("nodes holding more than their allocatable")
            }
        }
    }
}

/// One warning: what it is about, and what it says now.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Warning {
    pub key: WarningKey,
    pub text: String,
}

impl Warning {
    pub fn new(key: WarningKey, text: String) -> Self {
        Warning { key, text }
    }
}

impl fmt::Display for Warning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}
