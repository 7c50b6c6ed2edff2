//! The Kubernetes protobuf encoding for the core kinds tidal watches (pods, nodes, namespaces,
//! PodDisruptionBudgets). The API server encodes protobuf about three times faster than JSON and sends
//! about a third of the bytes, which at 150,000 pods is most of a cold start (the measured figures are in
//! docs/performance.md). Custom resources are never served as protobuf: they stay on JSON.
//!
//! Wire format (Kubernetes API concepts, "Protobuf encoding"): a list or object body is the magic
//! `k8s\0` followed by a `runtime.Unknown` whose `raw` holds the message; a watch stream is frames of a
//! 4-byte big-endian length and a `meta.v1.WatchEvent`, whose `object.raw` is again magic + Unknown.
//! Decoding never panics on bad bytes: every failure is a [`ProtobufError`].

pub(crate) mod convert;

use k8s_openapi::api::{
    core::v1::{Namespace, Node, Pod},
    policy::v1::PodDisruptionBudget,
};
use k8s_pb::{
    api::{core::v1 as pb, policy::v1 as pb_policy},
    apimachinery::pkg::{apis::meta::v1 as pb_meta, runtime::Unknown},
};
use prost::Message;

use crate::cluster::Ingest;

/// What `Accept` asks for: protobuf, else JSON (a server or proxy that cannot encode protobuf answers
/// JSON, which tidal then reads).
pub const ACCEPT_LIST: &str = "application/vnd.kubernetes.protobuf, application/json";
pub const ACCEPT_WATCH: &str = "application/vnd.kubernetes.protobuf;stream=watch, application/json";
const CONTENT_TYPE: &str = "application/vnd.kubernetes.protobuf";
const MAGIC: &[u8; 4] = b"k8s\0";
/// A frame longer than this is refused as corrupt rather than buffered: no single object comes close
/// (etcd's default request limit is 1.5 MiB).
pub const MAX_FRAME: usize = 64 << 20;

#[derive(Debug, thiserror::Error, PartialEq)]
pub enum ProtobufError {
    #[error("not a Kubernetes protobuf body (no k8s\\0 magic)")]
    NoMagic,
    #[error("protobuf body without a raw message")]
    Empty,
    #[error("undecodable protobuf: {0}")]
    Decode(String),
    #[error("watch frame of {0} bytes exceeds the limit")]
    FrameTooLarge(usize),
    #[error("watch event of unknown type {0:?}")]
    EventType(String),
}

impl From<prost::DecodeError> for ProtobufError {
    fn from(error: prost::DecodeError) -> Self {
        ProtobufError::Decode(error.to_string())
    }
}

/// Whether a response's `Content-Type` is protobuf.
pub fn is_protobuf(content_type: Option<&str>) -> bool {
    content_type.is_some_and(|t| t.trim_start().starts_with(CONTENT_TYPE))
}

/// The raw message inside a `k8s\0` + `runtime.Unknown` envelope.
pub fn unwrap_envelope(body: &[u8]) -> Result<Vec<u8>, ProtobufError> {
    let rest = body.strip_prefix(MAGIC).ok_or(ProtobufError::NoMagic)?;
    Unknown::decode(rest)?.raw.ok_or(ProtobufError::Empty)
}

/// A kind tidal can read in protobuf: the message types, and the conversion to the fields it reads.
pub trait ProtobufKind: Ingest {
    type Message: Message + Default;
    type List: Message + Default;
    fn convert(message: Self::Message) -> Self;
    fn split(list: Self::List) -> (Vec<Self::Message>, Option<pb_meta::ListMeta>);
}

macro_rules! protobuf_kind {
    ($kind:ty, $message:ty, $list:ty, $convert:path) => {
        impl ProtobufKind for $kind {
            type Message = $message;
            type List = $list;
            fn convert(message: Self::Message) -> Self {
                $convert(message)
            }
            fn split(list: Self::List) -> (Vec<Self::Message>, Option<pb_meta::ListMeta>) {
                (list.items, list.metadata)
            }
        }
    };
}

protobuf_kind!(Pod, pb::Pod, pb::PodList, convert::pod);
protobuf_kind!(Node, pb::Node, pb::NodeList, convert::node);
protobuf_kind!(
    Namespace,
    pb::Namespace,
    pb::NamespaceList,
    convert::namespace
);
protobuf_kind!(
    PodDisruptionBudget,
    pb_policy::PodDisruptionBudget,
    pb_policy::PodDisruptionBudgetList,
    convert::pdb
);

/// One page of a list: the objects, the list's resourceVersion and the continue token (empty: last).
pub struct Page<K> {
    pub items: Vec<K>,
    pub resource_version: String,
    pub continue_token: Option<String>,
}

/// Decodes a protobuf list page. The page's messages are converted one by one and dropped, so the
/// full protobuf objects of a page never coexist with their converted forms.
pub fn decode_list<K: ProtobufKind>(body: &[u8]) -> Result<Page<K>, ProtobufError> {
    let raw = unwrap_envelope(body)?;
    let (messages, meta) = K::split(K::List::decode(raw.as_slice())?);
    drop(raw);
    let meta = meta.unwrap_or_default();
    Ok(Page {
        items: messages.into_iter().map(K::convert).collect(),
        resource_version: meta.resource_version.unwrap_or_default(),
        continue_token: meta.r#continue.filter(|c| !c.is_empty()),
    })
}

