//! Every metric the chart's alerts and dashboard (charts/tidal/files/) query is one tidal serves: the
//! names come from the controller's and the webhook's registries as `/metrics` encodes them, so a
//! renamed metric fails here rather than leaving an alert that can never fire or a panel with no data.

use std::{collections::BTreeSet, sync::Arc};

use serde_json::Value;
use tidal::{
    cluster::{ObjectKind, PodInfo, SharedCache},
    controller::metrics::{
        DrainGauges, EvictionKey, EvictionLabels, KindLabel, Metrics, PolicyStrategy, ResultLabel,
        SkipLabels, TriggerLabel, ZoneGauges,
    },
    framework::{Candidate, Exemptions, StrategyId},
    runtime::watch::WatchObserver,
    webhook::{review::Endpoint, server::WebhookState},
};

const FILES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/charts/tidal/files");

/// The sample names an exposition serves, from its `# TYPE` lines and each type's suffixes.
fn served(exposition: &str) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    for line in exposition.lines() {
        let Some(rest) = line.strip_prefix("# TYPE ") else {
            continue;
        };
        let (name, kind) = rest.split_once(' ').expect("# TYPE <name> <type>");
        let suffixes: &[&str] = match kind {
            "counter" => &["_total"],
            "histogram" => &["_bucket", "_sum", "_count"],
            "info" => &["_info"],
            "gauge" | "unknown" => &[""],
            other => panic!("{name}: a metric type this check does not know: {other}"),
        };
        names.extend(suffixes.iter().map(|suffix| format!("{name}{suffix}")));
    }
    names
}

/// The families a metrics source file registers: its `Registry::with_prefix` and the first argument
/// of each `register(` call.
fn registered(source: &str) -> BTreeSet<String> {
    let quoted = |after: &str| -> String {
        let rest = after
            .trim_start()
            .strip_prefix('"')
            .expect("a string literal");
        rest[..rest.find('"').expect("its closing quote")].to_owned()
    };
    let prefix = quoted(
        source
            .split_once("Registry::with_prefix(")
            .expect("a prefixed registry")
            .1,
    );
    source
        .split("registry.register(")
        .skip(1)
        .map(|call| format!("{prefix}_{}", quoted(call)))
        .collect()
}

/// The family names of an exposition (`# TYPE` lines).
fn families(exposition: &str) -> BTreeSet<String> {
    exposition
        .lines()
        .filter_map(|line| line.strip_prefix("# TYPE ")?.split(' ').next())
        .map(str::to_owned)
        .collect()
}

/// The controller's exposition with one series in every family: prometheus-client writes no
/// `# TYPE` line for a family that has none.
fn controller_exposition() -> String {
    let metrics = Metrics::new();
    let policy = |strategy: &str| PolicyStrategy {
        policy: "tdm".into(),
        strategy: strategy.into(),
    };
    metrics
        .cycles
        .get_or_create(&TriggerLabel {
            trigger: "zone".into(),
        })
        .inc();
    metrics
        .strategy_duration
        .get_or_create(&policy("tdm"))
        .observe(0.01);
    metrics.add_planned(policy("tdm"), 1);
    metrics.add_evictions(
        EvictionKey {
            series: EvictionLabels {
                policy: "tdm".into(),
                strategy: "tdm".into(),
                result: "evicted".into(),
                zone: "nightly".into(),
            },
            namespace: "batch".into(),
            node: "rev-1".into(),
        },
        1,
    );
    metrics.add_skips(
        SkipLabels {
            policy: "tdm".into(),
            gate: "budget".into(),
        },
        1,
    );
    metrics.set_cache_sizes(1, 1, 0);
    for family in [
        &metrics.watch_errors,
        &metrics.unreadable_objects,
        &metrics.relists,
        &metrics.status_errors,
    ] {
        family
            .get_or_create(&KindLabel { kind: "Pod".into() })
            .inc();
    }
    metrics
        .usage_polls
        .get_or_create(&ResultLabel {
            result: "ok".into(),
        })
        .inc();
    metrics.set_zones(&[ZoneGauges {
        zone: "nightly".into(),
        open: true,
        draining: true,
        next_change: Some(1.0),
        preemptable_pods: 1,
    }]);
    metrics.set_drains(&[DrainGauges {
        zone: "nightly".into(),
        remaining_pods: 1,
        expected_empty: Some(1.0),
        margin: Some(-1.0),
        at_risk: true,
        start: Some(0.0),
    }]);
    metrics.add_notice("nightly", "given");
    let pod: k8s_openapi::api::core::v1::Pod = serde_json::from_value(
        tidal_testkit::objects::pod("batch/etl-0", "rev-1")
            .label("volcano.sh/preemptable", "true")
            .into_value(),
    )
    .expect("a pod");
    let candidate = Candidate {
        pod: Arc::new(PodInfo::from_pod(&pod).expect("named")),
        strategy: StrategyId::Tdm,
        reason: String::new(),
        zone: Some("nightly".into()),
        held: None,
        exempt: Exemptions::default(),
        gang: None,
    };
    metrics.add_work_lost(&candidate, "evicted", jiff::Timestamp::now());
    metrics.encode()
}

