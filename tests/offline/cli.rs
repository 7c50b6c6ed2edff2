//! The CLI as kubectl users expect it: `tidal convert` from a descheduler policy to policies `tidal report`
//! plans with, and `-f` reading files, folders and stdin.

use std::{path::Path, process::Command};

use serde_json::Value;

pub(crate) fn tidal(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_tidal"))
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("run tidal")
}

#[test]
fn the_example_descheduler_policy_converts_into_a_policy_the_report_plans_with() {
    let output = tidal(&["convert", "-f", "examples/descheduler-policy.yaml"]);
    assert!(output.status.success(), "{output:?}");
    let yaml = String::from_utf8(output.stdout).unwrap();
    // Its nodeFit is the one difference, and tidal's is the stricter.
    assert!(
        yaml.contains("# Stricter in tidal (evicts less than the descheduler would):\n#   - profile balance: DefaultEvictor.nodeFit"),
        "the notes travel with the file: {yaml}"
    );
    // The descheduler's `nodeSelector: "node-pool=general"` as the policy's label selector.
    assert!(yaml.contains("nodeSelector:"), "{yaml}");
    assert!(yaml.contains("key: node-pool"), "{yaml}");

    let dir = tempfile::tempdir().unwrap();
    let converted = dir.path().join("converted.yaml");
    std::fs::write(&converted, &yaml).unwrap();
    let report = tidal(&[
        "report",
        "--cluster",
        "examples/demo-cluster.yaml",
        "--cluster",
        converted.to_str().unwrap(),
        "--policy",
        "balance",
        "--now",
        "2026-11-23T09:30:00Z",
        "-o",
        "json",
    ]);
    assert!(report.status.success(), "{report:?}");
    let report: Value = serde_json::from_slice(&report.stdout).unwrap();
    let policies = report["policies"].as_array().unwrap();
    assert_eq!(policies.len(), 1, "{report}");
    assert_eq!(policies[0]["name"], "balance", "{report}");
    assert_eq!(policies[0]["mode"], "DryRun", "{report}");
}

#[test]
fn a_descheduler_policy_in_the_wrong_place_says_what_to_do() {
    let output = tidal(&["convert", "-f", "examples/demo-cluster.yaml"]);
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("not a descheduler policy"), "{stderr}");
    assert!(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("examples/descheduler-policy.yaml")
            .exists()
    );
}

#[test]
fn the_report_refuses_a_descheduler_policy_and_points_at_convert() {
    let output = tidal(&[
        "report",
        "--cluster",
        "examples/demo-cluster.yaml",
        "--cluster",
        "examples/descheduler-policy.yaml",
    ]);
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("tidal convert -f examples/descheduler-policy.yaml"),
        "{stderr}"
    );
}

/// `-f` as kubectl reads it: repeatable, `-` for stdin, a folder for its manifests.
#[test]
fn report_reads_files_folders_and_stdin_like_kubectl() {
    use std::io::Write;
    let json = |output: std::process::Output| -> Value {
        assert!(output.status.success(), "{output:?}");
        serde_json::from_slice(&output.stdout).unwrap()
    };
    let now = ["--now", "2026-11-23T09:30:00Z", "-o", "json"];
    let by_file = json(tidal(
        &[
            &["report", "-f", "examples/demo-cluster.yaml"][..],
            &now[..],
        ]
        .concat(),
    ));

    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/demo-cluster.yaml"),
        dir.path().join("cluster.yaml"),
    )
    .unwrap();
    std::fs::write(dir.path().join("README.md"), "not a manifest").unwrap();
    let folder = dir.path().to_str().unwrap();
    let by_folder = json(tidal(
        &[&["report", "--filename", folder][..], &now[..]].concat(),
    ));
    assert_eq!(by_folder["evictions"], by_file["evictions"]);

    let mut child = Command::new(env!("CARGO_BIN_EXE_tidal"))
        .args([&["report", "-f", "-"][..], &now[..]].concat())
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let text =
        std::fs::read(Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/demo-cluster.yaml"))
            .unwrap();
    child.stdin.take().unwrap().write_all(&text).unwrap();
    let by_stdin = json(child.wait_with_output().unwrap());
    assert_eq!(by_stdin["evictions"], by_file["evictions"]);
    assert!(!by_file["evictions"].as_array().unwrap().is_empty());

    let empty = tempfile::tempdir().unwrap();
    let output = tidal(&["report", "-f", empty.path().to_str().unwrap()]);
    assert!(!output.status.success());
    assert!(String::from_utf8_lossy(&output.stderr).contains("a folder without .yaml"));
}

