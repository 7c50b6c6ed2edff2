"""tidal's CRDs on a real kube-apiserver: what `kubectl apply` of the shipped examples and of bad objects
gets there. tests/offline/policies.rs checks the same with the schema and kube's client-side CEL; only
the API server compiles the CEL rules in its own environment and answers with the messages a user sees.

Runs when TIDAL_TEST_APISERVER names a real API server (see live.py), skipped otherwise. Creates the
CRDs if they are missing (and leaves them: another user of that server may hold objects of these kinds);
every object is sent as a server-side dry run, so nothing else is stored.
"""

from __future__ import annotations

import copy
import pathlib
import time

import pytest
import yaml

import live
from live import call

pytestmark = live.needed

ROOT = pathlib.Path(__file__).resolve().parents[2]
CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
PLURALS = {"DeschedulingPolicy": "deschedulingpolicies", "RevocableZone": "revocablezones"}


def create(obj: dict) -> tuple[int, dict]:
    """`kubectl apply --dry-run=server --validate=strict` of a new tidal object."""
    path = f"/apis/tidal.dev/v1alpha1/{PLURALS[obj['kind']]}?dryRun=All&fieldValidation=Strict"
    return call("POST", path, obj)


@pytest.fixture(scope="module", autouse=True)
def crds():
    for crd in yaml.safe_load_all((ROOT / "charts/tidal/crds/tidal-crds.yaml").read_text()):
        name = crd["metadata"]["name"]
        code, _ = call("GET", f"{CRDS}/{name}")
        if code == 404:
            code, answer = call("POST", CRDS, crd)
            assert code == 201, answer
        deadline = time.monotonic() + 30
        while True:
            _, current = call("GET", f"{CRDS}/{name}")
            conditions = {c["type"]: c["status"] for c in (current.get("status") or {}).get("conditions") or []}
            if conditions.get("Established") == "True" or time.monotonic() > deadline:
                break
            time.sleep(0.5)
        assert conditions.get("Established") == "True", current.get("status")
        assert conditions.get("NonStructuralSchema") != "True", current["status"]


def shipped() -> list[tuple[str, dict]]:
    out = []
    for path in sorted((ROOT / "policies").glob("*.yaml")) + [ROOT / "examples/demo-cluster.yaml"]:
        for doc in yaml.safe_load_all(path.read_text()):
            if not doc:
                continue
            for item in doc.get("items", [doc]) if doc.get("kind", "").endswith("List") else [doc]:
                if item.get("apiVersion") == "tidal.dev/v1alpha1":
                    out.append((f"{path.name}:{item['metadata']['name']}", item))
    return out


@pytest.mark.parametrize("name, obj", shipped(), ids=[n for n, _ in shipped()])
def test_every_shipped_object_is_accepted(name, obj):
    obj = {k: v for k, v in obj.items() if k != "status"}
    code, answer = create(obj)
    assert code == 201, answer.get("message", answer)


ZONE = {
    "apiVersion": "tidal.dev/v1alpha1",
    "kind": "RevocableZone",
    "metadata": {"name": "z"},
    "spec": {"windows": [{"time": "22:00-06:00"}], "timeZone": "Europe/Berlin", "evictPeriod": "2m"},
}
POLICY = {
    "apiVersion": "tidal.dev/v1alpha1",
    "kind": "DeschedulingPolicy",
    "metadata": {"name": "p"},
    "spec": {
        "mode": "Evict",
        "strategies": {"tdm": {}},
        "defaults": {"jobBudget": {"maxUnavailable": "25%"}},
    },
}


def changed(base: dict, **spec) -> dict:
    obj = copy.deepcopy(base)
    obj["spec"].update(spec)
    return obj


@pytest.mark.parametrize(
    "obj, says",
    [
        (changed(ZONE, windows=[{"time": "25:00-06:00"}]), "spec.windows[0].time"),
        (changed(ZONE, windows=[{"time": "08:00-20:00", "days": ["Monday"]}]), "spec.windows[0].days[0]"),
        (changed(ZONE, windows=[{"time": "22:00-06:00"}, {"time": "22:00-06:00"}]), "windows must not repeat"),
        (changed(ZONE, evictPeriod="5 minutes"), "spec.evictPeriod"),
        (changed(ZONE, evictPeriod="500ms"), "evictPeriod must be at least 1s"),
        (changed(ZONE, drainBefore="24h"), "drainBefore must be auto or shorter than 24h"),
        (changed(ZONE, evictionNotice="24h"), "evictionNotice must be shorter than 24h"),
        (changed(ZONE, evictionNotice="ten minutes"), "spec.evictionNotice"),
        (changed(ZONE, drainbefore="5m"), "drainbefore"),
        (changed(POLICY, defaults={"jobBudget": {"maxUnavailable": 1, "minAvailable": 2}}), "set exactly one"),
        (changed(POLICY, defaults={"jobBudget": {"maxUnavailable": -1}}), "spec.defaults.jobBudget.maxUnavailable"),
        (changed(POLICY, namespaces={"include": ["a"], "exclude": ["b"]}), "set include or exclude, not both"),
        (changed(POLICY, strategies={"LowNodeUtilization": {}}), "LowNodeUtilization"),
    ],
    ids=[
        "hour 25",
        "weekday in full",
        "repeated window",
        "period in words",
        "period below 1s",
        "drain of a day",
        "notice of a day",
        "notice in words",
        "misspelt field",
        "two budgets",
        "negative budget",
        "include and exclude",
        "strategy in the descheduler's case",
    ],
)
def test_bad_objects_are_refused_with_the_reason(obj, says):
    code, answer = create(obj)
    # 422 for what the schema and its rules refuse; 400 for unknown fields (strict field validation).
    assert code in (400, 422), answer
    assert says in answer.get("message", ""), answer.get("message")
