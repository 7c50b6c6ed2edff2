"""The chart's alerts (metrics.prometheusRule) and Grafana dashboard (metrics.grafanaDashboard).

The rules and the dashboard live in charts/tidal/files/ and the chart renders them from there. Rendering,
values and links are checked here with Helm alone; the rules themselves with Prometheus's promtool (`promtool
check rules`, and the unit tests of alerts_test.yaml on the file and on the rules as rendered), which these
tests skip without. That the metrics they query are ones tidal serves is tests/offline/chart_metrics.rs.
"""

from __future__ import annotations

import copy
import json
import pathlib
import re
import shutil
import subprocess

import helm_python as helm
import pytest
import yaml

from test_chart import CHART, NAMESPACE, RELEASE, ROOT, chart, find, one, render  # noqa: F401  (chart is a fixture)

FILES = CHART / "files"
ALERTS = FILES / "alerts.yaml"
DASHBOARD = FILES / "dashboard.json"
UNIT_TESTS = pathlib.Path(__file__).with_name("alerts_test.yaml")
RULE = {"metrics": {"prometheusRule": {"enabled": True}}}
BOARD = {"metrics": {"grafanaDashboard": {"enabled": True}}}
PROMTOOL = shutil.which("promtool")
needs_promtool = pytest.mark.skipif(
    PROMTOOL is None,
    reason="promtool not found: scripts/install-test-tools installs it (Debian: apt-get install prometheus)",
)


def with_values(*parts: dict) -> dict:
    """The parts merged, later ones winning, as Helm merges values files."""

    def merge(into: dict, part: dict) -> dict:
        for key, value in part.items():
            if isinstance(value, dict) and isinstance(into.get(key), dict):
                merge(into[key], value)
            else:
                into[key] = copy.deepcopy(value)
        return into

    values: dict = {}
    for part in parts:
        merge(values, part)
    return values


def rules_file() -> dict:
    return yaml.safe_load(ALERTS.read_text())


def alert_names(groups: list[dict]) -> list[str]:
    return [rule["alert"] for group in groups for rule in group["rules"]]


def rendered_groups(chart, values: dict) -> list[dict]:
    docs, _ = render(chart, values)
    return one(docs, "PrometheusRule")["spec"]["groups"]


def dashboard_config_maps(docs: list[dict]) -> list[dict]:
    return [d for d in find(docs, "ConfigMap") if "tidal.json" in d.get("data", {})]


# ---------------------------------------------------------------------------------------------- rendering


def test_neither_is_rendered_by_default(chart):
    docs, _ = render(chart, {})
    assert find(docs, "PrometheusRule") == []
    assert dashboard_config_maps(docs) == []
    # Turned on, each comes alone: the rules do not bring the dashboard or the other way round.
    docs, _ = render(chart, RULE)
    assert len(find(docs, "PrometheusRule")) == 1 and dashboard_config_maps(docs) == []
    docs, _ = render(chart, BOARD)
    assert find(docs, "PrometheusRule") == [] and len(dashboard_config_maps(docs)) == 1


def test_the_prometheus_rule_carries_the_rules_file_as_written(chart):
    docs, _ = render(chart, with_values(RULE, {"metrics": {"prometheusRule": {"labels": {"release": "prom"}}}}))
    rule = one(docs, "PrometheusRule")
    assert rule["metadata"]["namespace"] == NAMESPACE
    assert rule["metadata"]["labels"]["release"] == "prom"
    assert rule["metadata"]["labels"]["app.kubernetes.io/instance"] == RELEASE
    assert rule["spec"]["groups"] == rules_file()["groups"]
    assert len(alert_names(rule["spec"]["groups"])) == 9


def test_rule_labels_severities_and_left_out_alerts(chart):
    groups = rendered_groups(
        chart,
        with_values(
            RULE,
            {
                "metrics": {
                    "prometheusRule": {
                        "additionalRuleLabels": {"team": "platform", "severity": "overridden-by-severities"},
                        "severities": {"TidalCloseAtRisk": "page"},
                        "disabled": ["TidalWebhookFailingOpen", "TidalNoLeader"],
                    }
                }
            },
        ),
    )
    original = {rule["alert"]: rule for group in rules_file()["groups"] for rule in group["rules"]}
    names = alert_names(groups)
    assert set(names) == set(original) - {"TidalWebhookFailingOpen", "TidalNoLeader"}
    for group in groups:
        for rule in group["rules"]:
            assert rule["labels"]["team"] == "platform"
            expected = "page" if rule["alert"] == "TidalCloseAtRisk" else "overridden-by-severities"
            assert rule["labels"]["severity"] == expected
            # Nothing but the labels changes.
            assert {k: v for k, v in rule.items() if k != "labels"} == {
                k: v for k, v in original[rule["alert"]].items() if k != "labels"
            }
    # The file's own severities are kept where nothing replaces them.
    groups = rendered_groups(chart, with_values(RULE, {"metrics": {"prometheusRule": {"severities": {"TidalNoLeader": "page"}}}}))
    severities = {rule["alert"]: rule["labels"]["severity"] for group in groups for rule in group["rules"]}
    assert severities["TidalNoLeader"] == "page"
    assert severities["TidalCloseMissed"] == original["TidalCloseMissed"]["labels"]["severity"] == "critical"


