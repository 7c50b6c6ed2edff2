//! What a kubectl user types first works: `report -n NAMESPACE`, `-v=4`, a report of an input that
//! holds no cluster says so, and pods a policy's settings leave alone are a count, listed with
//! `-o wide`.

use std::{
    path::PathBuf,
    process::{Command, Output},
};

use serde_json::Value;

const DEMO_NOW: &str = "2026-11-23T09:30:00Z";

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn tidal(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_tidal"))
        .args(args)
        .current_dir(root())
        .output()
        .expect("run tidal")
}

fn stdout(output: &Output) -> String {
    assert!(output.status.success(), "{output:?}");
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn demo_report(extra: &[&str]) -> Output {
    let mut args = vec![
        "report",
        "-f",
        "examples/demo-cluster.yaml",
        "--now",
        DEMO_NOW,
    ];
    args.extend(extra);
    tidal(&args)
}

/// `-n` lists only that namespace's pods; the plan is the same (the count of evictions in `ml` is
/// what the whole report has there).
#[test]
fn report_lists_one_namespace_with_dash_n() {
    let all: Value = serde_json::from_str(&stdout(&demo_report(&["-o", "json"]))).unwrap();
    let ml: Value =
        serde_json::from_str(&stdout(&demo_report(&["-n", "ml", "-o", "json"]))).unwrap();
    let in_ml = |report: &Value, list: &str| -> Vec<String> {
        report[list]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["namespace"] == "ml")
            .map(|e| e["name"].as_str().unwrap().to_owned())
            .collect()
    };
    for list in ["evictions", "skipped", "waiting"] {
        assert_eq!(in_ml(&ml, list), in_ml(&all, list), "{list}");
        assert_eq!(
            ml[list].as_array().unwrap().len(),
            in_ml(&ml, list).len(),
            "{list} has another namespace's pods"
        );
    }
    assert!(!in_ml(&all, "evictions").is_empty());
    assert!(all["evictions"].as_array().unwrap().len() > in_ml(&all, "evictions").len());
    let table = stdout(&demo_report(&["--namespace", "ml"]));
    // Pod rows start with the pod; the zones' notes still name every job.
    assert!(
        !table.lines().any(|l| l.starts_with("analytics/")),
        "{table}"
    );
    assert!(table.contains("ml/hpo-sweep-trial-1"), "{table}");
}

/// kubectl's `-v=4` and `--v=4` are taken (debug); `-v` alone is progress, as before.
#[test]
fn verbosity_takes_kubectl_levels() {
    for flag in ["-v=4", "--v=4", "--verbose=4"] {
        let output = demo_report(&[flag]);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(output.status.success(), "{flag}: {stderr}");
    }
    let output = demo_report(&["-v=x"]);
    assert!(!output.status.success());
}

/// A folder of policies, no cluster: the report says it saw no nodes and no pods.
#[test]
fn a_report_of_no_cluster_says_so() {
    let output = tidal(&["report", "-f", "policies/"]);
    let text = stdout(&output);
    assert!(
        text.contains("warning: the input holds no nodes and no pods: nothing was planned over"),
        "{text}"
    );
}

/// The demo with evictPlacementViolations off: the misplaced replica is left alone by a setting, a
/// count under the table; `-o wide` lists it with gate `policy`.
#[test]
fn pods_left_alone_by_settings_are_a_count_unless_wide() {
    let demo = std::fs::read_to_string(root().join("examples/demo-cluster.yaml")).unwrap();
    let off = demo.replace(
        "evictPlacementViolations: true",
        "evictPlacementViolations: false",
    );
    assert_ne!(demo, off);
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("demo-off.yaml");
    std::fs::write(&file, off).unwrap();
    let path = file.to_str().unwrap();
    let table = stdout(&tidal(&["report", "-f", path, "--now", DEMO_NOW]));
    assert!(
        table.contains(
            "LEFT ALONE BY SETTINGS: 1 pod (evictPlacementViolations is off: 1); -o wide lists them"
        ),
        "{table}"
    );
    assert!(!table.contains("shop/invoice-export"), "{table}");
    let wide = stdout(&tidal(&[
        "report", "-f", path, "--now", DEMO_NOW, "-o", "wide",
    ]));
    let row = wide
        .lines()
        .find(|l| l.contains("shop/invoice-export"))
        .unwrap_or_else(|| panic!("no row:\n{wide}"));
    assert!(row.contains("policy"), "{row}");
    assert!(!wide.contains("LEFT ALONE BY SETTINGS"), "{wide}");
    let json: Value = serde_json::from_str(&stdout(&tidal(&[
        "report", "-f", path, "--now", DEMO_NOW, "-o", "json",
    ])))
    .unwrap();
    assert!(
        json["skipped"]
            .as_array()
            .unwrap()
            .iter()
            .any(|s| s["gate"] == "policy"),
        "JSON keeps every row"
    );
}

/// A kubeconfig that is not there is said once, with its path.
#[test]
fn a_missing_kubeconfig_is_said_once() {
    let output = tidal(&["report", "--kubeconfig", "/nonexistent/kubeconfig"]);
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("reading kubeconfig /nonexistent/kubeconfig: No such file or directory"),
        "{stderr}"
    );
    assert_eq!(
        stderr.matches("No such file or directory").count(),
        1,
        "{stderr}"
    );
}

