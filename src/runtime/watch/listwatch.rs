//! List and watch for the core kinds, in protobuf when the API server speaks it (see
//! `runtime::protobuf`), else in JSON: decided per response by its `Content-Type`, so a server or proxy
//! that answers JSON works unchanged. The initial state (and every relist) comes from a streaming
//! watch-list, which the API server serves from its watch cache with bounded memory, and whose stream
//! then goes on as the watch; a server that does not do it gets a paginated list (pages of 500, folded
//! into the cache one by one and dropped) and a watch from the list's resourceVersion, as
//! kube-runtime's watcher does for the JSON-only kinds (see `initial_sync` for when and for how long).
//! Either way a kind is synced only once its whole state was applied; a 410 Gone, a corrupt or
//! truncated frame, or an error mid-list starts a full relist, which also removes what vanished
//! meanwhile. Never an unpaginated list: at 150,000 pods that can take the API server down.

use std::{collections::HashSet, sync::Arc, time::Duration};

use http::{Request, header};
use http_body_util::BodyExt;
use jiff::Timestamp;
use kube::{Client, Resource, core::ObjectList, runtime::watcher};
use serde::de::DeserializeOwned;
use tracing::{debug, info, warn};

pub use super::initial_sync::InitialSync;
use super::{
    Lenient, Relist, WatchObserver, apply_lenient_event,
    events::{EventStream, StreamEvent, StreamFault},
    initial_sync::{Fallback, INITIAL_EVENTS_IDLE},
};
use crate::{
    cluster::SharedCache,
    runtime::protobuf::{self, ACCEPT_LIST, ACCEPT_WATCH, ProtobufKind},
};

/// The encoding asked of the API server for the core kinds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Wire {
    /// Protobuf, else JSON: the server chooses, and the answer's `Content-Type` says which.
    #[default]
    Protobuf,
    /// JSON only: to measure what protobuf saves against a real API server, and a way around a server
    /// or proxy whose protobuf tidal cannot read. Hidden setting: `TIDAL_WIRE=json`.
    Json,
}

impl Wire {
    pub const ENV: &str = "TIDAL_WIRE";

    /// The setting's value: `json` (any case) asks for JSON only; anything else keeps the default,
    /// which reads JSON answers anyway.
    pub fn from_setting(value: Option<&str>) -> Wire {
        match value {
            Some(v) if v.trim().eq_ignore_ascii_case("json") => Wire::Json,
            _ => Wire::Protobuf,
        }
    }

    /// From `$TIDAL_WIRE`.
    pub fn from_env() -> Wire {
        let value = std::env::var(Self::ENV).ok();
        let wire = Self::from_setting(value.as_deref());
        if let Some(value) = value.filter(|v| wire == Wire::Protobuf && !v.trim().is_empty()) {
            warn!(%value, "{} is not `json`: asking for protobuf", Self::ENV);
        }
        wire
    }

    fn accept_list(self) -> &'static str {
        match self {
            Wire::Protobuf => ACCEPT_LIST,
            Wire::Json => "application/json",
        }
    }

    fn accept_watch(self) -> &'static str {
        match self {
            Wire::Protobuf => ACCEPT_WATCH,
            Wire::Json => "application/json",
        }
    }
}

/// Objects per list page, as client-go's reflector asks.
pub const PAGE: u32 = 500;
/// The server ends a watch after this long; it is then resumed from the last resourceVersion.
const WATCH_TIMEOUT_SECS: u32 = 290;

/// How a watch ended.
#[derive(Debug, PartialEq, Eq)]
enum WatchEnd {
    /// The server closed it (timeout): resume from the last resourceVersion.
    Closed,
    /// The resourceVersion is too old, or the stream could not be trusted: list again.
    Relist(String),
}

