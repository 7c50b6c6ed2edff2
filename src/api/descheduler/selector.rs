//! The descheduler's `nodeSelector`, a label selector in Kubernetes' string syntax
//! (`pool=batch,zone in (a,b),!gpu`), as the `LabelSelector` object tidal's policies take.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, LabelSelectorRequirement};

/// Parses what `labels.Parse` accepts and a LabelSelector can say: `k=v`, `k==v`, `k!=v`,
/// `k in (a,b)`, `k notin (a,b)`, `k`, `!k`. `k>1` and `k<1` have no LabelSelector form: refused.
pub(crate) fn parse(text: &str) -> Result<LabelSelector, String> {
    let mut expressions = Vec::new();
    for part in split_top_level(text)? {
        let part = part.trim();
        if part.is_empty() {
            if text.trim().is_empty() {
                continue;
            }
            return Err(format!("{text:?}: an empty requirement between commas"));
        }
        expressions.push(requirement(part).map_err(|e| format!("{text:?}: {e}"))?);
    }
    Ok(LabelSelector {
        match_labels: None,
        match_expressions: (!expressions.is_empty()).then_some(expressions),
    })
}

/// Splits at the commas outside parentheses.
fn split_top_level(text: &str) -> Result<Vec<&str>, String> {
    let mut parts = Vec::new();
    let (mut depth, mut start) = (0u32, 0);
    for (at, c) in text.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => {
                depth = depth
                    .checked_sub(1)
                    .ok_or_else(|| format!("{text:?}: a ')' without its '('"))?;
            }
            ',' if depth == 0 => {
                parts.push(&text[start..at]);
                start = at + 1;
            }
            _ => {}
        }
    }
    if depth != 0 {
        return Err(format!("{text:?}: a '(' without its ')'"));
    }
    parts.push(&text[start..]);
    Ok(parts)
}

fn requirement(part: &str) -> Result<LabelSelectorRequirement, String> {
    let make = |key: &str, operator: &str, values: Option<Vec<String>>| {
        let key = key.trim();
        check_key(key)?;
        Ok(LabelSelectorRequirement {
            key: key.to_owned(),
            operator: operator.to_owned(),
            values,
        })
    };
    if let Some(key) = part.strip_prefix('!') {
        return make(key, "DoesNotExist", None);
    }
    for (symbol, operator) in [("!=", "NotIn"), ("==", "In"), ("=", "In")] {
        if let Some((key, value)) = part.split_once(symbol) {
            let value = value.trim();
            check_value(value)?;
            return make(key, operator, Some(vec![value.to_owned()]));
        }
    }
    if part.contains('>') || part.contains('<') {
        return Err(format!(
            "{part:?}: a numeric comparison has no LabelSelector form (matchExpressions take In, \
             NotIn, Exists, DoesNotExist)"
        ));
    }
    let words: Vec<&str> = part.splitn(2, char::is_whitespace).collect();
    match words.as_slice() {
        [key] => make(key, "Exists", None),
        [key, rest] => {
            let rest = rest.trim();
            let (operator, list) = if let Some(list) = rest.strip_prefix("notin") {
                ("NotIn", list)
            } else if let Some(list) = rest.strip_prefix("in") {
                ("In", list)
            } else {
                return Err(format!(
                    "{part:?}: expected =, ==, !=, in (...) or notin (...)"
                ));
            };
            let list = list.trim();
            let inner = list
                .strip_prefix('(')
                .and_then(|l| l.strip_suffix(')'))
                .ok_or_else(|| format!("{part:?}: the values of in/notin go in parentheses"))?;
            let values: Vec<String> = inner
                .split(',')
                .map(str::trim)
                .filter(|v| !v.is_empty())
                .map(str::to_owned)
                .collect();
            if values.is_empty() {
                return Err(format!("{part:?}: in/notin needs at least one value"));
            }
            for value in &values {
                check_value(value)?;
            }
            make(key, operator, Some(values))
        }
        _ => Err(format!("{part:?}: not a label requirement")),
    }
}

fn check_key(key: &str) -> Result<(), String> {
    let valid = !key.is_empty()
        && key.len() <= 317
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '/'));
    if valid {
        Ok(())
    } else {
        Err(format!("{key:?} is not a label key"))
    }
}

fn check_value(value: &str) -> Result<(), String> {
    let valid = value.len() <= 63
        && value
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    if valid {
        Ok(())
    } else {
        Err(format!("{value:?} is not a label value"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn expressions(text: &str) -> Vec<(String, String, Vec<String>)> {
        parse(text)
            .unwrap()
            .match_expressions
            .unwrap_or_default()
            .into_iter()
            .map(|r| (r.key, r.operator, r.values.unwrap_or_default()))
            .collect()
    }

    fn req(key: &str, op: &str, values: &[&str]) -> (String, String, Vec<String>) {
        (
            key.to_owned(),
            op.to_owned(),
            values.iter().map(|v| (*v).to_owned()).collect(),
        )
    }

    #[test]
    fn the_string_syntax_becomes_match_expressions() {
        assert_eq!(expressions("node=node1"), [req("node", "In", &["node1"])]);
        assert_eq!(
            expressions(" pool == batch , zone notin (a, b),!gpu, ssd, tier!=web"),
            [
                req("pool", "In", &["batch"]),
                req("zone", "NotIn", &["a", "b"]),
                req("gpu", "DoesNotExist", &[]),
                req("ssd", "Exists", &[]),
                req("tier", "NotIn", &["web"]),
            ]
        );
        assert_eq!(
            expressions("kubernetes.io/os in (linux)"),
            [req("kubernetes.io/os", "In", &["linux"])]
        );
        assert!(expressions("").is_empty());
    }

    #[test]
    fn what_a_label_selector_cannot_say_is_refused() {
        for bad in [
            "cores>4",
            "a=b,,c",
            "zone in a,b",
            "zone in ()",
            "(",
            "a b c",
            "a=b c",
        ] {
            assert!(parse(bad).is_err(), "{bad}");
        }
    }
}