/// The timeline in Markdown is Markdown tables, not the terminal table in a code block.
#[test]
fn the_timeline_in_markdown_is_tables() {
    let markdown = stdout(&tidal(&[
        "timeline",
        "-f",
        "examples/demo-cluster.yaml",
        "--now",
        DEMO_NOW,
        "-o",
        "markdown",
    ]));
    assert!(!markdown.contains("```"), "{markdown}");
    for header in [
        "| Zone | Time zone | Windows | drainBefore | Now |",
        "| When | In | Zone | Event | Detail |",
        "| Zone | Closes | Drain start | Pods | Verdict | Fix |",
    ] {
        assert!(markdown.contains(header), "{header} missing:\n{markdown}");
    }
    assert!(
        markdown.contains("| Mon 09:44 | in 14m | yarn-b | round 3 evicts 4 pods |"),
        "{markdown}"
    );
}

/// `convert -f FOLDER` converts each file, naming each policy after its file so that the examples'
/// common profile name does not collide; a file given without `-f` is taken; `--name` names one.
#[test]
fn convert_reads_folders_and_names_what_it_converts() {
    let examples = "tests/fixtures/descheduler/v0.36.0/examples";
    let all = stdout(&tidal(&["convert", "-f", examples]));
    let names: Vec<&str> = all
        .lines()
        .filter_map(|l| l.strip_prefix("  name: "))
        .collect();
    let files = std::fs::read_dir(root().join(examples)).unwrap().count();
    assert_eq!(names.len(), files, "{all}");
    assert!(names.contains(&"pod-life-time-profilename"), "{names:?}");
    let unique: std::collections::BTreeSet<&&str> = names.iter().collect();
    assert_eq!(unique.len(), names.len(), "{names:?}");

    let file = format!("{examples}/pod-life-time.yml");
    assert_eq!(
        stdout(&tidal(&["convert", &file])),
        stdout(&tidal(&["convert", "-f", &file]))
    );
    let named = stdout(&tidal(&["convert", "-f", &file, "--name", "Old Pods"]));
    assert!(named.contains("  name: old-pods\n"), "{named}");
}

/// Helm values of the descheduler's charts up to v0.26 hold a v1alpha1 policy (`strategies:`)
/// without saying so: read as such. The same under an explicit v1alpha2 is refused, naming v1alpha1.
#[test]
fn old_chart_values_are_read_as_v1alpha1() {
    let dir = tempfile::tempdir().unwrap();
    let values = "kind: Deployment\ndeschedulingInterval: 10m\ndeschedulerPolicy:\n  strategies:\n    RemoveDuplicates:\n      enabled: true\n";
    let file = dir.path().join("values.yaml");
    std::fs::write(&file, values).unwrap();
    let converted = stdout(&tidal(&["convert", "-f", file.to_str().unwrap()]));
    assert!(converted.contains("removeDuplicates"), "{converted}");
    let explicit = format!("deschedulerPolicyAPIVersion: descheduler/v1alpha2\n{values}");
    std::fs::write(&file, explicit).unwrap();
    let output = tidal(&["convert", "-f", file.to_str().unwrap()]);
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("`strategies:`, which is descheduler/v1alpha1"),
        "{stderr}"
    );
}

/// Misspelt fields of a descheduler policy are named with what they were likely meant to be.
#[test]
fn convert_says_what_a_misspelt_field_was_meant_to_be() {
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        (
            "profile:\n  - name: x\n    pluginConfig: []\n",
            "it has `profile:` (did you mean profiles?)",
        ),
        (
            "profiles:\n  - name: x\n    pluginConfigs:\n      - name: PodLifeTime\n        args: {maxPodLifeTimeSeconds: 3600}\n    plugins:\n      deschedule: {enabled: [PodLifeTime]}\n",
            "pluginConfigs is not a field of a profile (did you mean pluginConfig?)",
        ),
        (
            "profiles:\n  - name: x\n    pluginConfig:\n      - name: PodLifeTime\n        args: {maxPodLifeTimeSecond: 3600}\n    plugins:\n      deschedule: {enabled: [PodLifeTime]}\n",
            "PodLifeTime.maxPodLifeTimeSecond not carried over (did you mean maxPodLifeTimeSeconds?)",
        ),
        (
            "profiles:\n  - name: x\n    pluginConfig:\n      - name: DefaultEvictor\n        args: {evictLocalStoragePod: true}\n      - name: PodLifeTime\n        args: {maxPodLifeTimeSeconds: 3600}\n    plugins:\n      deschedule: {enabled: [PodLifeTime]}\n",
            "DefaultEvictor.evictLocalStoragePod not carried over (did you mean evictLocalStoragePods?)",
        ),
    ];
    for (index, (body, expected)) in cases.iter().enumerate() {
        let file = dir.path().join(format!("policy-{index}.yaml"));
        std::fs::write(
            &file,
            format!("apiVersion: descheduler/v1alpha2\nkind: DeschedulerPolicy\n{body}"),
        )
        .unwrap();
        let output = tidal(&["convert", "-f", file.to_str().unwrap()]);
        assert!(!output.status.success(), "{body}");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(stderr.contains(expected), "{expected}:\n{stderr}");
    }
}