/// Mirrors one core kind into the cache forever: the initial state through a watch-list (or
/// paginated lists, see [`InitialSync`]), then watches, in protobuf (or JSON).
pub async fn mirror<K>(
    client: Client,
    shared: SharedCache,
    observer: Arc<dyn WatchObserver>,
    wire: Wire,
    initial: InitialSync,
) where
    K: ProtobufKind + Resource<DynamicType = ()> + DeserializeOwned + Clone,
{
    let mut relist = Relist::default();
    let mut logged = HashSet::new();
    let mut failures = 0u32;
    // The last failure logged: a retry that fails the same way says nothing new.
    let mut said: Option<String> = None;
    // Cleared for good when the server shows it does not do watch-list.
    let mut watch_list = initial == InitialSync::WatchList;
    loop {
        let mut apply = |event: watcher::Event<Lenient<K>>| {
            apply_lenient_event(&shared, &mut relist, event, observer.as_ref(), &mut logged);
        };
        apply(watcher::Event::Init);
        let mut streamed = None;
        if watch_list {
            match watch_list_initial::<K>(&client, wire, &mut apply).await {
                Ok(open) => streamed = Some(open),
                Err(fallback) => {
                    let (kind, why) = (K::KIND.as_str(), &fallback.why);
                    if fallback.refused {
                        watch_list = false;
                        info!(kind, %why, "the API server does not do watch-list: listing page by page from now on");
                    } else {
                        observer.watch_error(K::KIND);
                        info!(kind, %why, "watch-list failed: listing page by page this time");
                    }
                    // Start the relist's bookkeeping afresh: what the watch-list applied stays until
                    // the list says whether it still exists.
                    apply(watcher::Event::Init);
                }
            }
        }
        let (mut version, mut stream) = match streamed {
            Some((stream, version)) => (version, Some(stream)),
            None => {
                let listed = list_all::<K>(&client, wire, |object| {
                    apply(watcher::Event::InitApply(object));
                })
                .await;
                match listed {
                    Ok(version) => (version, None),
                    Err(error) => {
                        observer.watch_error(K::KIND);
                        if said.as_deref() != Some(error.as_str()) {
                            warn!(kind = K::KIND.as_str(), %error, "list failed; listing again (said once until it changes)");
                            said = Some(error);
                        }
                        failures += 1;
                        tokio::time::sleep(backoff(failures)).await;
                        continue;
                    }
                }
            }
        };
        apply(watcher::Event::InitDone);
        failures = 0;
        said = None;
        loop {
            let apply = |event: watcher::Event<Lenient<K>>| {
                apply_lenient_event(&shared, &mut relist, event, observer.as_ref(), &mut logged);
            };
            let unreadable = || observer.unreadable(K::KIND);
            let streaming = |on: bool| {
                let since = on.then(Timestamp::now);
                shared.write().note_streaming(K::KIND, since);
            };
            // The watch-list's stream goes on as the first watch.
            let end = match stream.take() {
                Some(mut open) => {
                    streaming(true);
                    follow::<K>(&mut open, &mut version, apply, unreadable).await
                }
                None => {
                    let connected = || streaming(true);
                    watch_once::<K>(&client, wire, &mut version, apply, unreadable, connected).await
                }
            };
            streaming(false);
            match end {
                Ok(WatchEnd::Closed) => failures = 0,
                Ok(WatchEnd::Relist(why)) => {
                    debug!(kind = K::KIND.as_str(), %why, "relisting");
                    break;
                }
                Err(error) => {
                    observer.watch_error(K::KIND);
                    if said.as_deref() != Some(error.as_str()) {
                        warn!(kind = K::KIND.as_str(), %error, "watch failed; resuming (said once until it changes)");
                        said = Some(error);
                    }
                    failures += 1;
                    tokio::time::sleep(backoff(failures)).await;
                }
            }
        }
    }
}

/// Doubling from 1s, at most 30s.
fn backoff(failures: u32) -> Duration {
    Duration::from_secs(1)
        .saturating_mul(2u32.saturating_pow(failures.saturating_sub(1).min(16)))
        .min(Duration::from_secs(30))
}

fn path<K: Resource<DynamicType = ()>>() -> String {
    K::url_path(&(), None)
}

async fn get(
    client: &Client,
    uri: String,
    accept: &str,
) -> Result<http::Response<kube::client::Body>, String> {
    let request = Request::get(uri)
        .header(header::ACCEPT, accept)
        .body(kube::client::Body::empty())
        .map_err(|e| e.to_string())?;
    client.send(request).await.map_err(|e| e.to_string())
}

fn content_type<B>(response: &http::Response<B>) -> Option<String> {
    response
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned)
}

