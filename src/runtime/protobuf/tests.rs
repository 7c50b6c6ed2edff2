//! The protobuf path against real API server bytes (tests/fixtures/protobuf): every field the cache
//! keeps must come out the same as through the JSON the same server sent for the same request.

use std::path::PathBuf;

use k8s_openapi::api::core::v1::{Node, Pod};
use kube::core::{ObjectList, WatchEvent};

use super::*;
use crate::cluster::{NodeInfo, PodInfo};

fn fixture(name: &str) -> Vec<u8> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/protobuf")
        .join(name);
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[test]
fn a_pod_list_page_reads_the_same_in_both_encodings() {
    let page = decode_list::<Pod>(&fixture("pods-list.pb")).unwrap();
    let json: ObjectList<Pod> = serde_json::from_slice(&fixture("pods-list.json")).unwrap();
    assert_eq!(page.items.len(), 20);
    assert_eq!(page.items.len(), json.items.len());
    assert_eq!(
        Some(page.resource_version.as_str()),
        json.metadata.resource_version.as_deref()
    );
    assert_eq!(page.continue_token, json.metadata.continue_);
    assert!(page.continue_token.is_some(), "a first page of many");
    for (from_pb, from_json) in page.items.iter().zip(&json.items) {
        let (a, b) = (
            PodInfo::from_pod(from_pb).unwrap(),
            PodInfo::from_pod(from_json).unwrap(),
        );
        assert_eq!(a, b, "pod {}", a.key);
        assert!(a.requests_known && a.node_name.is_some());
        // The uid is kept as 16 bytes and written back as the very text the server sent.
        let sent = from_json.metadata.uid.as_deref().unwrap();
        assert_eq!(a.uid.to_string(), sent);
        assert!(a.uid.is_compact(), "{sent}");
    }
}

#[test]
fn a_node_list_page_reads_the_same_in_both_encodings() {
    let page = decode_list::<Node>(&fixture("nodes-list.pb")).unwrap();
    let json: ObjectList<Node> = serde_json::from_slice(&fixture("nodes-list.json")).unwrap();
    assert_eq!(page.items.len(), 3);
    for (from_pb, from_json) in page.items.iter().zip(&json.items) {
        let (a, b) = (
            NodeInfo::from_node(from_pb).unwrap(),
            NodeInfo::from_node(from_json).unwrap(),
        );
        assert_eq!(a, b, "node {}", a.name);
        assert!(!a.allocatable.names().collect::<Vec<_>>().is_empty());
    }
}

/// (type, pod, what the cache keeps) for each event.
type Seen = Vec<(String, Option<PodInfo>)>;

fn protobuf_events(bytes: &[u8], chunk: usize) -> Seen {
    let mut reader = FrameReader::default();
    let mut seen = Vec::new();
    for piece in bytes.chunks(chunk) {
        reader.push(piece);
        while let Some(frame) = reader.next_frame().unwrap() {
            seen.push(match decode_frame::<Pod>(&frame).unwrap() {
                WatchFrame::Added(p) => ("ADDED".into(), Some(PodInfo::from_pod(&p).unwrap())),
                WatchFrame::Modified(p) => {
                    ("MODIFIED".into(), Some(PodInfo::from_pod(&p).unwrap()))
                }
                WatchFrame::Deleted(p) => ("DELETED".into(), Some(PodInfo::from_pod(&p).unwrap())),
                WatchFrame::Bookmark { version, .. } => (format!("BOOKMARK {version}"), None),
                WatchFrame::Error { code, .. } => (format!("ERROR {code}"), None),
                WatchFrame::Unreadable(error) => (format!("UNREADABLE {error}"), None),
            });
        }
    }
    assert_eq!(
        reader.pending(),
        0,
        "the recorded stream ends on a frame boundary"
    );
    seen
}

fn json_events(bytes: &[u8]) -> Seen {
    bytes
        .split(|b| *b == b'\n')
        .filter(|line| !line.is_empty())
        .map(
            |line| match serde_json::from_slice::<WatchEvent<Pod>>(line).unwrap() {
                WatchEvent::Added(p) => ("ADDED".into(), Some(PodInfo::from_pod(&p).unwrap())),
                WatchEvent::Modified(p) => {
                    ("MODIFIED".into(), Some(PodInfo::from_pod(&p).unwrap()))
                }
                WatchEvent::Deleted(p) => ("DELETED".into(), Some(PodInfo::from_pod(&p).unwrap())),
                WatchEvent::Bookmark(b) => {
                    (format!("BOOKMARK {}", b.metadata.resource_version), None)
                }
                WatchEvent::Error(e) => (format!("ERROR {}", e.code), None),
            },
        )
        .collect()
}

