//! Identities of the things tidal keeps: namespaced objects and jobs, and the shared strings they are
//! made of.

use std::{
    borrow::Borrow,
    cmp::Ordering,
    fmt,
    hash::{BuildHasher, Hash, Hasher},
    ops::Deref,
    sync::Arc,
};

use foldhash::HashSet;
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
            known: HashSet::default(),
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

/// The kinds of object the cache holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ObjectKind {
    Node,
    Pod,
    PodDisruptionBudget,
    PodGroup,
    RevocableZone,
    DeschedulingPolicy,
    /// For namespace labels (the evictor's `namespaceLabelSelector`, affinity namespace selectors).
    Namespace,
    /// For their StorageClass (`protections.protectedStorageClasses`).
    PersistentVolumeClaim,
}

impl ObjectKind {
    pub const ALL: [ObjectKind; 8] = [
        ObjectKind::Node,
        ObjectKind::Pod,
        ObjectKind::PodDisruptionBudget,
        ObjectKind::PodGroup,
        ObjectKind::RevocableZone,
        ObjectKind::DeschedulingPolicy,
        ObjectKind::Namespace,
        ObjectKind::PersistentVolumeClaim,
    ];

    /// The API group and resource the controller lists and watches for this kind (its RBAC needs).
    pub fn api_resource(self) -> (&'static str, &'static str) {
        match self {
            ObjectKind::Node => ("", "nodes"),
            ObjectKind::Pod => ("", "pods"),
            ObjectKind::PodDisruptionBudget => ("policy", "poddisruptionbudgets"),
            ObjectKind::PodGroup => ("scheduling.volcano.sh", "podgroups"),
            ObjectKind::RevocableZone => ("tidal.dev", "revocablezones"),
            ObjectKind::DeschedulingPolicy => ("tidal.dev", "deschedulingpolicies"),
            ObjectKind::Namespace => ("", "namespaces"),
            ObjectKind::PersistentVolumeClaim => ("", "persistentvolumeclaims"),
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            ObjectKind::Node => "Node",
            ObjectKind::Pod => "Pod",
            ObjectKind::PodDisruptionBudget => "PodDisruptionBudget",
            ObjectKind::PodGroup => "PodGroup",
            ObjectKind::RevocableZone => "RevocableZone",
            ObjectKind::DeschedulingPolicy => "DeschedulingPolicy",
            ObjectKind::Namespace => "Namespace",
            ObjectKind::PersistentVolumeClaim => "PersistentVolumeClaim",
        }
    }
}

/// The unit disruption budgets apply to: the pod's Volcano PodGroup, else its controller, else the pod.
///
/// Shared by reference count: every pod of a job holds its key, and the cache interns it, so that a
/// pod pays a pointer for it rather than three names (a job's pods and its entries in the cache's
/// maps all point at one copy). Reads as its parts (`job.namespace`, `job.kind`, `job.name`);
/// compares and orders as they do, and hashes as a hash of them taken once.
#[derive(Clone)]
pub struct JobKey(Arc<HashedParts>);

/// A key's parts and their hash, taken when the key is made. Planning hashes a job for every
/// candidate it weighs (the gates' ledger, the snapshot's jobs), and hashing the parts reads the
/// job's name, another allocation and often another cache miss; a map that grows re-hashes every key.
struct HashedParts {
    /// [`JobParts::hash_code`] of `parts`: only [`JobKey::new`] makes one, and interning only swaps
    /// in equal names, so it never goes stale.
    hash: u64,
    parts: JobParts,
}

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

impl JobParts {
    /// A deterministic function of the parts (fixed seed): equal parts hash equally in any key.
    fn hash_code(&self) -> u64 {
        foldhash::quality::FixedState::default().hash_one(self)
    }
}

impl JobKey {
    pub fn new(namespace: impl Into<Name>, kind: JobKind, name: impl Into<Name>) -> Self {
        let parts = JobParts {
            namespace: namespace.into(),
            kind,
            name: name.into(),
        };
        JobKey(Arc::new(HashedParts {
            hash: parts.hash_code(),
            parts,
        }))
    }

    /// The hash of the parts, as [`Hash`] writes it: equal keys have equal ones, and it is well
    /// mixed in every bit, so a table may use it as it is.
    pub(crate) fn hash_code(&self) -> u64 {
        self.0.hash
    }

