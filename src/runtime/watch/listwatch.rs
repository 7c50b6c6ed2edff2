//! List and watch for the core kinds, in protobuf when the API server speaks it (see
//! `runtime::protobuf`), else in JSON: decided per response by its `Content-Type`, so a server or proxy
//! that answers JSON works unchanged. The semantics are kube-runtime's watcher's, which the JSON-only
//! kinds still use: a paginated list (pages of 500, folded into the cache one by one and dropped), then
//! a watch from the list's resourceVersion with bookmarks; a 410 Gone, a corrupt or truncated frame, or
//! an error mid-list starts a full relist, which also removes what vanished meanwhile. Never an
//! unpaginated list: at 150,000 pods that can take the API server down.

use std::{collections::HashSet, sync::Arc, time::Duration};

use futures::StreamExt;
use http::{Request, header};
use http_body_util::BodyExt;
use kube::{
    Client, Resource,
    core::{ObjectList, WatchEvent},
    runtime::watcher,
};
use serde::de::DeserializeOwned;
use tracing::{debug, warn};

use super::{Lenient, WatchObserver, apply_lenient_event};
use crate::{
    cluster::{ObjectKey, SharedCache},
    runtime::protobuf::{self, ACCEPT_LIST, ACCEPT_WATCH, FrameReader, ProtobufKind, WatchFrame},
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

/// Mirrors one core kind into the cache forever: paginated lists and watches in protobuf (or JSON).
pub async fn mirror<K>(
    client: Client,
    shared: SharedCache,
    observer: Arc<dyn WatchObserver>,
    wire: Wire,
) where
    K: ProtobufKind + Resource<DynamicType = ()> + DeserializeOwned + Clone,
{
    let mut relist: Option<HashSet<ObjectKey>> = None;
    let mut logged = HashSet::new();
    let mut failures = 0u32;
    loop {
        apply_lenient_event::<K>(
            &shared,
            &mut relist,
            watcher::Event::Init,
            observer.as_ref(),
            &mut logged,
        );
        let listed = list_all::<K>(&client, wire, |object| {
            apply_lenient_event(
                &shared,
                &mut relist,
                watcher::Event::InitApply(object),
                observer.as_ref(),
                &mut logged,
            );
        })
        .await;
        let mut version = match listed {
            Ok(version) => version,
            Err(error) => {
                observer.watch_error(K::KIND);
                warn!(kind = K::KIND.as_str(), %error, "list failed; listing again");
                failures += 1;
                tokio::time::sleep(backoff(failures)).await;
                continue;
            }
        };
        apply_lenient_event::<K>(
            &shared,
            &mut relist,
            watcher::Event::InitDone,
            observer.as_ref(),
            &mut logged,
        );
        failures = 0;
        loop {
            let apply = |event| {
                apply_lenient_event(&shared, &mut relist, event, observer.as_ref(), &mut logged);
            };
            let unreadable = || observer.unreadable(K::KIND);
            match watch_once::<K>(&client, wire, &mut version, apply, unreadable).await {
                Ok(WatchEnd::Closed) => failures = 0,
                Ok(WatchEnd::Relist(why)) => {
                    debug!(kind = K::KIND.as_str(), %why, "relisting");
                    break;
                }
                Err(error) => {
                    observer.watch_error(K::KIND);
                    warn!(kind = K::KIND.as_str(), %error, "watch failed; resuming");
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

/// One watch from `version`, applying events as they arrive and moving `version` along.
async fn watch_once<K>(
    client: &Client,
    wire: Wire,
    version: &mut String,
    mut apply: impl FnMut(watcher::Event<Lenient<K>>),
    unreadable: impl Fn(),
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
    let protobuf = protobuf::is_protobuf(content_type(&response).as_deref());
    let mut body = response.into_body().into_data_stream();
    let mut frames = FrameReader::default();
    let mut lines: Vec<u8> = Vec::new();
    let note = |object: &Lenient<K>, version: &mut String| {
        if let Some(v) = object.meta().resource_version.as_ref() {
            version.clone_from(v);
        }
    };
    while let Some(chunk) = body.next().await {
        let chunk = chunk.map_err(|e| e.to_string())?;
        if protobuf {
            frames.push(&chunk);
            loop {
                let frame = match frames.next_frame() {
                    Ok(Some(frame)) => frame,
                    Ok(None) => break,
                    Err(error) => return Ok(WatchEnd::Relist(error.to_string())),
                };
                let event = match protobuf::decode_frame::<K>(&frame) {
                    Ok(event) => event,
                    Err(error) => return Ok(WatchEnd::Relist(error.to_string())),
                };
                let read = |object| Lenient::Read {
                    object,
                    clamped: Vec::new(),
                };
                match event {
                    WatchFrame::Added(o) | WatchFrame::Modified(o) => {
                        let o = read(o);
                        note(&o, version);
                        apply(watcher::Event::Apply(o));
                    }
                    WatchFrame::Deleted(o) => {
                        let o = read(o);
                        note(&o, version);
                        apply(watcher::Event::Delete(o));
                    }
                    // Nothing of it can be read, not even its name: counted and logged, and the
                    // watch goes on from the next event.
                    WatchFrame::Unreadable(error) => {
                        unreadable();
                        warn!(kind = K::KIND.as_str(), %error, "cannot decode a watched object: left out");
                    }
                    WatchFrame::Bookmark(v) => *version = v,
                    WatchFrame::Error { code: 410, .. } => {
                        return Ok(WatchEnd::Relist("410 Gone".to_owned()));
                    }
                    WatchFrame::Error { code, message } => {
                        return Ok(WatchEnd::Relist(format!("watch error {code}: {message}")));
                    }
                }
            }
        } else {
            lines.extend_from_slice(&chunk);
            while let Some(end) = lines.iter().position(|b| *b == b'\n') {
                let line: Vec<u8> = lines.drain(..=end).collect();
                if line.iter().all(u8::is_ascii_whitespace) {
                    continue;
                }
                let event: WatchEvent<Lenient<K>> = match serde_json::from_slice(&line) {
                    Ok(event) => event,
                    Err(error) => return Ok(WatchEnd::Relist(error.to_string())),
                };
                match event {
                    WatchEvent::Added(o) | WatchEvent::Modified(o) => {
                        note(&o, version);
                        apply(watcher::Event::Apply(o));
                    }
                    WatchEvent::Deleted(o) => {
                        note(&o, version);
                        apply(watcher::Event::Delete(o));
                    }
                    WatchEvent::Bookmark(b) => *version = b.metadata.resource_version,
                    WatchEvent::Error(status) if status.code == 410 => {
                        return Ok(WatchEnd::Relist("410 Gone".to_owned()));
                    }
                    WatchEvent::Error(status) => {
                        return Ok(WatchEnd::Relist(format!(
                            "watch error {}: {}",
                            status.code, status.message
                        )));
                    }
                }
            }
        }
    }
    if frames.pending() > 0 || !lines.iter().all(u8::is_ascii_whitespace) {
        // The stream ended mid-event: what came before was applied whole, the rest is unknown.
        return Ok(WatchEnd::Relist("watch stream ended mid-event".to_owned()));
    }
    Ok(WatchEnd::Closed)
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