def test_without_the_webhook_its_alerts_are_left_out(chart):
    groups = rendered_groups(chart, with_values(RULE, {"webhook": {"enabled": False}}))
    assert [g["name"] for g in groups] == ["tidal-drains", "tidal-controller"]
    assert not any("webhook" in name.lower() for name in alert_names(groups))


@pytest.mark.parametrize("where", ["severities", "disabled"])
def test_an_alert_name_that_does_not_exist_is_refused(chart, where):
    value = {"TidalCloseAtRsik": "critical"} if where == "severities" else ["TidalCloseAtRsik"]
    with pytest.raises(helm.HelmError) as error:
        render(chart, with_values(RULE, {"metrics": {"prometheusRule": {where: value}}}))
    assert 'no alert "TidalCloseAtRsik"' in str(error.value) and "TidalCloseAtRisk" in str(error.value)


def test_the_alerts_select_the_jobs_the_service_monitor_gives(chart):
    docs, _ = render(chart, with_values(RULE, {"metrics": {"serviceMonitor": {"enabled": True}}}))
    monitor = one(docs, "ServiceMonitor")
    job_label = monitor["spec"]["jobLabel"]
    selected = monitor["spec"]["selector"]["matchLabels"]
    services = [
        s
        for s in find(docs, "Service")
        if all(s["metadata"]["labels"].get(k) == v for k, v in selected.items())
    ]
    jobs = {s["metadata"]["labels"][job_label] for s in services}
    assert jobs == {"tidal-controller", "tidal-webhook"}
    # Whatever the release is called.
    docs, _ = render(chart, with_values(RULE, {"metrics": {"serviceMonitor": {"enabled": True}}}), release="prod-descheduler")
    assert {s["metadata"]["labels"].get(job_label) for s in find(docs, "Service") if s["metadata"]["name"].endswith("-metrics")} == jobs
    used = set()
    for group in rules_file()["groups"]:
        for rule in group["rules"]:
            used |= set(re.findall(r'\bjob="([^"]+)"', rule["expr"]))
    assert used == jobs


def test_every_alert_names_its_place_and_links_a_section_of_the_docs():
    def anchors(doc: pathlib.Path) -> set[str]:
        # GitHub's heading ids: lower case, punctuation dropped, spaces to hyphens.
        return {
            re.sub(r"[^\w\- ]", "", line.lstrip("#").strip().lower()).replace(" ", "-")
            for line in doc.read_text().splitlines()
            if line.startswith("#")
        }

    prefix = "https://github.com/tidal-dev/tidal/blob/main/"
    assert yaml.safe_load((CHART / "Chart.yaml").read_text())["home"] + "/blob/main/" == prefix
    for group in rules_file()["groups"]:
        for rule in group["rules"]:
            url = rule["annotations"]["runbook_url"]
            assert url.startswith(prefix), url
            path, anchor = url[len(prefix) :].split("#")
            assert anchor in anchors(ROOT / path), f"{rule['alert']}: no section #{anchor} in {path}"
            assert anchor == rule["alert"].lower(), "one section per alert, named after it"
            # On-call reads the description first: it names the zone, policy or pod the alert is about
            # (or the namespace, for alerts about tidal as a whole).
            by = re.search(r"by \(([^)]*)\)", rule["expr"])
            labels = {label.strip() for label in by.group(1).split(",")} if by else set()
            named = set(re.findall(r"\$labels\.(\w+)", rule["annotations"]["description"]))
            assert labels <= named | {"job", "instance"}, (rule["alert"], labels - named)
            assert named, rule["alert"]


def test_the_dashboard_config_map(chart):
    docs, _ = render(chart, BOARD)
    config_map = one(docs, "ConfigMap", "tidal-dashboard")
    assert config_map["metadata"]["namespace"] == NAMESPACE
    assert config_map["metadata"]["labels"]["grafana_dashboard"] == "1"
    assert "annotations" not in config_map["metadata"]
    assert json.loads(config_map["data"]["tidal.json"]) == json.loads(DASHBOARD.read_text())
    docs, _ = render(
        chart,
        {
            "metrics": {
                "grafanaDashboard": {
                    "enabled": True,
                    "label": "dashboards",
                    "labelValue": "tidal",
                    "namespace": "monitoring",
                    "folder": "Platform",
                    "folderAnnotation": "grafana_folder",
                    "labels": {"team": "platform"},
                }
            }
        },
    )
    config_map = one(docs, "ConfigMap", "tidal-dashboard")
    assert config_map["metadata"]["namespace"] == "monitoring"
    assert config_map["metadata"]["labels"]["dashboards"] == "tidal"
    assert config_map["metadata"]["labels"]["team"] == "platform"
    assert "grafana_dashboard" not in config_map["metadata"]["labels"]
    assert config_map["metadata"]["annotations"] == {"grafana_folder": "Platform"}