#[test]
fn convert_refuses_what_would_evict_more_and_names_it() {
    let dir = tempfile::tempdir().unwrap();
    let policy = dir.path().join("policy.yaml");
    std::fs::write(
        &policy,
        "apiVersion: descheduler/v1alpha2\nkind: DeschedulerPolicy\nprofiles:\n- name: p\n  pluginConfig:\n  - name: DefaultEvictor\n    args: {priorityThreshold: {name: high}}\n  plugins:\n    deschedule:\n      enabled: [RemovePodsViolatingNodeTaints]\n",
    )
    .unwrap();
    let path = policy.to_str().unwrap();
    let output = tidal(&["convert", "-f", path]);
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("PriorityClass high"), "{stderr}");
    assert!(stderr.contains("--allow-looser"), "{stderr}");
    let output = tidal(&["convert", "-f", path, "--allow-looser"]);
    assert!(output.status.success(), "{output:?}");
    let yaml = String::from_utf8(output.stdout).unwrap();
    assert!(yaml.contains("# LOOSER in tidal"), "{yaml}");
    let output = tidal(&["convert", "-f", path, "--priority-class", "high=1000"]);
    assert!(output.status.success(), "{output:?}");
    let yaml = String::from_utf8(output.stdout).unwrap();
    assert!(yaml.contains("priorityThreshold: 1000"), "{yaml}");
}

/// Where descheduler users keep their policy: the ConfigMap of its manifests, the chart's values.
#[test]
fn convert_reads_the_descheduler_s_config_map_and_chart_values() {
    for (file, name) in [
        (
            "tests/fixtures/descheduler/v0.36.0/kubernetes/configmap.yaml",
            "profilename",
        ),
        (
            "tests/fixtures/descheduler/v0.36.0/chart/values.yaml",
            "default",
        ),
    ] {
        let output = tidal(&["convert", "-f", file]);
        assert!(output.status.success(), "{file}: {output:?}");
        let yaml = String::from_utf8(output.stdout).unwrap();
        assert!(yaml.contains(&format!("name: {name}")), "{file}: {yaml}");
    }
    // The chart runs as a CronJob every 2 minutes by default: that is the interval.
    let output = tidal(&[
        "convert",
        "-f",
        "tests/fixtures/descheduler/v0.36.0/chart/values.yaml",
    ]);
    let yaml = String::from_utf8(output.stdout).unwrap();
    assert!(yaml.contains("interval: 2m0s"), "{yaml}");
    // Its evictor: local storage no longer protected, PVCs protected.
    assert!(yaml.contains("localStoragePods: false"), "{yaml}");
    assert!(yaml.contains("pvcPods: true"), "{yaml}");
}

/// `tidal ... | head` and `2>&1 | head`: whichever pipe closes, the command ends as it would have
/// (its output cut short), never with a panic about a closed pipe.
#[test]
fn closed_pipes_end_the_command_without_a_panic() {
    let closed = || {
        let (reader, writer) = std::io::pipe().unwrap();
        drop(reader);
        writer
    };
    let status = |args: &[&str], stdout: std::io::PipeWriter, stderr: std::io::PipeWriter| {
        Command::new(env!("CARGO_BIN_EXE_tidal"))
            .args(args)
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .stdout(stdout)
            .stderr(stderr)
            .status()
            .unwrap()
            .code()
    };
    let now = ["--now", "2026-11-23T09:30:00Z"];
    for command in ["report", "timeline"] {
        let args = [
            &[command, "-f", "examples/demo-cluster.yaml", "-o", "wide"][..],
            &now,
        ]
        .concat();
        assert_eq!(status(&args, closed(), closed()), Some(0), "{args:?}");
    }
    // The error, the warnings and the notes of stderr go nowhere; the exit code still says.
    let missing = [
        "report",
        "-f",
        "examples/demo-cluster.yaml",
        "-f",
        "/nonexistent.yaml",
    ];
    assert_eq!(status(&missing, closed(), closed()), Some(1));
    let convert = [
        "convert",
        "-f",
        "tests/fixtures/descheduler/v0.36.0/chart/values.yaml",
    ];
    assert_eq!(status(&convert, closed(), closed()), Some(0));
}