/// Every Kubernetes list message: its metadata, and its items still encoded, so that each is
/// decoded on its own.
#[derive(Clone, PartialEq, prost::Message)]
struct RawList {
    #[prost(message, optional, tag = "1")]
    metadata: Option<pb_meta::ListMeta>,
    #[prost(bytes = "vec", repeated, tag = "2")]
    items: Vec<Vec<u8>>,
}

/// [`decode_list`], object by object: an item that does not decode is an `Err` in its place, and the
/// others are read.
pub fn decode_list_each<K: ProtobufKind>(
    body: &[u8],
) -> Result<Page<Result<K, ProtobufError>>, ProtobufError> {
    let raw = unwrap_envelope(body)?;
    let list = RawList::decode(raw.as_slice())?;
    drop(raw);
    let meta = list.metadata.unwrap_or_default();
    Ok(Page {
        items: list
            .items
            .into_iter()
            .map(|item| Ok(K::convert(K::Message::decode(item.as_slice())?)))
            .collect(),
        resource_version: meta.resource_version.unwrap_or_default(),
        continue_token: meta.r#continue.filter(|c| !c.is_empty()),
    })
}

/// One watch event as tidal uses it.
#[derive(Debug)]
pub enum WatchFrame<K> {
    Added(K),
    Modified(K),
    Deleted(K),
    /// A resourceVersion to resume from; `initial_events_end` marks the end of a watch-list's initial
    /// events (the `k8s.io/initial-events-end` annotation).
    Bookmark {
        version: String,
        initial_events_end: bool,
    },
    /// An added, changed or deleted object that does not decode: the stream itself is sound.
    Unreadable(ProtobufError),
    /// The server ended the watch with a Status (410 Gone: the resourceVersion is too old).
    Error {
        code: i32,
        message: String,
    },
}

/// Splits a protobuf watch stream into frames as bytes arrive. A frame is complete when its length
/// prefix and all its bytes are buffered; nothing is decoded from a partial frame.
#[derive(Default)]
pub struct FrameReader {
    buffer: Vec<u8>,
    /// Where the next frame starts: frames taken are dropped from the buffer only when bytes arrive,
    /// so that a chunk of many frames (a watch-list's initial events) is not shifted once per frame.
    start: usize,
}

impl FrameReader {
    pub fn push(&mut self, bytes: &[u8]) {
        self.buffer.drain(..self.start);
        self.start = 0;
        self.buffer.extend_from_slice(bytes);
    }

    /// The next complete frame's bytes, if one is buffered.
    pub fn next_frame(&mut self) -> Result<Option<Vec<u8>>, ProtobufError> {
        let rest = &self.buffer[self.start..];
        let Some(prefix) = rest.first_chunk::<4>() else {
            return Ok(None);
        };
        let length = u32::from_be_bytes(*prefix) as usize;
        if length > MAX_FRAME {
            return Err(ProtobufError::FrameTooLarge(length));
        }
        if rest.len() < 4 + length {
            return Ok(None);
        }
        let frame = rest[4..4 + length].to_vec();
        self.start += 4 + length;
        Ok(Some(frame))
    }

    /// Bytes of an unfinished frame left when the stream ended: a truncated stream.
    pub fn pending(&self) -> usize {
        self.buffer.len() - self.start
    }
}

/// The annotation on the bookmark that ends a watch-list's initial events (KEP-3157).
pub const INITIAL_EVENTS_END: &str = "k8s.io/initial-events-end";

/// Whether a bookmark's annotations mark the end of the initial events.
pub fn marks_initial_events_end(
    annotations: Option<&std::collections::BTreeMap<String, String>>,
) -> bool {
    annotations
        .and_then(|a| a.get(INITIAL_EVENTS_END))
        .is_some_and(|v| v == "true")
}

/// Decodes one watch frame (a `meta.v1.WatchEvent`).
pub fn decode_frame<K: ProtobufKind>(frame: &[u8]) -> Result<WatchFrame<K>, ProtobufError> {
    let event = pb_meta::WatchEvent::decode(frame)?;
    let kind = event.r#type.unwrap_or_default();
    let raw = event
        .object
        .and_then(|o| o.raw)
        .ok_or(ProtobufError::Empty)?;
    let raw = unwrap_envelope(&raw)?;
    let object =
        || -> Result<K, ProtobufError> { Ok(K::convert(K::Message::decode(raw.as_slice())?)) };
    let event = |wrap: fn(K) -> WatchFrame<K>| object().map_or_else(WatchFrame::Unreadable, wrap);
    Ok(match kind.as_str() {
        "ADDED" => event(WatchFrame::Added),
        "MODIFIED" => event(WatchFrame::Modified),
        "DELETED" => event(WatchFrame::Deleted),
        "BOOKMARK" => {
            let object = object()?;
            let meta = object.meta();
            WatchFrame::Bookmark {
                version: meta.resource_version.clone().unwrap_or_default(),
                initial_events_end: marks_initial_events_end(meta.annotations.as_ref()),
            }
        }
        "ERROR" => {
            let status = pb_meta::Status::decode(raw.as_slice())?;
            WatchFrame::Error {
                code: status.code.unwrap_or_default(),
                message: status.message.unwrap_or_default(),
            }
        }
        other => return Err(ProtobufError::EventType(other.to_owned())),
    })
}

#[cfg(test)]
mod tests;
