//! The scheduler's matching rules, as pure functions: label selectors, node selector terms, taints and
//! tolerations. Anything malformed (an unknown operator, a `Gt` value that is not a number) matches
//! nothing, the way the API server's own validation would have refused it: a bad rule must never select
//! more pods for eviction or more nodes as destinations than a good one could.

use std::collections::BTreeMap;

use k8s_openapi::{
    api::core::v1::{NodeSelector, NodeSelectorRequirement, NodeSelectorTerm, Taint, Toleration},
    apimachinery::pkg::apis::meta::v1::LabelSelector,
};

/// Taint effects the scheduler refuses to place a pod under unless tolerated.
pub(crate) const HARD_EFFECTS: &[&str] = &["NoSchedule", "NoExecute"];

/// What label selectors read: a label's value by key. Objects keep their labels in whatever form suits
/// them (a map for nodes and namespaces, a compact sorted slice for the many cached pods).
pub(crate) trait Labels {
    fn label(&self, key: &str) -> Option<&str>;
}

impl Labels for BTreeMap<String, String> {
    fn label(&self, key: &str) -> Option<&str> {
        self.get(key).map(String::as_str)
    }
}

/// `metav1.LabelSelector` semantics: all of `matchLabels` and all of `matchExpressions`; an empty selector
/// matches everything. Callers decide what a missing (`None`) selector means, since it differs by API.
pub(crate) fn selector_matches<L: Labels + ?Sized>(selector: &LabelSelector, labels: &L) -> bool {
    let labels_match = selector
        .match_labels
        .iter()
        .flatten()
        .all(|(key, value)| labels.label(key) == Some(value.as_str()));
    labels_match
        && selector.match_expressions.iter().flatten().all(|e| {
            let values = e.values.as_deref().unwrap_or_default();
            let value = labels.label(&e.key);
            let listed = |v: &str| values.iter().any(|x| x == v);
            match e.operator.as_str() {
                "In" => value.is_some_and(listed),
                "NotIn" => value.is_none_or(|v| !listed(v)),
                "Exists" => value.is_some(),
                "DoesNotExist" => value.is_none(),
                _ => false,
            }
        })
}

/// A selector that is `None` matches nothing (topology spread, affinity terms); use
/// [`selector_matches`] directly where `None` means everything.
pub(crate) fn optional_selector_matches<L: Labels + ?Sized>(
    selector: Option<&LabelSelector>,
    labels: &L,
) -> bool {
    selector.is_some_and(|s| selector_matches(s, labels))
}

/// A selector is well formed if every operator is known and carries the values it needs.
pub(crate) fn selector_is_valid(selector: &LabelSelector) -> Result<(), String> {
    for e in selector.match_expressions.iter().flatten() {
        let count = e.values.as_ref().map_or(0, Vec::len);
        match e.operator.as_str() {
            "In" | "NotIn" if count == 0 => {
                return Err(format!(
                    "{} {}: needs at least one value",
                    e.key, e.operator
                ));
            }
            "Exists" | "DoesNotExist" if count > 0 => {
                return Err(format!("{} {}: takes no values", e.key, e.operator));
            }
            "In" | "NotIn" | "Exists" | "DoesNotExist" => {}
            other => return Err(format!("{}: unknown operator {other:?}", e.key)),
        }
    }
    Ok(())
}

/// Node selector terms are ORed; an empty list matches no node.
pub(crate) fn node_selector_matches(
    selector: &NodeSelector,
    node_name: &str,
    labels: &BTreeMap<String, String>,
) -> bool {
    selector
        .node_selector_terms
        .iter()
        .any(|term| node_term_matches(term, node_name, labels))
}