/// With no cluster at all, each command says in one line what it can do without one: `run` points at
/// the report on a saved cluster (it has no `--cluster` of its own), the report at its `--cluster`.
#[test]
fn without_a_cluster_each_command_names_what_works_without_one() {
    let home = tempfile::tempdir().unwrap();
    let stderr = |command: &str| {
        let output = Command::new(env!("CARGO_BIN_EXE_tidal"))
            .arg(command)
            .env_remove("KUBECONFIG")
            .env_remove("KUBERNETES_SERVICE_HOST")
            .env_remove("TIDAL_LOG")
            .env("HOME", home.path())
            .output()
            .unwrap();
        assert_eq!(output.status.code(), Some(1), "{command}: {output:?}");
        String::from_utf8(output.stderr).unwrap()
    };
    let run = stderr("run");
    assert_eq!(run.lines().count(), 1, "{run}");
    assert!(run.contains("no cluster to talk to"), "{run}");
    assert!(run.contains("`tidal report -f FILE`"), "{run}");
    assert!(run.contains("-A -o yaml > FILE"), "{run}");
    assert!(
        !run.contains("--cluster"),
        "tidal run has no --cluster: {run}"
    );
    let report = stderr("report");
    assert_eq!(report.lines().count(), 1, "{report}");
    assert!(report.contains("--cluster FILE"), "{report}");
}

/// A policy given with `-f` beside a cluster dump, and a zone inside a dump: what `kubectl apply`
/// would refuse is said as sentences naming the file, the object, the field and what it may hold.
#[test]
fn refused_objects_are_named_with_the_field_and_what_it_may_hold() {
    let dir = tempfile::tempdir().unwrap();
    let policy = dir.path().join("policy.yaml");
    std::fs::write(
        &policy,
        "apiVersion: tidal.dev/v1alpha1\nkind: DeschedulingPolicy\nmetadata: {name: balance}\n\
         spec:\n  mode: DryRun\n  interval: 5x\n  strategies:\n    lowNodeUtilization:\n      \
         thresold: {cpu: 20}\n      thresholds: {cpu: 20}\n      targetThresholds: {cpu: 50}\n",
    )
    .unwrap();
    let output = tidal(&[
        "report",
        "-f",
        "examples/demo-cluster.yaml",
        "-f",
        policy.to_str().unwrap(),
    ]);
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert_eq!(
        stderr,
        format!(
            "error: {}: item 1 (DeschedulingPolicy balance): kubectl apply would refuse it:\n  \
             - spec.interval is \"5x\": write a duration such as 90s, 5m or 1h30m: digits and a \
             unit (ns, us, ms, s, m or h), no sign, no space\n  \
             - spec.strategies.lowNodeUtilization has no field \"thresold\": did you mean \
             \"thresholds\"?\n",
            policy.display()
        )
    );
    let dump = std::fs::read_to_string("examples/demo-cluster.yaml")
        .unwrap()
        .replacen("- time: \"20:00-06:00\"", "- time: \"25:00-26:00\"", 1)
        .replacen("evictPeriod: 2m", "evictPeriod: -1m", 1);
    let cluster = dir.path().join("cluster.yaml");
    std::fs::write(&cluster, dump).unwrap();
    let output = tidal(&["report", "-f", cluster.to_str().unwrap()]);
    let stderr = String::from_utf8(output.stderr).unwrap();
    for said in [
        "item 1 (RevocableZone yarn-a): kubectl apply would refuse it:",
        "- spec.evictPeriod is \"-1m\": write a duration",
        "- spec.windows[0].time is \"25:00-26:00\": write a daily window as HH:MM-HH:MM",
    ] {
        assert!(stderr.contains(said), "{said}: {stderr}");
    }
    assert!(!stderr.contains("^("), "no regular expression: {stderr}");
}

