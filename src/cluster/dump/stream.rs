//! Reading a saved cluster item by item: a `List`'s `items` are handed over one at a time while the
//! parser is still inside the list, so a dump of 150,000 pods never exists in memory as one value
//! (each item is a `serde_json::Value` only until it is folded into the cache). JSON goes through
//! serde_json's reader; YAML through serde-saphyr's document iterator, which parses as it reads.
//!
//! Duplicate keys are refused in both formats by the same check (saphyr's own is switched off), so
//! the error names the item and the key's path within it.

use std::{
    any::Any,
    cell::{Cell, RefCell},
    fmt,
    io::{self, BufRead, Read},
    marker::PhantomData,
    rc::Rc,
};

use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};

/// Where the items go. An `Err` stops reading: the sink keeps its own error.
pub(super) trait Sink {
    /// A document (a YAML document, the JSON value, or an element of a top-level JSON array) starts.
    fn document(&mut self);
    /// One object, or whatever stands where one should (it is the sink's job to refuse a scalar).
    /// `duplicate` is the path of the first key that occurs twice in one mapping of the item.
    fn item(&mut self, item: Value, duplicate: Option<String>) -> Result<(), Stopped>;
}

/// The sink refused an item; its error says why.
#[derive(Debug)]
pub(super) struct Stopped;

/// What the parser's error is said to be when the sink stopped it (never shown: the sink's error is).
const STOPPED: &str = "stopped by an item";

/// Reads at most `limit` bytes; one more is an error, and `hit` remembers it so that the caller can
/// say which limit it was whatever the parser makes of the I/O error.
pub(super) struct Capped<R> {
    inner: R,
    read: u64,
    limit: u64,
    hit: Rc<Cell<bool>>,
}

impl<R> Capped<R> {
    pub(super) fn new(inner: R, limit: u64) -> (Self, Rc<Cell<bool>>) {
        let hit = Rc::new(Cell::new(false));
        let capped = Capped {
            inner,
            read: 0,
            limit,
            hit: hit.clone(),
        };
        (capped, hit)
    }
}

impl<R: Read> Read for Capped<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        // One byte past the limit is enough to know the input is too large.
        let room = self.limit.saturating_sub(self.read).saturating_add(1);
        let max = buf.len().min(usize::try_from(room).unwrap_or(usize::MAX));
        let n = self.inner.read(&mut buf[..max])?;
        self.read += n as u64;
        if self.read > self.limit {
            self.hit.set(true);
            return Err(io::Error::new(
                io::ErrorKind::FileTooLarge,
                "input larger than the limit",
            ));
        }
        Ok(n)
    }
}

/// Passes bytes through, checking that they are UTF-8 text as they go: the first byte that is not
/// fails the read with an error naming its offset and line, where the YAML parser would only say
/// "IO error". A character split between two reads is checked when its end arrives.
pub(super) struct Utf8Checked<R> {
    inner: R,
    /// Bytes passed so far.
    offset: u64,
    /// Newlines passed so far.
    lines: u64,
    /// The start of a character whose end has not been read yet.
    carry: [u8; 3],
    carried: usize,
}

impl<R> Utf8Checked<R> {
    pub(super) fn new(inner: R) -> Self {
        Utf8Checked {
            inner,
            offset: 0,
            lines: 0,
            carry: [0; 3],
            carried: 0,
        }
    }

    fn pass(&mut self, bytes: &[u8]) {
        self.offset += bytes.len() as u64;
        self.lines += bytes.iter().filter(|&&b| b == b'\n').count() as u64;
    }

