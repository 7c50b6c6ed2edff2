//! Identities of the things tidal keeps: namespaced objects and jobs, and the shared strings they are
//! made of.

use std::{borrow::Borrow, collections::HashSet, fmt, hash::Hash, ops::Deref, sync::Arc};

use serde::Serialize;

/// An immutable string shared by reference count. At 150,000 pods the same few thousand strings
/// (namespaces, node names, owners, jobs, condition types) would otherwise be copied into every pod
/// and every index entry; a clone of a `Name` is a count, and the cache interns the ones pods repeat
/// (see [`Interner`]). Compares, hashes, orders and prints exactly as the `str` it holds.
#[derive(Clone, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Name(Arc<str>);

impl Name {
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Same allocation (not merely equal text).
    pub fn ptr_eq(&self, other: &Name) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Deref for Name {
    type Target = str;
    fn deref(&self) -> &str {
        &self.0
    }
}

impl Borrow<str> for Name {
    fn borrow(&self) -> &str {
        &self.0
    }
}

impl AsRef<str> for Name {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for Name {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl fmt::Debug for Name {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&*self.0, f)
    }
}

impl Serialize for Name {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.0)
    }
}

impl From<String> for Name {
    fn from(text: String) -> Self {
        Name(text.into())
    }
}

impl From<&String> for Name {
    fn from(text: &String) -> Self {
        Name(text.as_str().into())
    }
}

impl From<&str> for Name {
    fn from(text: &str) -> Self {
        Name(text.into())
    }
}

impl From<&Name> for Name {
    fn from(name: &Name) -> Self {
        name.clone()
    }
}

impl From<Name> for String {
    fn from(name: Name) -> Self {
        name.0.as_ref().to_owned()
    }
}

impl PartialEq<str> for Name {
    fn eq(&self, other: &str) -> bool {
        *self.0 == *other
    }
}

impl PartialEq<&str> for Name {
    fn eq(&self, other: &&str) -> bool {
        *self.0 == **other
    }
}

impl PartialEq<String> for Name {
    fn eq(&self, other: &String) -> bool {
        *self.0 == **other
    }
}

impl PartialEq<Name> for String {
    fn eq(&self, other: &Name) -> bool {
        **self == *other.0
    }
}

impl PartialEq<Name> for str {
    fn eq(&self, other: &Name) -> bool {
        *self == *other.0
    }
}

impl PartialEq<Name> for &str {
    fn eq(&self, other: &Name) -> bool {
        **self == *other.0
    }
}

/// A value shared by reference count, which an [`Interner`] can hand out one copy of.
pub trait Shared: Clone + Eq + Hash {
    /// Holders of this copy, the interner's own included.
    fn holders(&self) -> usize;
    /// Same allocation (not merely equal content).
    fn same(&self, other: &Self) -> bool;
}

/// Parts of a pod that many pods hold identically (an owner reference, a condition without its time).
impl<T: Eq + Hash> Shared for Arc<T> {
    fn holders(&self) -> usize {
        Arc::strong_count(self)
    }

    fn same(&self, other: &Self) -> bool {
        Arc::ptr_eq(self, other)
    }
}

impl Shared for Name {
    fn holders(&self) -> usize {
        Arc::strong_count(&self.0)
    }

    fn same(&self, other: &Self) -> bool {
        self.ptr_eq(other)
    }
}

/// One shared copy of each distinct value. Values nobody else holds any more are dropped in a sweep
/// each time the set has doubled since the last one, so the cost per value stays constant and the
/// names of objects long gone (old ReplicaSets, deleted namespaces) do not pile up.
#[derive(Debug)]
pub struct Interner<T = Name> {
    known: HashSet<T>,
    sweep_at: usize,
}

impl<T> Default for Interner<T> {
    fn default() -> Self {
        Interner {
            known: HashSet::new(),
            sweep_at: 0,
        }
    }
}

impl<T: Shared> Interner<T> {
    /// Replaces `value` with the shared copy of its content, which it becomes if it is the first.
    pub fn intern(&mut self, value: &mut T) {
        self.intern_new(value, |_| {});
    }

    /// [`intern`](Self::intern), running `prepare` on a value seen for the first time before it is
    /// kept (to intern what it is made of).
    pub fn intern_new(&mut self, value: &mut T, prepare: impl FnOnce(&mut T)) {
        if let Some(known) = self.known.get(value) {
            if !known.same(value) {
                *value = known.clone();
            }
            return;
        }
        if self.known.len() >= self.sweep_at {
            self.known.retain(|v| v.holders() > 1);
            self.sweep_at = (self.known.len() * 2).max(1024);
        }
        prepare(value);
        self.known.insert(value.clone());
    }

    pub fn intern_option(&mut self, value: &mut Option<T>) {
        if let Some(value) = value {
            self.intern(value);
        }
    }

    /// Distinct values held.
    pub fn len(&self) -> usize {
        self.known.len()
    }