/// A span is written the way people say it: days are accepted, and the 7-day bound holds in days too.
#[test]
fn a_timeline_span_may_be_given_in_days() {
    let args = |span: &str| {
        [
            "timeline",
            "-f",
            "examples/demo-cluster.yaml",
            "--now",
            "2026-11-23T09:30:00Z",
            "--span",
            span,
        ]
        .map(str::to_owned)
    };
    let week = tidal(&args("7d").each_ref().map(String::as_str));
    assert!(week.status.success(), "{week:?}");
    let stdout = String::from_utf8(week.stdout).unwrap();
    assert!(
        stdout
            .starts_with("tidal timeline from 2026-11-23T09:30:00Z to 2026-11-30T09:30:00Z (168h)"),
        "{stdout}"
    );
    let too_long = tidal(&args("8d").each_ref().map(String::as_str));
    assert!(!too_long.status.success());
    let said = String::from_utf8(too_long.stderr).unwrap();
    assert!(said.contains("at most 7 days"), "{said}");
    let nonsense = tidal(&args("soon").each_ref().map(String::as_str));
    let said = String::from_utf8(nonsense.stderr).unwrap();
    assert!(said.contains("or days, such as 2d or 7d"), "{said}");
}

/// `explain -o wide` adds what the sentences rest on: the pod's node, zone, owner, job, phase,
/// priority and times, and per policy its verdict in fields and every gate that would stop the pod,
/// with its reason. The table form has none of it.
#[test]
fn explain_wide_adds_the_pod_s_facts_and_every_gate_that_would_stop_it() {
    let explain = |pod: &str, output: &str| {
        let out = tidal(&[
            "explain",
            "pod",
            pod,
            "-f",
            "examples/demo-cluster.yaml",
            "--now",
            "2026-11-23T09:30:00Z",
            "-o",
            output,
        ]);
        assert!(out.status.success(), "{out:?}");
        String::from_utf8(out.stdout).unwrap()
    };
    let etl = "analytics/etl-nightly-5d9c7b8f4-7ctzq";
    let table = explain(etl, "table");
    let wide = explain(etl, "wide");
    assert!(wide.starts_with(&table), "{wide}");
    assert!(!table.contains("DETAILS"), "{table}");
    for line in [
        "\nDETAILS\n",
        "\nnode       yarn-a-1\n",
        "\nzone       yarn-a\n",
        "\nowner      ReplicaSet etl-nightly-5d9c7b8f4\n",
        "\njob        ReplicaSet analytics/etl-nightly-5d9c7b8f4\n",
        "\npriority   1000 (batch-low)\n",
        "\ncreated    2026-11-22T20:01:11Z\n",
        "\npolicy revocable-zones (DryRun): waiting, strategy tdm, gate budget, next round \
         2026-11-23T09:32:00Z\n",
    ] {
        assert!(wide.contains(line), "{line:?} in\n{wide}");
    }
    // Each gate that would stop a pod no strategy proposes, with its reason.
    let wide = explain("monitoring/node-exporter-8kq2v", "wide");
    for line in [
        "\npolicy revocable-zones (DryRun): notProposed, strategy -, gate -, next round -\n",
        "\n  gate scope: namespace monitoring is outside the policy's namespaces\n",
        "\n  gate protected: system-critical (priority 2000001000)\n",
    ] {
        assert!(wide.contains(line), "{line:?} in\n{wide}");
    }
}

/// The binary runs on jemalloc with tidal's options compiled in (pages kept for reuse, not decayed):
/// jemalloc's statistics, asked for through its environment variable, print the options in effect.
#[cfg(all(target_os = "linux", not(target_env = "msvc")))]
#[test]
fn the_binary_runs_on_jemalloc_with_the_options_compiled_in() {
    let output = Command::new(env!("CARGO_BIN_EXE_tidal"))
        .arg("--version")
        .env("_RJEM_MALLOC_CONF", "stats_print:true")
        .output()
        .expect("run tidal");
    assert!(output.status.success(), "{output:?}");
    let stats = String::from_utf8_lossy(&output.stderr);
    assert!(stats.contains("jemalloc statistics"), "{stats}");
    assert!(stats.contains("opt.dirty_decay_ms: -1"), "{stats}");
    assert!(stats.contains("opt.muzzy_decay_ms: -1"), "{stats}");
}