/// Lists every object page by page, handing each to `apply` as soon as its page is decoded (one by
/// one: an object that does not decode is handed over as unreadable); returns the list's
/// resourceVersion.
async fn list_all<K>(
    client: &Client,
    wire: Wire,
    mut apply: impl FnMut(Lenient<K>),
) -> Result<String, String>
where
    K: ProtobufKind + Resource<DynamicType = ()> + DeserializeOwned + Clone,
{
    let mut token: Option<String> = None;
    loop {
        let mut uri = format!("{}?limit={PAGE}", path::<K>());
        if let Some(token) = &token {
            uri.push_str("&continue=");
            uri.push_str(&form_urlencode(token));
        }
        let response = get(client, uri, wire.accept_list()).await?;
        let status = response.status();
        let protobuf = protobuf::is_protobuf(content_type(&response).as_deref());
        let body = response
            .into_body()
            .collect()
            .await
            .map_err(|e| e.to_string())?
            .to_bytes();
        if !status.is_success() {
            return Err(format!("list answered {status}"));
        }
        let (items, version, next) = if protobuf {
            let page = protobuf::decode_list_each::<K>(&body).map_err(|e| e.to_string())?;
            let items = page.items.into_iter().map(|item| match item {
                Ok(object) => Lenient::Read {
                    object,
                    clamped: Vec::new(),
                },
                Err(error) => Lenient::undecodable(error),
            });
            (items.collect(), page.resource_version, page.continue_token)
        } else {
            let page: ObjectList<Lenient<K>> =
                serde_json::from_slice(&body).map_err(|e| e.to_string())?;
            let next = page.metadata.continue_.filter(|c| !c.is_empty());
            (
                page.items,
                page.metadata.resource_version.unwrap_or_default(),
                next,
            )
        };
        drop(body);
        for item in items {
            apply(item);
        }
        match next {
            Some(next) => token = Some(next),
            None => return Ok(version),
        }
    }
}

