//! Durations written the way Kubernetes and Volcano write them (Go's `time.ParseDuration`: `90s`, `5m`,
//! `1h30m`, `1.5h`).
//!
//! We parse them ourselves rather than with `kube::core::Duration`: that parser multiplies an `f64` into a
//! `std::time::Duration`, which panics on overflow (`99999999999999999999h`), and a panic on a pod annotation
//! is exactly what tidal must never do. This parser is exact (integer nanoseconds) and rejects negatives.

// The schema derives (KubeSchema, CustomResource, JsonSchema) copy each type's visibility into items
// they generate, which `unreachable_pub` then reports; these are the public CRD and window types.
#![allow(unreachable_pub)]

use std::{borrow::Cow, fmt, str::FromStr, time::Duration};

use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::{Deserialize, Deserializer, Serialize, Serializer, de};

/// A non-negative Go-style duration, e.g. `600s`, `5m`, `1h30m`, `1.5h`, `0`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct GoDuration(pub Duration);

/// The grammar of [`GoDuration`] as a regular expression, used as the CRD schema `pattern` so that
/// `kubectl apply` rejects what the parser would reject.
pub const GO_DURATION_PATTERN: &str = r"^(0|([0-9]+(\.[0-9]*)?|\.[0-9]+)(ns|us|µs|μs|ms|s|m|h)(([0-9]+(\.[0-9]*)?|\.[0-9]+)(ns|us|µs|μs|ms|s|m|h))*)$";

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid duration {text:?}: {reason} (expected a Go duration such as 90s, 5m or 1h30m)")]
pub struct DurationError {
    text: String,
    reason: &'static str,
}

impl GoDuration {
    pub const fn from_secs(secs: u64) -> Self {
        GoDuration(Duration::from_secs(secs))
    }

    pub fn as_std(self) -> Duration {
        self.0
    }

    pub fn to_signed(self) -> jiff::SignedDuration {
        jiff::SignedDuration::try_from(self.0).unwrap_or(jiff::SignedDuration::MAX)
    }
}

impl From<Duration> for GoDuration {
    fn from(d: Duration) -> Self {
        GoDuration(d)
    }
}

impl FromStr for GoDuration {
    type Err = DurationError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let fail = |reason| DurationError {
            text: text.to_owned(),
            reason,
        };
        let mut rest = text;
        if let Some(stripped) = rest.strip_prefix('+') {
            rest = stripped;
        } else if rest.starts_with('-') {
            return Err(fail("must not be negative"));
        }
        if rest == "0" {
            return Ok(GoDuration::default());
        }
        if rest.is_empty() {
            return Err(fail("empty"));
        }
        let mut total_nanos: u128 = 0;
        while !rest.is_empty() {
            let number_len = rest
                .find(|c: char| !(c.is_ascii_digit() || c == '.'))
                .unwrap_or(rest.len());
            let (number, after) = rest.split_at(number_len);
            let (whole, fraction) = number.split_once('.').unwrap_or((number, ""));
            if whole.is_empty() && fraction.is_empty() {
                return Err(fail("expected a number"));
            }
            if fraction.contains('.') {
                return Err(fail("a number has two decimal points"));
            }
            let unit_len = after
                .find(|c: char| c.is_ascii_digit() || c == '.')
                .unwrap_or(after.len());
            let (unit, next) = after.split_at(unit_len);
            let unit_nanos: u128 = match unit {
                "ns" => 1,
                "us" | "\u{00b5}s" | "\u{03bc}s" => 1_000,
                "ms" => 1_000_000,
                "s" => 1_000_000_000,
                "m" => 60_000_000_000,
                "h" => 3_600_000_000_000,
                "" => return Err(fail("a number has no unit")),
                _ => return Err(fail("unknown unit (use ns, us, ms, s, m or h)")),
            };
            let whole: u128 = if whole.is_empty() {
                0
            } else {
                whole.parse().map_err(|_| fail("number too large"))?
            };
            let mut nanos = whole
                .checked_mul(unit_nanos)
                .ok_or_else(|| fail("too large"))?;
            // Only the digits that can still matter at nanosecond precision are read; Go truncates likewise.
            let mut scale = unit_nanos;
            for digit in fraction.bytes().take(30) {
                scale /= 10;
                nanos += u128::from(digit - b'0') * scale;
            }
            total_nanos = total_nanos
                .checked_add(nanos)
                .filter(|n| *n <= u128::from(u64::MAX))
                .ok_or_else(|| fail("too large"))?;
            rest = next;
        }
        let secs = (total_nanos / 1_000_000_000) as u64;
        let nanos = (total_nanos % 1_000_000_000) as u32;
        Ok(GoDuration(Duration::new(secs, nanos)))
    }
}