    /// The error for the byte `byte` at `offset`.
    fn invalid(&self, offset: u64, byte: u8) -> io::Error {
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!(
                "not UTF-8 text: byte 0x{byte:02X} at byte offset {offset} (line {})",
                self.lines + 1
            ),
        )
    }

    fn check(&mut self, mut bytes: &[u8]) -> io::Result<()> {
        if self.carried > 0 {
            let start = self.offset - self.carried as u64;
            let length = match self.carry[0] {
                0xC0..=0xDF => 2,
                0xE0..=0xEF => 3,
                _ => 4,
            };
            let take = (length - self.carried).min(bytes.len());
            let mut sequence = [0u8; 4];
            sequence[..self.carried].copy_from_slice(&self.carry[..self.carried]);
            sequence[self.carried..self.carried + take].copy_from_slice(&bytes[..take]);
            let filled = self.carried + take;
            match std::str::from_utf8(&sequence[..filled]) {
                Ok(_) => self.carried = 0,
                Err(e) if e.error_len().is_none() => {
                    self.carry[..filled].copy_from_slice(&sequence[..filled]);
                    self.carried = filled;
                }
                Err(_) => return Err(self.invalid(start, self.carry[0])),
            }
            self.pass(&bytes[..take]);
            bytes = &bytes[take..];
        }
        if let Err(e) = std::str::from_utf8(bytes) {
            let valid = e.valid_up_to();
            self.pass(&bytes[..valid]);
            if e.error_len().is_some() {
                return Err(self.invalid(self.offset, bytes[valid]));
            }
            let tail = &bytes[valid..];
            self.carry[..tail.len()].copy_from_slice(tail);
            self.carried = tail.len();
            self.pass(tail);
            return Ok(());
        }
        self.pass(bytes);
        Ok(())
    }
}

impl<R: Read> Read for Utf8Checked<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        if n == 0 && self.carried > 0 {
            let start = self.offset - self.carried as u64;
            return Err(self.invalid(start, self.carry[0]));
        }
        self.check(&buf[..n])?;
        Ok(n)
    }
}

/// Skips leading whitespace; `None` at the end of the input, else whether the text starts like JSON.
pub(super) fn looks_like_json(reader: &mut impl BufRead) -> io::Result<Option<bool>> {
    loop {
        let buf = reader.fill_buf()?;
        if buf.is_empty() {
            return Ok(None);
        }
        match buf.iter().position(|b| !b.is_ascii_whitespace()) {
            Some(at) => {
                let first = buf[at];
                reader.consume(at);
                return Ok(Some(first == b'{' || first == b'['));
            }
            None => {
                let len = buf.len();
                reader.consume(len);
            }
        }
    }
}

/// Streams a JSON text (an object, a `List`, or an array of them) into `sink`.
pub(super) fn read_json(reader: impl Read, sink: &mut dyn Sink) -> Result<(), serde_json::Error> {
    let mut deserializer = serde_json::Deserializer::from_reader(reader);
    DocumentSeed { sink }.deserialize(&mut deserializer)?;
    deserializer.end()
}

thread_local! {
    /// The sink of the YAML document being read. saphyr's multi-document iterator takes a type, not
    /// a seed, so the type's `Deserialize` finds its sink here; [`read_yaml`] puts it in and takes it
    /// back out.
    static YAML_SINK: RefCell<Option<Box<dyn Any>>> = const { RefCell::new(None) };
}

/// One YAML document, streamed into the sink of type `S` found in [`YAML_SINK`].
struct YamlDocument<S>(PhantomData<S>);

impl<'de, S: Sink + 'static> de::Deserialize<'de> for YamlDocument<S> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        YAML_SINK.with_borrow_mut(|slot| {
            let sink = slot
                .as_mut()
                .and_then(|sink| sink.downcast_mut::<S>())
                .ok_or_else(|| de::Error::custom("no sink for the YAML document"))?;
            DocumentSeed { sink }.deserialize(deserializer)?;
            Ok(YamlDocument(PhantomData))
        })
    }
}