fn form_urlencode(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// A watch-list (KEP-3157): one watch whose first events are every object that exists, ended by a
/// bookmark annotated `k8s.io/initial-events-end`. No resourceVersion: the state is consistent (at
/// least as new as a quorum read). Each object is handed to `apply` as it arrives, as a list's items
/// are; returns the stream, which goes on as a watch, and the bookmark's resourceVersion. Anything
/// else before that bookmark is a [`Fallback`] to the paginated list.
async fn watch_list_initial<K>(
    client: &Client,
    wire: Wire,
    mut apply: impl FnMut(watcher::Event<Lenient<K>>),
) -> Result<(EventStream, String), Fallback>
where
    K: ProtobufKind + Resource<DynamicType = ()> + DeserializeOwned + Clone,
{
    let uri = format!(
        "{}?watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan\
         &allowWatchBookmarks=true&timeoutSeconds={WATCH_TIMEOUT_SECS}",
        path::<K>()
    );
    let response = tokio::time::timeout(INITIAL_EVENTS_IDLE, get(client, uri, wire.accept_watch()))
        .await
        .map_err(|_| Fallback::passing("no answer to the watch-list request"))?
        .map_err(Fallback::passing)?;
    let status = response.status();
    if !status.is_success() {
        return Err(Fallback::answered(status.as_u16()));
    }
    let protobuf = protobuf::is_protobuf(content_type(&response).as_deref());
    let mut stream = EventStream::new(response.into_body(), protobuf);
    loop {
        let next = tokio::time::timeout(INITIAL_EVENTS_IDLE, stream.next::<K>())
            .await
            .map_err(|_| Fallback::idle())?;
        let event = match next {
            Ok(Some(event)) => event,
            Ok(None) => {
                return Err(Fallback::passing(
                    "the watch-list ended before its initial-events-end bookmark",
                ));
            }
            Err(StreamFault::Transport(error)) => {
                return Err(Fallback::passing(format!("watch-list failed: {error}")));
            }
            Err(StreamFault::Corrupt(error)) => {
                return Err(Fallback::passing(format!("corrupt watch-list: {error}")));
            }
        };
        match event {
            // Objects created or changed while the initial events are sent may come before the
            // bookmark, as later events: they are part of the state it marks.
            StreamEvent::Added(o) | StreamEvent::Modified(o) => apply(watcher::Event::InitApply(o)),
            StreamEvent::Deleted(o) => apply(watcher::Event::Delete(o)),
            // As an item of a list page that does not decode.
            StreamEvent::Unreadable(error) => {
                apply(watcher::Event::InitApply(Lenient::undecodable(error)));
            }
            StreamEvent::Bookmark {
                version,
                initial_events_end: true,
            } => return Ok((stream, version)),
            StreamEvent::Bookmark { .. } => return Err(Fallback::plain_bookmark()),
            StreamEvent::Error { code, message } => {
                return Err(Fallback::error_event(code, &message));
            }
        }
    }
}

/// One watch from `version`, applying events as they arrive and moving `version` along; `connected`
/// is called once the server has accepted it.
async fn watch_once<K>(
    client: &Client,
    wire: Wire,
    version: &mut String,
    apply: impl FnMut(watcher::Event<Lenient<K>>),
    unreadable: impl Fn(),
    connected: impl FnOnce(),
) -> Result<WatchEnd, String>
where
    K: ProtobufKind + Resource<DynamicType = ()> + DeserializeOwned + Clone,
{
    let uri = format!(
        "{}?watch=true&allowWatchBookmarks=true&timeoutSeconds={WATCH_TIMEOUT_SECS}&resourceVersion={}",
        path::<K>(),
        form_urlencode(version)
    );
    let response = get(client, uri, wire.accept_watch()).await?;
    let status = response.status();
    if status == http::StatusCode::GONE {
        return Ok(WatchEnd::Relist("410 Gone".to_owned()));
    }
    if !status.is_success() {
        return Err(format!("watch answered {status}"));
    }
    connected();
    let protobuf = protobuf::is_protobuf(content_type(&response).as_deref());
    let mut stream = EventStream::new(response.into_body(), protobuf);
    follow::<K>(&mut stream, version, apply, unreadable).await
}

/// Applies a watch's events until it ends, moving `version` along.
async fn follow<K>(
    stream: &mut EventStream,
    version: &mut String,
    mut apply: impl FnMut(watcher::Event<Lenient<K>>),
    unreadable: impl Fn(),
) -> Result<WatchEnd, String>
where
    K: ProtobufKind + Resource<DynamicType = ()> + DeserializeOwned + Clone,
{
    let note = |object: &Lenient<K>, version: &mut String| {
        if let Some(v) = object.meta().resource_version.as_ref() {
            version.clone_from(v);
        }
    };
    loop {
        let event = match stream.next::<K>().await {
            Ok(Some(event)) => event,
            Ok(None) => return Ok(WatchEnd::Closed),
            Err(StreamFault::Transport(error)) => return Err(error),
            // What came before was applied whole, the rest is unknown.
            Err(StreamFault::Corrupt(error)) => return Ok(WatchEnd::Relist(error)),
        };
        match event {
            StreamEvent::Added(o) | StreamEvent::Modified(o) => {
                note(&o, version);
                apply(watcher::Event::Apply(o));
            }
            StreamEvent::Deleted(o) => {
                note(&o, version);
                apply(watcher::Event::Delete(o));
            }
            // Nothing of it can be read, not even its name: counted and logged, and the watch goes
            // on from the next event.
            StreamEvent::Unreadable(error) => {
                unreadable();
                warn!(kind = K::KIND.as_str(), %error, "cannot decode a watched object: left out");
            }
            StreamEvent::Bookmark { version: v, .. } => *version = v,
            StreamEvent::Error { code: 410, .. } => {
                return Ok(WatchEnd::Relist("410 Gone".to_owned()));
            }
            StreamEvent::Error { code, message } => {
                return Ok(WatchEnd::Relist(format!("watch error {code}: {message}")));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn continue_tokens_are_escaped() {
        assert_eq!(form_urlencode("eyJ2Ijoi+/="), "eyJ2Ijoi%2B%2F%3D");
        assert_eq!(form_urlencode("315777"), "315777");
    }

    #[test]
    fn only_json_turns_protobuf_off() {
        assert_eq!(Wire::from_setting(Some("json")), Wire::Json);
        assert_eq!(Wire::from_setting(Some(" JSON ")), Wire::Json);
        for other in [None, Some(""), Some("protobuf"), Some("yaml")] {
            assert_eq!(Wire::from_setting(other), Wire::Protobuf, "{other:?}");
        }
        assert!(!Wire::Json.accept_list().contains("protobuf"));
        assert!(!Wire::Json.accept_watch().contains("protobuf"));
        assert!(Wire::Protobuf.accept_watch().contains("stream=watch"));
    }

    #[test]
    fn backoff_doubles_to_thirty_seconds() {
        assert_eq!(backoff(1), Duration::from_secs(1));
        assert_eq!(backoff(3), Duration::from_secs(4));
        assert_eq!(backoff(40), Duration::from_secs(30));
    }
}
