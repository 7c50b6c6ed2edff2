//! Typing one object that the API server accepted but tidal's types cannot hold as it is: Go reads
//! times up to the year 292277026596, tidal's timestamps end at 9999-12-30T22:00:00Z, so a pod
//! condition or a zone status in the year 9999 fails to deserialize. Such a time is read as the latest
//! instant tidal has (a far-future time keeps its meaning: a pod scheduled "then" is still in its
//! cooldown) and the caller is told, so that one object never fails a whole list or report.

use jiff::Timestamp;
use serde::de::DeserializeOwned;
use serde_json::Value;
use serde_path_to_error::Segment;

/// At most this many fields of one object are clamped before it counts as unreadable.
const MAX_CLAMPED: usize = 16;

/// `value` as `T`; `Ok` also lists each time read as the latest instant tidal has, as
/// `status.conditions[0].lastTransitionTime 9999-12-31T23:59:59Z`. `Err` names the field at fault.
pub(crate) fn typed_lenient<T: DeserializeOwned>(
    mut value: Value,
) -> Result<(T, Vec<String>), String> {
    let mut clamped = Vec::new();
    loop {
        let error = match serde_path_to_error::deserialize::<_, T>(&value) {
            Ok(object) => return Ok((object, clamped)),
            Err(error) => error,
        };
        let path = error.path().clone();
        if clamped.len() < MAX_CLAMPED
            && let Some(slot) = locate(&mut value, &path)
            && let Some(text) = beyond_the_latest_time(slot)
        {
            clamped.push(format!("{path} {text}"));
            *slot = Value::String(Timestamp::MAX.to_string());
            continue;
        }
        let path = path.to_string();
        return Err(if path == "." {
            error.into_inner().to_string()
        } else {
            format!("{path}: {}", error.into_inner())
        });
    }
}

fn locate<'v>(value: &'v mut Value, path: &serde_path_to_error::Path) -> Option<&'v mut Value> {
    let mut at = value;
    for segment in path.iter() {
        at = match segment {
            Segment::Seq { index } => at.get_mut(*index)?,
            Segment::Map { key } => at.get_mut(key.as_str())?,
            Segment::Enum { .. } | Segment::Unknown => return None,
        };
    }
    Some(at)
}

/// The text of an RFC 3339 time later than tidal's timestamps reach (`9999-12-31T...`), if `slot`
/// holds one. Anything else that fails stays an error.
fn beyond_the_latest_time(slot: &Value) -> Option<String> {
    let text = slot.as_str()?;
    let civil = text.get(..19)?.parse::<jiff::civil::DateTime>().ok()?;
    let beyond = civil.year() == 9999 && text.parse::<Timestamp>().is_err();
    beyond.then(|| text.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::Pod;
    use serde_json::json;

    #[test]
    fn times_past_the_year_9999_are_read_as_the_latest_instant() {
        let pod = json!({"metadata": {"name": "p", "creationTimestamp": "2026-01-01T00:00:00Z"},
            "status": {"conditions": [{"type": "Ready", "status": "True"},
                {"type": "PodScheduled", "status": "True", "lastTransitionTime": "9999-12-31T23:59:59Z"}]}});
        let (pod, clamped) = typed_lenient::<Pod>(pod).unwrap();
        assert_eq!(
            clamped,
            vec!["status.conditions[1].lastTransitionTime 9999-12-31T23:59:59Z"]
        );
        let time = &pod.status.unwrap().conditions.unwrap()[1].last_transition_time;
        assert_eq!(time.as_ref().unwrap().0, Timestamp::MAX);
    }

    #[test]
    fn other_errors_stay_errors_naming_the_field() {
        let error = typed_lenient::<Pod>(json!({"spec": {"containers": "no"}})).unwrap_err();
        assert!(error.starts_with("spec.containers"), "{error}");
        let error = typed_lenient::<Pod>(
            json!({"metadata": {"creationTimestamp": "9999-99-99T00:00:00Z"}}),
        )
        .unwrap_err();
        assert!(error.starts_with("metadata.creationTimestamp"), "{error}");
    }
}