/// Streams every document of a YAML text into `sink`; returns the sink with the first error, if any.
pub(super) fn read_yaml<S: Sink + 'static>(
    mut reader: impl Read,
    options: serde_saphyr::Options,
    sink: S,
) -> (S, Result<(), serde_saphyr::Error>) {
    YAML_SINK.with_borrow_mut(|slot| *slot = Some(Box::new(sink)));
    let mut result = Ok(());
    for document in serde_saphyr::read_with_options::<_, YamlDocument<S>>(&mut reader, options) {
        if let Err(error) = document {
            result = Err(error);
            break;
        }
    }
    let sink = YAML_SINK
        .with_borrow_mut(Option::take)
        .and_then(|sink| sink.downcast::<S>().ok())
        .expect("read_yaml put the sink there and nothing else takes it");
    (*sink, result)
}

/// A document: a `List` (its items streamed), an object, or a top-level array of documents.
struct DocumentSeed<'s> {
    sink: &'s mut dyn Sink,
}

impl<'de> DeserializeSeed<'de> for DocumentSeed<'_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_any(self)
    }
}

fn stop<E: de::Error>(_: Stopped) -> E {
    E::custom(STOPPED)
}

impl DocumentSeed<'_> {
    /// A document that is not a mapping is handed over as it is: the sink says why it is no object.
    fn scalar<E: de::Error>(self, value: Value) -> Result<(), E> {
        self.sink.document();
        self.sink.item(value, None).map_err(stop)
    }
}

impl<'de> Visitor<'de> for DocumentSeed<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a Kubernetes object or List")
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<(), E> {
        self.scalar(Value::Bool(v))
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<(), E> {
        self.scalar(Value::from(v))
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<(), E> {
        self.scalar(Value::from(v))
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<(), E> {
        self.scalar(Number::from_f64(v).map_or(Value::Null, Value::Number))
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<(), E> {
        self.scalar(Value::String(v.to_owned()))
    }
    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        self.scalar(Value::Null)
    }
    fn visit_none<E: de::Error>(self) -> Result<(), E> {
        self.scalar(Value::Null)
    }
    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_any(self)
    }

    /// A top-level sequence holds documents (`[{...}, {...}]` in JSON, `- {...}` in YAML).
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while seq
            .next_element_seed(DocumentSeed {
                sink: &mut *self.sink,
            })?
            .is_some()
        {}
        Ok(())
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        self.sink.document();
        let duplicate = RefCell::new(None);
        let mut fields = Map::new();
        // Items read before the list's kind (kubectl sorts keys: `apiVersion, items, kind`) that have
        // no kind of their own wait for it; items with a kind go to the sink at once.
        let mut waiting: Vec<(Value, Option<String>)> = Vec::new();
        let mut saw_items = false;
        while let Some(key) = map.next_key::<String>()? {
            if fields.contains_key(&key) || (key == "items" && saw_items) {
                return Err(de::Error::custom(format!("duplicate key {key:?}")));
            }
            let kind = fields.get("kind").and_then(Value::as_str);
            if key == "items" && kind.is_none_or(|k| k.ends_with("List")) {
                saw_items = true;
                let list = kind.map(|kind| ListKind {
                    kind: kind.trim_end_matches("List").to_owned(),
                    api_version: fields.get("apiVersion").cloned(),
                });
                map.next_value_seed(ItemsSeed {
                    sink: &mut *self.sink,
                    list,
                    waiting: &mut waiting,
                })?;
                continue;
            }
            let node = PathNode {
                step: Step::Key(&key),
                parent: None,
            };
            let value = map.next_value_seed(StrictValue {
                at: Some(&node),
                duplicate: &duplicate,
            })?;
            fields.insert(key, value);
        }
        let kind = fields.get("kind").and_then(Value::as_str).unwrap_or("");
        match kind.strip_suffix("List") {
            Some(item_kind) => {
                let list = ListKind {
                    kind: item_kind.to_owned(),
                    api_version: fields.get("apiVersion").cloned(),
                };
                for (mut item, duplicate) in waiting {
                    list.fill_in(&mut item);
                    self.sink.item(item, duplicate).map_err(stop)?;
                }
                Ok(())
            }
            None if saw_items => Err(de::Error::custom(format!(
                "`items` comes before `kind: {kind}`, which is not a List: tidal reads `items` \
                 only in Lists"
            ))),
            None => self
                .sink
                .item(Value::Object(fields), duplicate.into_inner())
                .map_err(stop),
        }
    }
}