/// Requirements within a term are ANDed; a term without requirements matches no node.
pub(crate) fn node_term_matches(
    term: &NodeSelectorTerm,
    node_name: &str,
    labels: &BTreeMap<String, String>,
) -> bool {
    let expressions = term.match_expressions.as_deref().unwrap_or_default();
    let fields = term.match_fields.as_deref().unwrap_or_default();
    if expressions.is_empty() && fields.is_empty() {
        return false;
    }
    expressions
        .iter()
        .all(|r| requirement_matches(r, labels.get(&r.key).map(String::as_str)))
        && fields.iter().all(|r| {
            // `metadata.name` is the only field the scheduler supports, and only with In/NotIn.
            r.key == "metadata.name"
                && matches!(r.operator.as_str(), "In" | "NotIn")
                && requirement_matches(r, Some(node_name))
        })
}

fn requirement_matches(r: &NodeSelectorRequirement, value: Option<&str>) -> bool {
    let values = r.values.as_deref().unwrap_or_default();
    match r.operator.as_str() {
        "In" => value.is_some_and(|v| values.iter().any(|x| x == v)),
        "NotIn" => value.is_none_or(|v| !values.iter().any(|x| x == v)),
        "Exists" => value.is_some(),
        "DoesNotExist" => value.is_none(),
        "Gt" | "Lt" => {
            let [bound] = values else { return false };
            let (Some(value), Ok(bound)) = (value, bound.parse::<i64>()) else {
                return false;
            };
            let Ok(value) = value.parse::<i64>() else {
                return false;
            };
            if r.operator == "Gt" {
                value > bound
            } else {
                value < bound
            }
        }
        _ => false,
    }
}

/// `v1.Toleration.ToleratesTaint`: an empty effect tolerates every effect, an empty key with `Exists`
/// tolerates every taint, `Equal` (the default) needs the same value.
pub(crate) fn tolerates(toleration: &Toleration, taint: &Taint) -> bool {
    if let Some(effect) = toleration.effect.as_deref().filter(|e| !e.is_empty())
        && effect != taint.effect
    {
        return false;
    }
    let key = toleration.key.as_deref().unwrap_or_default();
    if !key.is_empty() && key != taint.key {
        return false;
    }
    match toleration.operator.as_deref().unwrap_or("Equal") {
        "Exists" => true,
        "Equal" | "" => {
            !key.is_empty()
                && toleration.value.as_deref().unwrap_or_default()
                    == taint.value.as_deref().unwrap_or_default()
        }
        _ => false,
    }
}

/// The first of `taints` with one of `effects` that no toleration tolerates.
pub(crate) fn untolerated<'t>(
    tolerations: &[Toleration],
    taints: &'t [Taint],
    effects: &[&str],
) -> Option<&'t Taint> {
    taints.iter().find(|taint| {
        effects.contains(&taint.effect.as_str()) && !tolerations.iter().any(|t| tolerates(t, taint))
    })
}

