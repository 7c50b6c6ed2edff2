//! One watch response read as events, one at a time, whichever encoding the server chose: protobuf
//! frames (`;stream=watch`) or JSON lines. The same reader serves a plain watch and a watch-list, whose
//! initial events and later changes arrive on one stream.

use futures::StreamExt;
use http_body_util::{BodyDataStream, BodyExt};
use kube::core::WatchEvent;
use serde::de::DeserializeOwned;

use super::Lenient;
use crate::runtime::protobuf::{self, FrameReader, ProtobufKind, WatchFrame};

/// One event of a watch stream.
#[derive(Debug)]
pub(crate) enum StreamEvent<K> {
    Added(Lenient<K>),
    Modified(Lenient<K>),
    Deleted(Lenient<K>),
    /// A resourceVersion to resume from; `initial_events_end` ends a watch-list's initial events.
    Bookmark {
        version: String,
        initial_events_end: bool,
    },
    /// An object whose bytes do not decode, not even its name (protobuf): the stream itself is sound.
    Unreadable(String),
    /// The server ended the watch with a Status.
    Error {
        code: i32,
        message: String,
    },
}

/// Why a stream cannot be read on.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum StreamFault {
    /// The connection failed: nothing says the events read so far were wrong.
    Transport(String),
    /// Bytes that are not a watch event, or a stream that ended mid-event: what follows is unknown.
    Corrupt(String),
}

/// A watch response's body, read event by event.
pub(crate) struct EventStream {
    body: BodyDataStream<kube::client::Body>,
    protobuf: bool,
    frames: FrameReader,
    lines: Vec<u8>,
}

impl EventStream {
    /// `protobuf`: whether the response's `Content-Type` says protobuf frames (else JSON lines).
    pub(crate) fn new(body: kube::client::Body, protobuf: bool) -> Self {
        EventStream {
            body: body.into_data_stream(),
            protobuf,
            frames: FrameReader::default(),
            lines: Vec::new(),
        }
    }

    /// The next event; `Ok(None)` when the server closed the stream between two events.
    pub(crate) async fn next<K>(&mut self) -> Result<Option<StreamEvent<K>>, StreamFault>
    where
        K: ProtobufKind + DeserializeOwned,
    {
        loop {
            if let Some(event) = self.buffered::<K>()? {
                return Ok(Some(event));
            }
            match self.body.next().await {
                Some(Ok(chunk)) if self.protobuf => self.frames.push(&chunk),
                Some(Ok(chunk)) => self.lines.extend_from_slice(&chunk),
                Some(Err(error)) => return Err(StreamFault::Transport(error.to_string())),
                None if self.frames.pending() > 0 || !blank(&self.lines) => {
                    // What came before was whole; the rest is unknown.
                    return Err(StreamFault::Corrupt(
                        "watch stream ended mid-event".to_owned(),
                    ));
                }
                None => return Ok(None),
            }
        }
    }

    /// The next event already buffered whole, if any.
    fn buffered<K>(&mut self) -> Result<Option<StreamEvent<K>>, StreamFault>
    where
        K: ProtobufKind + DeserializeOwned,
    {
        let corrupt = |error: &dyn std::fmt::Display| StreamFault::Corrupt(error.to_string());
        if self.protobuf {
            let Some(frame) = self.frames.next_frame().map_err(|e| corrupt(&e))? else {
                return Ok(None);
            };
            let frame = protobuf::decode_frame::<K>(&frame).map_err(|e| corrupt(&e))?;
            return Ok(Some(from_frame(frame)));
        }
        while let Some(end) = self.lines.iter().position(|b| *b == b'\n') {
            let line: Vec<u8> = self.lines.drain(..=end).collect();
            if blank(&line) {
                continue;
            }
            let event: WatchEvent<Lenient<K>> =
                serde_json::from_slice(&line).map_err(|e| corrupt(&e))?;
            return Ok(Some(from_json(event)));
        }
        Ok(None)
    }
}

fn blank(bytes: &[u8]) -> bool {
    bytes.iter().all(u8::is_ascii_whitespace)
}

fn from_frame<K>(frame: WatchFrame<K>) -> StreamEvent<K> {
    let read = |object| Lenient::Read {
        object,
        clamped: Vec::new(),
    };
    match frame {
        WatchFrame::Added(o) => StreamEvent::Added(read(o)),
        WatchFrame::Modified(o) => StreamEvent::Modified(read(o)),
        WatchFrame::Deleted(o) => StreamEvent::Deleted(read(o)),
        WatchFrame::Bookmark {
            version,
            initial_events_end,
        } => StreamEvent::Bookmark {
            version,
            initial_events_end,
        },
        WatchFrame::Unreadable(error) => StreamEvent::Unreadable(error.to_string()),
        WatchFrame::Error { code, message } => StreamEvent::Error { code, message },
    }
}

fn from_json<K>(event: WatchEvent<Lenient<K>>) -> StreamEvent<K> {
    match event {
        WatchEvent::Added(o) => StreamEvent::Added(o),
        WatchEvent::Modified(o) => StreamEvent::Modified(o),
        WatchEvent::Deleted(o) => StreamEvent::Deleted(o),
        WatchEvent::Bookmark(b) => StreamEvent::Bookmark {
            initial_events_end: protobuf::marks_initial_events_end(Some(&b.metadata.annotations)),
            version: b.metadata.resource_version,
        },
        WatchEvent::Error(status) => StreamEvent::Error {
            code: i32::from(status.code),
            message: status.message,
        },
    }
}
