//! The one way an object can be unusable as a whole: it has no name to be kept under.

/// An object tidal cannot key: it lacks its name (a pod, also its namespace). The API server never
/// sends one; a hand-written dump can.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{kind} without metadata.{field}")]
pub struct Unnamed {
    pub kind: &'static str,
    pub field: &'static str,
}

impl Unnamed {
    pub(crate) const fn name(kind: &'static str) -> Unnamed {
        Unnamed {
            kind,
            field: "name",
        }
    }
}