    pub fn is_empty(&self) -> bool {
        self.known.is_empty()
    }
}

/// `namespace/name` of a namespaced object (or `name` alone for a cluster-scoped one, with an empty namespace).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub struct ObjectKey {
    pub namespace: Name,
    pub name: Name,
}

impl ObjectKey {
    pub fn new(namespace: impl Into<Name>, name: impl Into<Name>) -> Self {
        ObjectKey {
            namespace: namespace.into(),
            name: name.into(),
        }
    }
}

impl fmt::Display for ObjectKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.namespace.is_empty() {
            f.write_str(&self.name)
        } else {
            write!(f, "{}/{}", self.namespace, self.name)
        }
    }
}

/// The unit disruption budgets apply to: the pod's Volcano PodGroup, else its controller, else the pod.
///
/// Shared by reference count: every pod of a job holds its key, and the cache interns it, so that a
/// pod pays a pointer for it rather than three names (a job's pods and its entries in the cache's
/// maps all point at one copy). Reads as its parts (`job.namespace`, `job.kind`, `job.name`);
/// compares, hashes and orders as they do.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct JobKey(Arc<JobParts>);

/// What a [`JobKey`] is made of.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename = "JobKey")]
pub struct JobParts {
    pub namespace: Name,
    pub kind: JobKind,
    pub name: Name,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub enum JobKind {
    PodGroup,
    /// A controller owner, by kind (`ReplicaSet`, `StatefulSet`, `Job`, ...).
    Controller(Name),
    /// A pod without group or controller is a job of one.
    Pod,
}

impl JobKey {
    pub fn new(namespace: impl Into<Name>, kind: JobKind, name: impl Into<Name>) -> Self {
        JobKey(Arc::new(JobParts {
            namespace: namespace.into(),
            kind,
            name: name.into(),
        }))
    }

    /// Shares this key with the pods of the same job; a key seen for the first time shares its
    /// names with other keys.
    pub(crate) fn intern(&mut self, keys: &mut Interner<JobKey>, names: &mut Interner) {
        keys.intern_new(self, |fresh| {
            // Only this pod holds a key seen for the first time, so it can still be changed.
            if let Some(parts) = Arc::get_mut(&mut fresh.0) {
                names.intern(&mut parts.namespace);
                match &mut parts.kind {
                    JobKind::Controller(kind) => names.intern(kind),
                    // A job of one pod is named after it: its name is the pod's own, which no
                    // other pod repeats.
                    JobKind::Pod => return,
                    JobKind::PodGroup => {}
                }
                names.intern(&mut parts.name);
            }
        });
    }
}

impl Deref for JobKey {
    type Target = JobParts;
    fn deref(&self) -> &JobParts {
        &self.0
    }
}

impl Shared for JobKey {
    fn holders(&self) -> usize {
        Arc::strong_count(&self.0)
    }

    fn same(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl fmt::Debug for JobKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("JobKey")
            .field("namespace", &self.namespace)
            .field("kind", &self.kind)
            .field("name", &self.name)
            .finish()
    }
}

impl Serialize for JobKey {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(serializer)
    }
}

impl fmt::Display for JobKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kind = match &self.kind {
            JobKind::PodGroup => "PodGroup",
            JobKind::Controller(kind) => kind,
            JobKind::Pod => "Pod",
        };
        write!(f, "{kind} {}/{}", self.namespace, self.name)
    }
}

/// A pod's `metadata.uid`, which tidal writes back exactly as the API server sent it (an eviction's
/// preconditions compare it as text). The API server makes lower-case hyphenated UUIDs, kept here as
/// their 16 bytes instead of 36 characters on the heap; any other text (upper case, braces, not a
/// UUID at all) is kept as it came.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct PodUid(UidRepr);

// Private so that a text that is a canonical UUID is only ever held as `Uuid`: derived equality
// relies on each uid having one representation.
#[derive(Clone, PartialEq, Eq, Hash)]
enum UidRepr {
    Uuid(uuid::Uuid),
    Text(Box<str>),
}

impl PodUid {
    /// `text` as a UUID if writing that UUID back gives `text` again, character for character.
    fn canonical(text: &str) -> Option<uuid::Uuid> {
        let uuid = uuid::Uuid::try_parse(text).ok()?;
        let mut buffer = uuid::Uuid::encode_buffer();
        (uuid.hyphenated().encode_lower(&mut buffer) == text).then_some(uuid)
    }

    pub fn is_empty(&self) -> bool {
        matches!(&self.0, UidRepr::Text(text) if text.is_empty())
    }

    /// Held as 16 bytes (the text was a lower-case hyphenated UUID).
    #[cfg(test)]
    pub(crate) fn is_compact(&self) -> bool {
        matches!(self.0, UidRepr::Uuid(_))
    }
}