/// The webhook's exposition with one series in every family.
fn webhook_exposition() -> String {
    let state = WebhookState::new(SharedCache::new(&[]), std::time::Duration::ZERO);
    // A body that is no AdmissionReview is answered (400) and counted, with its duration.
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("a runtime");
    runtime.block_on(tidal::webhook::server::admit(
        &state,
        Endpoint::MutatePods,
        b"not a review",
    ));
    let metrics = &state.metrics;
    metrics.waited(Endpoint::MutatePods);
    metrics.cert_reloaded();
    metrics.body_cut_off();
    metrics.set_synced(true);
    metrics.watch_error(ObjectKind::Pod);
    metrics.unreadable(ObjectKind::Pod);
    metrics.encode()
}

/// PromQL words that are neither metric nor label names.
const KEYWORDS: [&str; 13] = [
    "and",
    "or",
    "unless",
    "by",
    "without",
    "on",
    "ignoring",
    "group_left",
    "group_right",
    "offset",
    "bool",
    "atan2",
    "inf",
];

/// The metric names an expression selects. A small lexer rather than a parser: string literals,
/// durations and numbers are skipped, identifiers inside `{…}` are label names, identifiers
/// followed by `(` are functions or aggregations, and the parenthesised list after `by`, `on`,
/// `without`, `ignoring`, `group_left` or `group_right` holds label names.
fn metric_names(expr: &str) -> Vec<String> {
    let chars: Vec<char> = expr.chars().collect();
    let mut names = Vec::new();
    let (mut i, mut braces) = (0, 0usize);
    let mut label_list = false;
    let mut after_grouping = false;
    while i < chars.len() {
        let c = chars[i];
        match c {
            '"' | '\'' | '`' => {
                i += 1;
                while i < chars.len() && chars[i] != c {
                    i += if chars[i] == '\\' { 2 } else { 1 };
                }
                i += 1;
            }
            '{' => {
                braces += 1;
                i += 1;
            }
            '}' => {
                braces = braces.saturating_sub(1);
                i += 1;
            }
            '(' => {
                label_list = after_grouping;
                after_grouping = false;
                i += 1;
            }
            ')' => {
                label_list = false;
                i += 1;
            }
            '[' => {
                // A range or subquery: its durations are not names.
                while i < chars.len() && chars[i] != ']' {
                    i += 1;
                }
                i += 1;
            }
            '$' => {
                // A Grafana variable ($zone, ${datasource}, $__rate_interval).
                i += 1;
                while i < chars.len()
                    && (chars[i].is_alphanumeric() || matches!(chars[i], '_' | '{' | '}'))
                {
                    i += 1;
                }
            }
            c if c.is_ascii_digit() || c == '.' => {
                while i < chars.len() && (chars[i].is_ascii_alphanumeric() || chars[i] == '.') {
                    i += 1;
                }
            }
            c if c.is_ascii_alphabetic() || c == '_' || c == ':' => {
                let start = i;
                while i < chars.len()
                    && (chars[i].is_ascii_alphanumeric() || matches!(chars[i], '_' | ':'))
                {
                    i += 1;
                }
                let word: String = chars[start..i].iter().collect();
                let rest: String = chars[i..].iter().collect();
                let rest = rest.trim_start();
                // `sum by (…) (…)`: an aggregation whose grouping comes first.
                let aggregation = ["by", "without"].iter().any(|word| {
                    rest.strip_prefix(word)
                        .is_some_and(|after| after.trim_start().starts_with('('))
                });
                let next = rest.chars().next();
                let grouping = matches!(
                    word.as_str(),
                    "by" | "without" | "on" | "ignoring" | "group_left" | "group_right"
                );
                if grouping {
                    after_grouping = true;
                } else if braces == 0
                    && !label_list
                    && next != Some('(')
                    && !aggregation
                    && !KEYWORDS.contains(&word.as_str())
                {
                    names.push(word);
                }
            }
            _ => i += 1,
        }
    }
    names
}

/// The expressions of the alerting rules and the PromQL in their annotations' `query` calls.
fn alert_queries(text: &str) -> Vec<(String, String)> {
    let rules: Value = serde_saphyr::from_str(text).expect("alerts.yaml is YAML");
    let mut queries = Vec::new();
    for group in rules["groups"].as_array().expect("groups") {
        for rule in group["rules"].as_array().expect("rules") {
            let alert = rule["alert"].as_str().expect("alert").to_owned();
            queries.push((
                alert.clone(),
                rule["expr"].as_str().expect("expr").to_owned(),
            ));
            for annotation in rule["annotations"]
                .as_object()
                .expect("annotations")
                .values()
            {
                let annotation = annotation.as_str().expect("string");
                // {{ with printf `<promql>` ... | query }}: the PromQL is the raw string.
                for piece in annotation.split("printf `").skip(1) {
                    let promql = piece.split('`').next().expect("closing backtick");
                    queries.push((format!("{alert} (annotation)"), promql.to_owned()));
                }
            }
        }
    }
    queries
}

