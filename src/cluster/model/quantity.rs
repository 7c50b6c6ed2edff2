//! Kubernetes resource quantities (`500m`, `1.5Gi`, `2e3`), parsed exactly.
//!
//! Written here rather than taken from `kube_quantity`: that crate converts to integers by truncating the
//! decimal mantissa (`1.5Gi` becomes 1Gi) and cannot express milli-units, and tidal's fit and utilization
//! decisions need the scheduler's exact arithmetic (CPU in millicores, everything else rounded up).

use k8s_openapi::apimachinery::pkg::api::resource::Quantity;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid quantity {text:?}: {reason}")]
pub struct QuantityError {
    pub text: String,
    pub reason: &'static str,
}

/// The quantity in thousandths of its unit, rounded up (the scheduler's `MilliValue`).
pub(crate) fn milli_value(q: &Quantity) -> Result<i64, QuantityError> {
    parse_scaled(&q.0, 3)
}

/// The quantity in whole units, rounded up (the scheduler's `Value`).
pub(crate) fn value(q: &Quantity) -> Result<i64, QuantityError> {
    parse_scaled(&q.0, 0)
}

/// Parses `text` and returns it multiplied by `10^extra_exponent`, rounded towards +∞.
fn parse_scaled(text: &str, extra_exponent: i32) -> Result<i64, QuantityError> {
    let fail = |reason| QuantityError {
        text: text.to_owned(),
        reason,
    };
    let trimmed = text.trim();
    let (negative, unsigned) = match trimmed.as_bytes().first() {
        Some(b'-') => (true, &trimmed[1..]),
        Some(b'+') => (false, &trimmed[1..]),
        _ => (false, trimmed),
    };
    let number_len = unsigned
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(unsigned.len());
    let (number, suffix) = unsigned.split_at(number_len);
    let (whole, fraction) = number.split_once('.').unwrap_or((number, ""));
    if whole.is_empty() && fraction.is_empty() {
        return Err(fail("expected a number"));
    }
    if fraction.contains('.') {
        return Err(fail("two decimal points"));
    }
    let (binary_power, decimal_exponent): (u32, i32) = match suffix {
        "" => (0, 0),
        "Ki" => (1, 0),
        "Mi" => (2, 0),
        "Gi" => (3, 0),
        "Ti" => (4, 0),
        "Pi" => (5, 0),
        "Ei" => (6, 0),
        "n" => (0, -9),
        "u" => (0, -6),
        "m" => (0, -3),
        "k" => (0, 3),
        "M" => (0, 6),
        "G" => (0, 9),
        "T" => (0, 12),
        "P" => (0, 15),
        "E" => (0, 18),
        s if s.starts_with(['e', 'E']) => {
            let exponent: i32 = s[1..].parse().map_err(|_| fail("bad exponent"))?;
            if !(-30..=30).contains(&exponent) {
                return Err(fail("exponent out of range"));
            }
            (0, exponent)
        }
        _ => return Err(fail("unknown suffix")),
    };
    // Keep at most 30 significant fraction digits: anything finer cannot change an i64 result.
    let fraction = &fraction[..fraction.len().min(30)];
    let digits = format!("{whole}{fraction}");
    let mantissa: i128 = digits.trim_start_matches('0').parse().or_else(|_| {
        if digits.bytes().all(|b| b == b'0') {
            Ok(0)
        } else {
            Err(fail("number too large"))
        }
    })?;
    let exponent = decimal_exponent + extra_exponent - fraction.len() as i32;
    let binary = 1024i128.pow(binary_power);
    let too_large = || fail("too large");
    let scaled = mantissa.checked_mul(binary).ok_or_else(too_large)?;
    let result = if exponent >= 0 {
        10i128
            .checked_pow(exponent as u32)
            .and_then(|p| scaled.checked_mul(p))
            .ok_or_else(too_large)?
    } else {
        let divisor = 10i128
            .checked_pow((-exponent) as u32)
            .ok_or_else(too_large)?;
        let quotient = scaled / divisor;
        if scaled % divisor != 0 && !negative {
            quotient + 1
        } else {
            quotient
        }
    };
    let signed = if negative { -result } else { result };
    i64::try_from(signed).map_err(|_| too_large())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q(s: &str) -> Quantity {
        Quantity(s.to_owned())
    }

    #[test]
    fn cpu_in_millicores() {
        assert_eq!(milli_value(&q("1")).unwrap(), 1000);
        assert_eq!(milli_value(&q("500m")).unwrap(), 500);
        assert_eq!(milli_value(&q("0.25")).unwrap(), 250);
        assert_eq!(milli_value(&q("7800m")).unwrap(), 7800);
        assert_eq!(
            milli_value(&q("100u")).unwrap(),
            1,
            "rounds up like the scheduler"
        );
        assert_eq!(milli_value(&q("1e3")).unwrap(), 1_000_000);
    }

    #[test]
    fn memory_in_bytes() {
        assert_eq!(value(&q("4Gi")).unwrap(), 4 << 30);
        assert_eq!(value(&q("1.5Gi")).unwrap(), 3 << 29);
        assert_eq!(value(&q("128Mi")).unwrap(), 128 << 20);
        assert_eq!(value(&q("1k")).unwrap(), 1000);
        assert_eq!(value(&q("110")).unwrap(), 110);
        assert_eq!(value(&q("1500m")).unwrap(), 2, "rounds up");
        assert_eq!(value(&q("0")).unwrap(), 0);
        assert_eq!(value(&q("000.000")).unwrap(), 0);
    }

    #[test]
    fn bad_quantities_are_errors() {
        for bad in [
            "",
            "abc",
            "1x",
            "1..5",
            "1Gi2",
            "99999999999999999999999Ei",
            "1e99",
        ] {
            assert!(value(&q(bad)).is_err(), "{bad:?}");
        }
    }
}