impl fmt::Display for GoDuration {
    /// Formats the way Go prints durations (`1h30m0s`, `5m0s`, `1.5s`), so values read back identically.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let total = self.0;
        if total.is_zero() {
            return f.write_str("0s");
        }
        if total < Duration::from_secs(1) {
            let nanos = total.subsec_nanos();
            return if nanos.is_multiple_of(1_000_000) {
                write!(f, "{}ms", nanos / 1_000_000)
            } else if nanos.is_multiple_of(1_000) {
                write!(f, "{}us", nanos / 1_000)
            } else {
                write!(f, "{nanos}ns")
            };
        }
        let secs = total.as_secs();
        let (hours, minutes, seconds) = (secs / 3600, (secs % 3600) / 60, secs % 60);
        if hours > 0 {
            write!(f, "{hours}h{minutes}m")?;
        } else if minutes > 0 {
            write!(f, "{minutes}m")?;
        }
        let nanos = total.subsec_nanos();
        if nanos == 0 {
            write!(f, "{seconds}s")
        } else {
            let fraction = format!("{nanos:09}");
            write!(f, "{seconds}.{}s", fraction.trim_end_matches('0'))
        }
    }
}

impl Serialize for GoDuration {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for GoDuration {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = Cow::<str>::deserialize(deserializer)?;
        text.parse().map_err(de::Error::custom)
    }
}

impl JsonSchema for GoDuration {
    fn schema_name() -> Cow<'static, str> {
        "GoDuration".into()
    }

    fn inline_schema() -> bool {
        true
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "type": "string",
            "pattern": GO_DURATION_PATTERN,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Duration, DurationError> {
        text.parse::<GoDuration>().map(GoDuration::as_std)
    }

    #[test]
    fn parses_go_durations() {
        assert_eq!(parse("600s").unwrap(), Duration::from_secs(600));
        assert_eq!(parse("5m").unwrap(), Duration::from_secs(300));
        assert_eq!(parse("1h30m").unwrap(), Duration::from_secs(5400));
        assert_eq!(parse("1.5h").unwrap(), Duration::from_secs(5400));
        assert_eq!(parse(".5s").unwrap(), Duration::from_millis(500));
        assert_eq!(
            parse("1h0m0.25s").unwrap(),
            Duration::from_millis(3_600_250)
        );
        assert_eq!(parse("300ms").unwrap(), Duration::from_millis(300));
        assert_eq!(parse("2us").unwrap(), Duration::from_micros(2));
        assert_eq!(parse("2µs").unwrap(), Duration::from_micros(2));
        assert_eq!(parse("0").unwrap(), Duration::ZERO);
        assert_eq!(parse("+3s").unwrap(), Duration::from_secs(3));
    }

    #[test]
    fn rejects_what_go_rejects_and_negatives() {
        for bad in [
            "", "5", "1d", "-5m", "1h30", "h", "1..5s", ".s", "1 h", "5m ", "abc", "1e5s",
        ] {
            assert!(parse(bad).is_err(), "{bad:?} should be rejected");
        }
    }

    #[test]
    fn huge_values_are_errors_not_panics() {
        let err = parse("99999999999999999999h").unwrap_err();
        assert!(err.to_string().contains("too large"), "{err}");
        assert!(parse("999999999999999999999999999999999999999999s").is_err());
    }

    #[test]
    fn display_round_trips() {
        for text in ["0s", "5m", "1h30m", "1.5s", "250ms", "10h0m", "59s"] {
            let d: GoDuration = text.parse().unwrap();
            let printed = d.to_string();
            assert_eq!(
                printed.parse::<GoDuration>().unwrap(),
                d,
                "{text} -> {printed}"
            );
        }
        assert_eq!(GoDuration::from_secs(5400).to_string(), "1h30m0s");
        assert_eq!(GoDuration::from_secs(300).to_string(), "5m0s");
    }

    #[test]
    fn schema_pattern_agrees_with_parser() {
        // The CRD pattern and the parser must accept the same language, or apply-time validation would
        // let through values the controller then refuses (or the reverse).
        let pattern = jsonschema::validator_for(&serde_json::json!({
            "type": "string", "pattern": GO_DURATION_PATTERN
        }))
        .unwrap();
        for text in [
            "600s",
            "5m",
            "1h30m",
            "1.5h",
            ".5s",
            "0",
            "2µs",
            "1h0m0.25s",
            "",
            "5",
            "1d",
            "-5m",
            "1h30",
            "h",
            ".s",
            "1 h",
            "1e5s",
        ] {
            assert_eq!(
                pattern.is_valid(&serde_json::json!(text)),
                parse(text).is_ok() && !text.starts_with('+'),
                "pattern and parser disagree on {text:?}"
            );
        }
    }
}