impl Default for PodUid {
    fn default() -> Self {
        PodUid(UidRepr::Text(Box::default()))
    }
}

impl From<&str> for PodUid {
    fn from(text: &str) -> Self {
        PodUid(match PodUid::canonical(text) {
            Some(uuid) => UidRepr::Uuid(uuid),
            None => UidRepr::Text(text.into()),
        })
    }
}

impl From<String> for PodUid {
    fn from(text: String) -> Self {
        PodUid(match PodUid::canonical(&text) {
            Some(uuid) => UidRepr::Uuid(uuid),
            None => UidRepr::Text(text.into_boxed_str()),
        })
    }
}

impl fmt::Display for PodUid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.0 {
            UidRepr::Uuid(uuid) => f.write_str(
                uuid.hyphenated()
                    .encode_lower(&mut uuid::Uuid::encode_buffer()),
            ),
            UidRepr::Text(text) => f.write_str(text),
        }
    }
}

impl fmt::Debug for PodUid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.to_string(), f)
    }
}

impl PartialEq<str> for PodUid {
    fn eq(&self, other: &str) -> bool {
        match &self.0 {
            // Only the canonical text of a UUID is the text it was read from.
            UidRepr::Uuid(uuid) => PodUid::canonical(other) == Some(*uuid),
            UidRepr::Text(text) => **text == *other,
        }
    }
}

impl PartialEq<&str> for PodUid {
    fn eq(&self, other: &&str) -> bool {
        *self == **other
    }
}

impl PartialEq<PodUid> for String {
    fn eq(&self, other: &PodUid) -> bool {
        *other == *self.as_str()
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    #[test]
    fn a_name_orders_hashes_and_prints_as_its_text() {
        let mut names: Vec<Name> = ["b", "a", "ab", ""].into_iter().map(Name::from).collect();
        names.sort();
        assert_eq!(names, ["", "a", "ab", "b"]);
        let map: BTreeMap<Name, u8> = [(Name::from("x"), 1)].into();
        assert_eq!(map.get("x"), Some(&1), "looked up by &str");
        let set: HashSet<Name> = [Name::from("x")].into();
        assert!(set.contains("x"), "hashes as the str");
        assert_eq!(format!("{} {:?}", names[1], names[1]), "a \"a\"");
        assert_eq!(serde_json::to_string(&names[1]).unwrap(), "\"a\"");
    }

    #[test]
    fn the_interner_shares_one_copy_and_forgets_unused_ones() {
        let mut interner = Interner::default();
        let mut first = Name::from("ns");
        let mut second = Name::from("ns".to_owned());
        interner.intern(&mut first);
        interner.intern(&mut second);
        assert!(first.ptr_eq(&second));
        // Names nobody holds are swept once the set has doubled.
        for i in 0..5_000 {
            interner.intern(&mut Name::from(format!("gone-{i}")));
        }
        assert!(interner.len() < 3_000, "{}", interner.len());
        let mut again = Name::from("ns");
        interner.intern(&mut again);
        assert!(again.ptr_eq(&first), "names still held survive sweeps");
    }

    #[test]
    fn a_uid_reads_and_writes_back_exactly_as_sent() {
        let uuid = "0b8f6c3e-5d2a-4f1b-9c7d-2e4a6b8c0d1f";
        for text in [
            uuid,
            "0B8F6C3E-5D2A-4F1B-9C7D-2E4A6B8C0D1F",
            "0b8f6c3e5d2a4f1b9c7d2e4a6b8c0d1f",
            "{0b8f6c3e-5d2a-4f1b-9c7d-2e4a6b8c0d1f}",
            "urn:uuid:0b8f6c3e-5d2a-4f1b-9c7d-2e4a6b8c0d1f",
            "0b8f6c3e-5d2a-4f1b-9c7d-2e4a6b8c0d1",
            "pod-uid-7",
            "",
        ] {
            let uid = PodUid::from(text);
            assert_eq!(uid.to_string(), text);
            assert_eq!(uid.is_compact(), text == uuid, "{text}");
            assert_eq!(uid, text);
            assert_eq!(text.to_owned(), uid);
            assert_eq!(uid, PodUid::from(text.to_owned()));
            assert_eq!(format!("{uid:?}"), format!("{text:?}"));
            assert_eq!(uid.is_empty(), text.is_empty());
        }
        let compact = PodUid::from(uuid);
        assert_ne!(compact, "0B8F6C3E-5D2A-4F1B-9C7D-2E4A6B8C0D1F");
        assert_ne!(
            compact,
            PodUid::from("0B8F6C3E-5D2A-4F1B-9C7D-2E4A6B8C0D1F")
        );
        assert_ne!(PodUid::from("0B8F6C3E-5D2A-4F1B-9C7D-2E4A6B8C0D1F"), uuid);
        assert_ne!(compact, "pod-uid-7");
        assert_eq!(PodUid::default(), "");
    }
}