    /// Shares this key with the pods of the same job; a key seen for the first time shares its
    /// names with other keys.
    pub(crate) fn intern(&mut self, keys: &mut Interner<JobKey>, names: &mut Interner) {
        keys.intern_new(self, |fresh| {
            // Only this pod holds a key seen for the first time, so it can still be changed. The
            // names swapped in are equal to those they replace, so the key's hash stays right.
            if let Some(HashedParts { hash, parts }) = Arc::get_mut(&mut fresh.0) {
                debug_assert_eq!(*hash, parts.hash_code());
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
        &self.0.parts
    }
}

impl PartialEq for JobKey {
    fn eq(&self, other: &Self) -> bool {
        // The pods of a job share its key, so most comparisons end at the pointer; unequal hashes
        // turn most other keys away without reading their names.
        Arc::ptr_eq(&self.0, &other.0)
            || (self.0.hash == other.0.hash && self.0.parts == other.0.parts)
    }
}

impl Eq for JobKey {}

impl Hash for JobKey {
    fn hash<H: Hasher>(&self, state: &mut H) {
        state.write_u64(self.0.hash);
    }
}

impl PartialOrd for JobKey {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for JobKey {
    fn cmp(&self, other: &Self) -> Ordering {
        if Arc::ptr_eq(&self.0, &other.0) {
            return Ordering::Equal;
        }
        self.0.parts.cmp(&other.0.parts)
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
        self.0.parts.serialize(serializer)
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
    use std::collections::{BTreeMap, HashSet};

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

    fn controller(namespace: &str, kind: &str, name: impl Into<Name>) -> JobKey {
        JobKey::new(namespace, JobKind::Controller(Name::from(kind)), name)
    }

    /// As a map hashes it (one seed for all values).
    fn hashed(value: impl Hash) -> u64 {
        foldhash::fast::FixedState::default().hash_one(value)
    }

    #[test]
    fn job_keys_made_apart_are_equal_by_their_parts() {
        let key = controller("ns", "ReplicaSet", "web");
        let twin = controller("ns", "ReplicaSet", "web".to_owned());
        assert!(!key.same(&twin), "made apart");
        assert_eq!(key, twin);
        assert_eq!(key.hash_code(), twin.hash_code());
        assert_eq!(hashed(&key), hashed(&twin));
        assert_eq!(key.cmp(&twin), Ordering::Equal);
        let set: HashSet<JobKey> = [key.clone()].into();
        assert!(set.contains(&twin));
        for other in [
            controller("ns", "StatefulSet", "web"),
            controller("ns", "ReplicaSet", "web-2"),
            controller("ns-2", "ReplicaSet", "web"),
            JobKey::new("ns", JobKind::PodGroup, "web"),
            JobKey::new("ns", JobKind::Pod, "web"),
        ] {
            assert_ne!(key, other, "{other:?}");
            assert_ne!(key.hash_code(), other.hash_code(), "{other:?}");
            assert!(!set.contains(&other), "{other:?}");
        }
        assert_ne!(hashed(&key), hashed(controller("ns", "ReplicaSet", "api")));
    }

    #[test]
    fn job_keys_order_print_and_serialize_as_their_parts() {
        let keys = [
            controller("b", "ReplicaSet", "x"),
            JobKey::new("a", JobKind::Pod, "p"),
            controller("a", "StatefulSet", "x"),
            controller("a", "ReplicaSet", "y"),
            JobKey::new("a", JobKind::PodGroup, "z"),
            controller("a", "ReplicaSet", "x"),
        ];
        let mut sorted = keys.to_vec();
        sorted.sort();
        let mut parts: Vec<JobParts> = keys.iter().map(|key| (**key).clone()).collect();
        parts.sort();
        assert_eq!(
            sorted.iter().map(|key| (**key).clone()).collect::<Vec<_>>(),
            parts
        );
        let key = &keys[5];
        assert_eq!(
            serde_json::to_string(key).unwrap(),
            r#"{"namespace":"a","kind":{"Controller":"ReplicaSet"},"name":"x"}"#
        );
        assert_eq!(
            serde_json::to_string(key).unwrap(),
            serde_json::to_string(&**key).unwrap()
        );
        assert_eq!(
            format!("{key:?}"),
            r#"JobKey { namespace: "a", kind: Controller("ReplicaSet"), name: "x" }"#
        );
        assert_eq!(key.to_string(), "ReplicaSet a/x");
    }

    #[test]
    fn interning_a_job_key_keeps_its_hash() {
        let (mut keys, mut names) = (Interner::default(), Interner::default());
        let mut shared_namespace = Name::from("ns");
        names.intern(&mut shared_namespace);
        let mut first = controller("ns", "ReplicaSet", "web");
        let hash = first.hash_code();
        first.intern(&mut keys, &mut names);
        assert!(first.namespace.ptr_eq(&shared_namespace), "names interned");
        assert_eq!(first.hash_code(), hash);
        assert_eq!(first.hash_code(), first.0.parts.hash_code());
        let mut second = controller("ns", "ReplicaSet", "web");
        second.intern(&mut keys, &mut names);
        assert!(second.same(&first), "one key per job");
        let made_apart = controller("ns", "ReplicaSet", "web");
        assert_eq!(made_apart, first);
        assert_eq!(hashed(&made_apart), hashed(&first));
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