#[test]
fn a_watch_stream_reads_the_same_in_both_encodings_however_it_is_cut() {
    let bytes = fixture("pods-watch.pb");
    let json = json_events(&fixture("pods-watch.json"));
    let kinds: Vec<&str> = json.iter().map(|(t, _)| t.as_str()).collect();
    assert_eq!(
        kinds.iter().filter(|t| **t == "ADDED").count(),
        3,
        "{kinds:?}"
    );
    assert!(kinds.contains(&"MODIFIED") && kinds.contains(&"DELETED"));
    // Frames arrive in arbitrary pieces: one byte at a time, odd sizes, all at once.
    for chunk in [1, 7, 1000, bytes.len()] {
        assert_eq!(protobuf_events(&bytes, chunk), json, "chunks of {chunk}");
    }
}

#[test]
fn truncated_or_corrupt_bytes_are_errors_never_panics() {
    let list = fixture("pods-list.pb");
    for cut in [0, 3, 4, 10, list.len() / 2, list.len() - 1] {
        assert!(decode_list::<Pod>(&list[..cut]).is_err(), "cut at {cut}");
    }
    assert_eq!(
        decode_list::<Pod>(b"{\"kind\":\"PodList\"}").err(),
        Some(ProtobufError::NoMagic)
    );
    let mut flipped = list.clone();
    for i in (8..flipped.len()).step_by(97) {
        flipped[i] ^= 0xA5;
    }
    let _ = decode_list::<Pod>(&flipped); // any answer but a panic

    // A watch frame cut short stays buffered: nothing is decoded from half an event.
    let watch = fixture("pods-watch.pb");
    let mut reader = FrameReader::default();
    reader.push(&watch[..watch.len() - 5]);
    let mut complete = 0;
    while reader.next_frame().unwrap().is_some() {
        complete += 1;
    }
    assert!(complete >= 1 && reader.pending() > 0);
    // A corrupt frame is a decode error; an absurd length is refused before buffering.
    assert!(decode_frame::<Pod>(&[0xFF; 16]).is_err());
    let mut huge = FrameReader::default();
    huge.push(&u32::MAX.to_be_bytes());
    assert!(matches!(
        huge.next_frame(),
        Err(ProtobufError::FrameTooLarge(_))
    ));
}

#[test]
fn content_types() {
    assert!(is_protobuf(Some("application/vnd.kubernetes.protobuf")));
    assert!(is_protobuf(Some(
        "application/vnd.kubernetes.protobuf;stream=watch"
    )));
    assert!(!is_protobuf(Some("application/json")));
    assert!(!is_protobuf(None));
}

/// A BOOKMARK event whose pod carries `annotations`.
fn bookmark_frame(annotations: &[(&str, &str)]) -> Vec<u8> {
    let pod = k8s_pb::api::core::v1::Pod {
        metadata: Some(pb_meta::ObjectMeta {
            resource_version: Some("4242".to_owned()),
            annotations: annotations
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect(),
            ..Default::default()
        }),
        ..Default::default()
    };
    let unknown = Unknown {
        raw: Some(pod.encode_to_vec()),
        ..Default::default()
    };
    let mut enveloped = MAGIC.to_vec();
    enveloped.extend(unknown.encode_to_vec());
    pb_meta::WatchEvent {
        r#type: Some("BOOKMARK".to_owned()),
        object: Some(k8s_pb::apimachinery::pkg::runtime::RawExtension {
            raw: Some(enveloped),
        }),
    }
    .encode_to_vec()
}

#[test]
fn only_the_annotated_bookmark_ends_the_initial_events() {
    let read =
        |annotations: &[(&str, &str)]| match decode_frame::<Pod>(&bookmark_frame(annotations)) {
            Ok(WatchFrame::Bookmark {
                version,
                initial_events_end,
            }) => (version, initial_events_end),
            other => panic!("{other:?}"),
        };
    assert_eq!(
        read(&[(INITIAL_EVENTS_END, "true")]),
        ("4242".to_owned(), true)
    );
    assert_eq!(read(&[]), ("4242".to_owned(), false));
    assert!(!read(&[(INITIAL_EVENTS_END, "false")]).1);
    assert!(!read(&[("other", "true")]).1);
}

#[test]
fn a_pods_grace_period_survives_the_protobuf_path() {
    use k8s_pb::api::core::v1 as pb;
    let spec = pb::PodSpec {
        termination_grace_period_seconds: Some(45),
        ..pb::PodSpec::default()
    };
    let pod = convert::pod(pb::Pod {
        metadata: Some(k8s_pb::apimachinery::pkg::apis::meta::v1::ObjectMeta {
            name: Some("p".to_owned()),
            namespace: Some("ns".to_owned()),
            ..Default::default()
        }),
        spec: Some(spec),
        status: None,
    });
    let info = PodInfo::from_pod(&pod).unwrap();
    assert_eq!(info.termination_grace_seconds(), 45);
}