/// A typed list's kind (`NodeMetricsList` → `NodeMetrics`), given to items that carry none.
struct ListKind {
    kind: String,
    api_version: Option<Value>,
}

impl ListKind {
    fn fill_in(&self, item: &mut Value) {
        if let Value::Object(fields) = item
            && !self.kind.is_empty()
            && !fields.contains_key("kind")
        {
            fields.insert("kind".to_owned(), Value::String(self.kind.clone()));
            if let Some(api_version) = &self.api_version {
                fields
                    .entry("apiVersion")
                    .or_insert_with(|| api_version.clone());
            }
        }
    }
}

/// A `List`'s `items`, each handed to the sink as soon as it is read.
struct ItemsSeed<'s, 'w> {
    sink: &'s mut dyn Sink,
    /// `None` while the list's kind has not been read yet.
    list: Option<ListKind>,
    waiting: &'w mut Vec<(Value, Option<String>)>,
}

impl<'de> DeserializeSeed<'de> for ItemsSeed<'_, '_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl ItemsSeed<'_, '_> {
    fn not_a_list<E: de::Error>(&self, what: impl fmt::Display) -> E {
        let kind = self.list.as_ref().map_or("", |l| l.kind.as_str());
        E::custom(format!("a {kind}List's items must be a list, not {what}"))
    }
}

impl<'de> Visitor<'de> for ItemsSeed<'_, '_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a list of Kubernetes objects")
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<(), E> {
        Err(self.not_a_list(v))
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<(), E> {
        Err(self.not_a_list(v))
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<(), E> {
        Err(self.not_a_list(v))
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<(), E> {
        Err(self.not_a_list(v))
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<(), E> {
        Err(self.not_a_list(format!("{v:?}")))
    }
    fn visit_map<A: MapAccess<'de>>(self, _: A) -> Result<(), A::Error> {
        Err(self.not_a_list("a mapping"))
    }
    // `kubectl get` of nothing writes `items: []`; some tools write null.
    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        Ok(())
    }
    fn visit_none<E: de::Error>(self) -> Result<(), E> {
        Ok(())
    }
    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_any(self)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        loop {
            let duplicate = RefCell::new(None);
            let Some(mut item) = seq.next_element_seed(StrictValue {
                at: None,
                duplicate: &duplicate,
            })?
            else {
                return Ok(());
            };
            let duplicate = duplicate.into_inner();
            let has_kind = item.get("kind").is_some();
            match &self.list {
                Some(list) => list.fill_in(&mut item),
                None if !has_kind && item.is_object() => {
                    self.waiting.push((item, duplicate));
                    continue;
                }
                None => {}
            }
            self.sink.item(item, duplicate).map_err(stop)?;
        }
    }
}

/// Where in an item a key is, for naming a duplicate: built on the stack only along the current
/// path, so reading costs no allocation for it.
#[derive(Clone, Copy)]
enum Step<'a> {
    Key(&'a str),
    Index(usize),
}

struct PathNode<'a> {
    step: Step<'a>,
    parent: Option<&'a PathNode<'a>>,
}

impl PathNode<'_> {
    /// `metadata.labels.app`, `spec.containers[0].name`.
    fn render(&self) -> String {
        let mut steps = Vec::new();
        let mut node = Some(self);
        while let Some(n) = node {
            steps.push(n.step);
            node = n.parent;
        }
        let mut text = String::new();
        for step in steps.into_iter().rev() {
            match step {
                Step::Key(key) => {
                    if !text.is_empty() {
                        text.push('.');
                    }
                    text.push_str(key);
                }
                Step::Index(index) => text.push_str(&format!("[{index}]")),
            }
        }
        text
    }
}