/// `key=value:Effect` (or `key:Effect`), the way kubectl prints taints.
pub(crate) fn taint_string(taint: &Taint) -> String {
    match taint.value.as_deref().filter(|v| !v.is_empty()) {
        Some(value) => format!("{}={value}:{}", taint.key, taint.effect),
        None => format!("{}:{}", taint.key, taint.effect),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelectorRequirement;

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    fn expr(key: &str, op: &str, values: &[&str]) -> LabelSelectorRequirement {
        LabelSelectorRequirement {
            key: key.into(),
            operator: op.into(),
            values: (!values.is_empty()).then(|| values.iter().map(|v| (*v).into()).collect()),
        }
    }

    fn node_req(key: &str, op: &str, values: &[&str]) -> NodeSelectorRequirement {
        NodeSelectorRequirement {
            key: key.into(),
            operator: op.into(),
            values: (!values.is_empty()).then(|| values.iter().map(|v| (*v).into()).collect()),
        }
    }

    #[test]
    fn label_selectors() {
        let l = labels(&[("app", "web"), ("tier", "front")]);
        assert!(
            selector_matches(&LabelSelector::default(), &l),
            "empty matches all"
        );
        assert!(!optional_selector_matches(None, &l), "missing matches none");
        let s = LabelSelector {
            match_labels: Some(labels(&[("app", "web")])),
            match_expressions: Some(vec![
                expr("tier", "In", &["front", "back"]),
                expr("env", "NotIn", &["prod"]),
                expr("app", "Exists", &[]),
                expr("gone", "DoesNotExist", &[]),
            ]),
        };
        assert!(selector_matches(&s, &l));
        let wrong = LabelSelector {
            match_expressions: Some(vec![expr("app", "Matches", &["web"])]),
            ..Default::default()
        };
        assert!(
            !selector_matches(&wrong, &l),
            "unknown operators match nothing"
        );
        assert!(selector_is_valid(&wrong).is_err());
        assert!(selector_is_valid(&s).is_ok());
    }

    #[test]
    fn node_terms() {
        let l = labels(&[("zone", "a"), ("cores", "16")]);
        let term = |reqs: Vec<NodeSelectorRequirement>| NodeSelectorTerm {
            match_expressions: Some(reqs),
            match_fields: None,
        };
        assert!(node_term_matches(
            &term(vec![node_req("zone", "In", &["a"])]),
            "n1",
            &l
        ));
        assert!(node_term_matches(
            &term(vec![node_req("cores", "Gt", &["8"])]),
            "n1",
            &l
        ));
        assert!(!node_term_matches(
            &term(vec![node_req("cores", "Lt", &["8"])]),
            "n1",
            &l
        ));
        assert!(!node_term_matches(
            &term(vec![node_req("cores", "Gt", &["x"])]),
            "n1",
            &l
        ));
        assert!(
            !node_term_matches(&term(vec![]), "n1", &l),
            "empty term matches nothing"
        );
        let by_name = NodeSelectorTerm {
            match_expressions: None,
            match_fields: Some(vec![node_req("metadata.name", "In", &["n1"])]),
        };
        assert!(node_term_matches(&by_name, "n1", &l));
        assert!(!node_term_matches(&by_name, "n2", &l));
        let selector = NodeSelector {
            node_selector_terms: vec![term(vec![node_req("zone", "In", &["b"])]), by_name],
        };
        assert!(node_selector_matches(&selector, "n1", &l), "terms are ORed");
    }

    #[test]
    fn tolerations() {
        let taint = Taint {
            key: "dedicated".into(),
            value: Some("gpu".into()),
            effect: "NoSchedule".into(),
            time_added: None,
        };
        let tol =
            |key: Option<&str>, op: Option<&str>, value: Option<&str>, effect: Option<&str>| {
                Toleration {
                    key: key.map(Into::into),
                    operator: op.map(Into::into),
                    value: value.map(Into::into),
                    effect: effect.map(Into::into),
                    toleration_seconds: None,
                }
            };
        assert!(tolerates(
            &tol(Some("dedicated"), None, Some("gpu"), None),
            &taint
        ));
        assert!(!tolerates(
            &tol(Some("dedicated"), None, Some("cpu"), None),
            &taint
        ));
        assert!(tolerates(
            &tol(Some("dedicated"), Some("Exists"), None, None),
            &taint
        ));
        assert!(tolerates(&tol(None, Some("Exists"), None, None), &taint));
        assert!(!tolerates(
            &tol(Some("dedicated"), Some("Exists"), None, Some("NoExecute")),
            &taint
        ));
        assert!(!tolerates(
            &tol(None, Some("Equal"), Some("gpu"), None),
            &taint
        ));
        let soft = Taint {
            effect: "PreferNoSchedule".into(),
            ..taint.clone()
        };
        let taints = [soft, taint];
        assert_eq!(
            untolerated(&[], &taints, HARD_EFFECTS).map(taint_string),
            Some("dedicated=gpu:NoSchedule".to_owned())
        );
    }
}