/// The panels' queries and the variables' queries (`label_values(<selector>, <label>)`).
fn dashboard_queries(text: &str) -> Vec<(String, String)> {
    let dashboard: Value = serde_json::from_str(text).expect("dashboard.json is JSON");
    let mut queries = Vec::new();
    for panel in dashboard["panels"].as_array().expect("panels") {
        for target in panel["targets"].as_array().into_iter().flatten() {
            let title = panel["title"].as_str().expect("title").to_owned();
            queries.push((title, target["expr"].as_str().expect("expr").to_owned()));
        }
    }
    for variable in dashboard["templating"]["list"]
        .as_array()
        .expect("templating")
    {
        let Some(query) = variable["query"]["query"].as_str() else {
            continue;
        };
        let selector = query
            .strip_prefix("label_values(")
            .and_then(|rest| rest.rsplit_once(','))
            .map(|(selector, _label)| selector)
            .unwrap_or_else(|| panic!("a variable query this check does not read: {query}"));
        let name = format!("variable {}", variable["name"].as_str().expect("name"));
        queries.push((name, selector.to_owned()));
    }
    queries
}

#[test]
fn the_expositions_hold_every_family_the_sources_register() {
    for (source, exposition) in [
        (
            include_str!("../../src/controller/metrics.rs"),
            controller_exposition(),
        ),
        (
            include_str!("../../src/webhook/metrics.rs"),
            webhook_exposition(),
        ),
    ] {
        let registered = registered(source);
        assert!(registered.len() > 5, "{registered:?}");
        let encoded = families(&exposition);
        let unseen: Vec<_> = registered.difference(&encoded).collect();
        let unknown: Vec<_> = encoded.difference(&registered).collect();
        assert!(
            unseen.is_empty() && unknown.is_empty(),
            "registered but given no series above: {unseen:?}; encoded but not registered: {unknown:?}"
        );
    }
    let served = served(&controller_exposition());
    for name in [
        "tidal_zone_drain_at_risk",
        "tidal_evictions_total",
        "tidal_cycle_duration_seconds_bucket",
        "tidal_drain_work_lost_seconds_total",
    ] {
        assert!(served.contains(name), "{name} not in {served:?}");
    }
    // Counters are served with `_total` only.
    assert!(!served.contains("tidal_evictions"));
}

#[test]
fn the_lexer_finds_metrics_and_nothing_else() {
    let names = metric_names(
        r#"histogram_quantile(0.9, sum by (le, endpoint) (rate(tidal_webhook_request_duration_seconds_bucket{namespace=~"$namespace", endpoint!="x"}[$__rate_interval])))
           / on (job, instance) group_left (pod) max by (zone) (up{job="a"} offset 5m) and tidal_leader == bool 1
           - time() * 1e3 > sum(rate(x:recorded:rate5m[5m:1m]))"#,
    );
    assert_eq!(
        names,
        [
            "tidal_webhook_request_duration_seconds_bucket",
            "up",
            "tidal_leader",
            "x:recorded:rate5m"
        ]
    );
}

#[test]
fn every_metric_the_alerts_and_the_dashboard_query_is_served() {
    let served: BTreeSet<String> = served(&controller_exposition())
        .into_iter()
        .chain(served(&webhook_exposition()))
        .collect();
    let mut checked = BTreeSet::new();
    let mut unknown = Vec::new();
    let mut files = 0;
    for entry in std::fs::read_dir(FILES).expect("charts/tidal/files") {
        let path = entry.expect("entry").path();
        let text = std::fs::read_to_string(&path).expect("readable");
        let queries = match path.extension().and_then(|e| e.to_str()) {
            Some("yaml") => alert_queries(&text),
            Some("json") => dashboard_queries(&text),
            _ => continue,
        };
        files += 1;
        let file = path
            .file_name()
            .expect("name")
            .to_string_lossy()
            .into_owned();
        assert!(!queries.is_empty(), "{file}: no queries found");
        for (place, query) in queries {
            let names = metric_names(&query);
            assert!(!names.is_empty(), "{file}, {place}: no metric in {query}");
            for name in names {
                // `up` is Prometheus's own, one per target the ServiceMonitor scrapes.
                if name != "up" && !served.contains(&name) {
                    unknown.push(format!("{file}, {place}: {name}"));
                }
                checked.insert(name);
            }
        }
        // Names outside the queries (a description, a panel's text) must not go stale either.
        for word in text.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_')) {
            if word.starts_with("tidal_") && !served.contains(word) {
                unknown.push(format!("{file}: {word} (in text)"));
            }
        }
    }
    assert_eq!(files, 2, "alerts.yaml and dashboard.json");
    assert!(
        unknown.is_empty(),
        "not served by tidal:\n{}",
        unknown.join("\n")
    );
    for name in [
        "tidal_zone_drain_at_risk",
        "tidal_evictions_total",
        "tidal_leader",
        "tidal_webhook_requests_total",
        "tidal_webhook_request_duration_seconds_bucket",
        "up",
    ] {
        assert!(checked.contains(name), "{name} never checked: {checked:?}");
    }
}