/// A `serde_json::Value` that remembers (in `duplicate`) the first key it saw twice in one mapping,
/// where serde_json's own would silently keep the last.
struct StrictValue<'p> {
    at: Option<&'p PathNode<'p>>,
    duplicate: &'p RefCell<Option<String>>,
}

impl<'de> DeserializeSeed<'de> for StrictValue<'_> {
    type Value = Value;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for StrictValue<'_> {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any value")
    }

    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }
    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::from(v))
    }
    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::from(v))
    }
    fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
        Ok(Number::from_f64(v).map_or(Value::Null, Value::Number))
    }
    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_owned()))
    }
    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }
    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        deserializer.deserialize_any(self)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut out = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(64));
        loop {
            let node = PathNode {
                step: Step::Index(out.len()),
                parent: self.at,
            };
            match seq.next_element_seed(StrictValue {
                at: Some(&node),
                duplicate: self.duplicate,
            })? {
                Some(value) => out.push(value),
                None => return Ok(Value::Array(out)),
            }
        }
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut out = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            let node = PathNode {
                step: Step::Key(&key),
                parent: self.at,
            };
            let value = map.next_value_seed(StrictValue {
                at: Some(&node),
                duplicate: self.duplicate,
            })?;
            if out.contains_key(&key) {
                let mut duplicate = self.duplicate.borrow_mut();
                if duplicate.is_none() {
                    *duplicate = Some(node.render());
                }
            }
            out.insert(key, value);
        }
        Ok(Value::Object(out))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Reads `bytes` through [`Utf8Checked`] `chunk` bytes at a time.
    fn read_in_chunks(bytes: &[u8], chunk: usize) -> io::Result<Vec<u8>> {
        struct Chunks<'a>(&'a [u8], usize);
        impl Read for Chunks<'_> {
            fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
                let n = self.0.len().min(self.1).min(buf.len());
                buf[..n].copy_from_slice(&self.0[..n]);
                self.0 = &self.0[n..];
                Ok(n)
            }
        }
        let mut out = Vec::new();
        Utf8Checked::new(Chunks(bytes, chunk)).read_to_end(&mut out)?;
        Ok(out)
    }

    /// Characters of two, three and four bytes split across reads at every point pass; a bad byte is
    /// named at its offset however the input is cut, and so is a character cut off by the end.
    #[test]
    fn utf8_is_checked_across_reads() {
        let text = "a\u{e9}b\n\u{20ac}c\u{1f600}d\n".as_bytes();
        for chunk in 1..=text.len() {
            assert_eq!(
                read_in_chunks(text, chunk).unwrap(),
                text,
                "chunks of {chunk}"
            );
        }
        let mut bad = text.to_vec();
        bad.insert(5, 0xff);
        let cut_short = &text[..text.len() - 3];
        for chunk in 1..=bad.len() {
            let error = read_in_chunks(&bad, chunk).unwrap_err().to_string();
            assert!(
                error.contains("byte 0xFF at byte offset 5 (line 2)"),
                "chunks of {chunk}: {error}"
            );
            let error = read_in_chunks(cut_short, chunk).unwrap_err().to_string();
            assert!(
                error.contains("byte 0xF0 at byte offset 9 (line 2)"),
                "chunks of {chunk}: {error}"
            );
        }
        // A continuation byte where a character should start, and a start byte without its end.
        let error = read_in_chunks(b"ab\x80", 2).unwrap_err().to_string();
        assert!(error.contains("byte 0x80 at byte offset 2"), "{error}");
        let error = read_in_chunks(b"a\xe2\x82z", 2).unwrap_err().to_string();
        assert!(error.contains("byte 0xE2 at byte offset 1"), "{error}");
    }

    #[derive(Default)]
    struct Collect {
        documents: usize,
        items: Vec<(Value, Option<String>)>,
    }

    impl Sink for Collect {
        fn document(&mut self) {
            self.documents += 1;
        }
        fn item(&mut self, item: Value, duplicate: Option<String>) -> Result<(), Stopped> {
            self.items.push((item, duplicate));
            Ok(())
        }
    }

    fn json(text: &str) -> Collect {
        let mut sink = Collect::default();
        read_json(text.as_bytes(), &mut sink).unwrap();
        sink
    }

    fn yaml(text: &str) -> Collect {
        let (sink, result) = read_yaml(text.as_bytes(), yaml_options(), Collect::default());
        result.unwrap();
        sink
    }

    fn yaml_options() -> serde_saphyr::Options {
        let mut options = serde_saphyr::Options::default();
        options.duplicate_keys = serde_saphyr::DuplicateKeyPolicy::LastWins;
        options
    }

    #[test]
    fn a_typed_list_gives_its_kind_to_items_before_and_after_the_kind_is_read() {
        // kubectl sorts keys, so `items` comes before `kind`.
        for text in [
            r#"{"apiVersion": "metrics.k8s.io/v1beta1", "items": [{"metadata": {"name": "n"}}], "kind": "NodeMetricsList"}"#,
            r#"{"kind": "NodeMetricsList", "apiVersion": "metrics.k8s.io/v1beta1", "items": [{"metadata": {"name": "n"}}]}"#,
        ] {
            let sink = json(text);
            assert_eq!(sink.items.len(), 1, "{text}");
            assert_eq!(sink.items[0].0["kind"], "NodeMetrics");
            assert_eq!(sink.items[0].0["apiVersion"], "metrics.k8s.io/v1beta1");
        }
    }

    #[test]
    fn duplicate_keys_are_found_with_their_path_in_both_formats() {
        let sink = json(
            r#"{"kind": "List", "items": [{"kind": "Pod", "spec": {"containers": [{"name": "a", "name": "b"}]}}]}"#,
        );
        assert_eq!(sink.items[0].1.as_deref(), Some("spec.containers[0].name"));
        let sink = yaml("kind: Pod\nmetadata:\n  labels:\n    app: a\n    app: b\n");
        assert_eq!(sink.items[0].1.as_deref(), Some("metadata.labels.app"));
    }

    #[test]
    fn documents_arrays_and_scalars() {
        let sink = yaml("kind: Pod\n---\n---\nkind: List\nitems:\n- kind: Node\n- kind: Pod\n");
        assert_eq!((sink.documents, sink.items.len()), (2, 3));
        let sink = json(r#"[{"kind": "Pod"}, 5]"#);
        assert_eq!((sink.documents, sink.items.len()), (2, 2));
        assert_eq!(sink.items[1].0, Value::from(5));
        assert_eq!(json("[]").documents, 0);
    }

    #[test]
    fn items_of_an_object_that_is_no_list_are_refused_when_they_come_first() {
        let mut sink = Collect::default();
        let error = read_json(
            r#"{"items": [{"kind": "Pod"}], "kind": "Pod"}"#.as_bytes(),
            &mut sink,
        )
        .unwrap_err();
        assert!(error.to_string().contains("only in Lists"), "{error}");
        // After the kind, `items` is an ordinary field.
        let sink = json(r#"{"kind": "Pod", "items": [1]}"#);
        assert_eq!(sink.items[0].0["items"], serde_json::json!([1]));
    }

    #[test]
    fn the_cap_stops_reading_one_byte_past_it() {
        let (mut capped, hit) = Capped::new(&b"0123456789"[..], 10);
        let mut out = Vec::new();
        capped.read_to_end(&mut out).unwrap();
        assert!(!hit.get());
        let (mut capped, hit) = Capped::new(&b"0123456789"[..], 9);
        assert!(capped.read_to_end(&mut Vec::new()).is_err());
        assert!(hit.get());
    }
}