def test_the_dashboard_holds_together():
    dashboard = json.loads(DASHBOARD.read_text())
    variables = {v["name"] for v in dashboard["templating"]["list"]}
    assert {"datasource", "namespace", "zone"} <= variables
    ids = [p["id"] for p in dashboard["panels"]]
    assert len(ids) == len(set(ids))
    cells: set[tuple[int, int]] = set()
    queries = 0
    for panel in dashboard["panels"]:
        grid = panel["gridPos"]
        assert grid["x"] + grid["w"] <= 24, panel["title"]
        mine = {(x, y) for x in range(grid["x"], grid["x"] + grid["w"]) for y in range(grid["y"], grid["y"] + grid["h"])}
        assert not cells & mine, f"{panel['title']} overlaps another panel"
        cells |= mine
        if panel["type"] == "row":
            continue
        assert panel["datasource"] == {"type": "prometheus", "uid": "${datasource}"}, panel["title"]
        assert panel["targets"], panel["title"]
        for target in panel["targets"]:
            queries += 1
            assert target["datasource"] == panel["datasource"]
            used = set(re.findall(r"\$\{?(\w+)", target["expr"])) - {"__rate_interval"}
            assert used <= variables, (panel["title"], used - variables)
            # Gauges that only the leader keeps current are read on the leader.
            if re.search(r"tidal_zone_|tidal_cache_objects|tidal_last_cycle", target["expr"]):
                assert "tidal_leader == 1" in target["expr"], (panel["title"], target["expr"])
    assert queries >= 30


# ----------------------------------------------------------------------------------------------- promtool


def promtool(*args: str, cwd: pathlib.Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([PROMTOOL, *args], capture_output=True, text=True, cwd=cwd, timeout=120)


@needs_promtool
def test_promtool_checks_the_rules_file():
    result = promtool("check", "rules", str(ALERTS))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "SUCCESS: 9 rules found" in result.stdout


@needs_promtool
def test_promtool_runs_the_alerts_unit_tests_on_the_rules_file():
    result = promtool("test", "rules", UNIT_TESTS.name, cwd=UNIT_TESTS.parent)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "SUCCESS" in result.stdout


@needs_promtool
def test_the_rules_as_rendered_meet_the_same_checks_and_unit_tests(chart, tmp_path):
    values = with_values(RULE, {"metrics": {"prometheusRule": {"additionalRuleLabels": {"team": "platform"}}}})
    groups = rendered_groups(chart, values)
    rendered = tmp_path / "rendered.yaml"
    rendered.write_text(yaml.safe_dump({"groups": groups}))
    result = promtool("check", "rules", str(rendered))
    assert result.returncode == 0, result.stdout + result.stderr
    # The unit tests expect the file's labels: add the chart's one to each expected alert.
    tests = yaml.safe_load(UNIT_TESTS.read_text())
    tests["rule_files"] = [str(rendered)]
    for case in tests["tests"]:
        for check in case["alert_rule_test"]:
            for alert in check["exp_alerts"]:
                alert["exp_labels"]["team"] = "platform"
    unit = tmp_path / "alerts_test.yaml"
    unit.write_text(yaml.safe_dump(tests))
    result = promtool("test", "rules", str(unit))
    assert result.returncode == 0, result.stdout + result.stderr


@needs_promtool
def test_every_dashboard_query_is_valid_promql(tmp_path):
    dashboard = json.loads(DASHBOARD.read_text())
    exprs = [t["expr"] for p in dashboard["panels"] for t in p.get("targets", [])]
    # Grafana's variables as it would substitute them: a duration, and a regex matching all.
    substitute = {"$__rate_interval": "5m", "$namespace": ".*", "$zone": ".*"}

    def plain(expr: str) -> str:
        for variable, value in substitute.items():
            expr = expr.replace(variable, value)
        assert "$" not in expr, expr
        return expr

    rules = {"groups": [{"name": "dashboard", "rules": [{"record": f"panel:query{i}", "expr": plain(e)} for i, e in enumerate(exprs)]}]}
    path = tmp_path / "dashboard_rules.yaml"
    path.write_text(yaml.safe_dump(rules))
    result = promtool("check", "rules", str(path))
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"SUCCESS: {len(exprs)} rules found" in result.stdout
