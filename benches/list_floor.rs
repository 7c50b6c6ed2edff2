//! The floor under any client's cold start against a real API server: the streaming watch-lists
//! `tidal run` and `tidal report` send (protobuf; pods, nodes, namespaces, PVCs and PDBs, all at once),
//! through the same client (kube's, over hyper and rustls) and the same frame reader, read to their
//! `k8s.io/initial-events-end` bookmark and thrown away: no object is decoded. What a client spends
//! above this is its own. Used by `benches/live/side-by-side.sh`; not a criterion bench.
//!
//! `TIDAL_FLOOR_KUBECONFIG=PATH cargo bench --bench list_floor` prints one JSON line: the seconds until
//! the last list ended, and per kind its seconds, bytes and frames.

// What the binary runs on, so that the figures are the binary's.
tidal::global_allocator!();

use std::time::Instant;

use futures::StreamExt;
use http::{Request, header};
use http_body_util::BodyExt;
use kube::{
    Client, Config,
    config::{KubeConfigOptions, Kubeconfig},
};
use tidal::runtime::protobuf::{ACCEPT_WATCH, FrameReader, INITIAL_EVENTS_END};

const KINDS: [(&str, &str); 5] = [
    ("pods", "/api/v1/pods"),
    ("nodes", "/api/v1/nodes"),
    ("namespaces", "/api/v1/namespaces"),
    ("persistentvolumeclaims", "/api/v1/persistentvolumeclaims"),
    (
        "poddisruptionbudgets",
        "/apis/policy/v1/poddisruptionbudgets",
    ),
];

/// A watch event's type, its first field (`meta.v1.WatchEvent.type`), read without decoding the rest.
fn event_type(frame: &[u8]) -> Option<&[u8]> {
    let (&key, rest) = frame.split_first()?;
    let (&length, rest) = rest.split_first()?;
    // Field 1, length-delimited; a type is a few ASCII letters, so its length is one byte.
    (key == 0x0a && length < 0x80).then(|| rest.get(..usize::from(length)))?
}

fn ends_initial_events(frame: &[u8]) -> bool {
    event_type(frame) == Some(b"BOOKMARK")
        && frame
            .windows(INITIAL_EVENTS_END.len())
            .any(|w| w == INITIAL_EVENTS_END.as_bytes())
}

/// (seconds, bytes, frames) of one kind's initial events.
async fn read_initial_events(client: Client, path: &str) -> Result<(f64, usize, usize), String> {
    let started = Instant::now();
    let uri = format!(
        "{path}?watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan\
         &allowWatchBookmarks=true&timeoutSeconds=600"
    );
    let request = Request::get(uri)
        .header(header::ACCEPT, ACCEPT_WATCH)
        .body(kube::client::Body::empty())
        .map_err(|e| e.to_string())?;
    let response = client.send(request).await.map_err(|e| e.to_string())?;
    if !response.status().is_success() {
        return Err(format!("{path}: {}", response.status()));
    }
    let mut body = response.into_body().into_data_stream();
    let (mut reader, mut bytes, mut frames) = (FrameReader::default(), 0, 0);
    while let Some(chunk) = body.next().await {
        let chunk = chunk.map_err(|e| e.to_string())?;
        bytes += chunk.len();
        reader.push(&chunk);
        while let Some(frame) = reader.next_frame().map_err(|e| e.to_string())? {
            frames += 1;
            if ends_initial_events(&frame) {
                return Ok((started.elapsed().as_secs_f64(), bytes, frames));
            }
        }
    }
    Err(format!(
        "{path}: the stream ended before its initial events"
    ))
}

#[tokio::main]
async fn main() {
    let Ok(path) = std::env::var("TIDAL_FLOOR_KUBECONFIG") else {
        eprintln!("list_floor: set TIDAL_FLOOR_KUBECONFIG to a kubeconfig to measure; skipped");
        return;
    };
    let kubeconfig = Kubeconfig::read_from(&path).expect("the kubeconfig reads");
    let config = Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
        .await
        .expect("the kubeconfig is complete");
    let client = Client::try_from(config).expect("a client");
    let started = Instant::now();
    let lists = KINDS.map(|(kind, path)| {
        let client = client.clone();
        tokio::spawn(async move { (kind, read_initial_events(client, path).await) })
    });
    let mut kinds = Vec::new();
    for list in lists {
        match list.await.expect("the list task ends") {
            (kind, Ok((seconds, bytes, frames))) => kinds.push(format!(
                r#""{kind}": {{"seconds": {seconds:.3}, "bytes": {bytes}, "frames": {frames}}}"#
            )),
            (kind, Err(error)) => panic!("{kind}: {error}"),
        }
    }
    println!(
        r#"{{"seconds": {:.3}, "kinds": {{{}}}}}"#,
        started.elapsed().as_secs_f64(),
        kinds.join(", ")
    );
}
