"""The chart's pod policy (a ValidatingAdmissionPolicy) on a real kube-apiserver.

test_chart.py evaluates the policy's CEL with a Python CEL engine; only a real API server compiles the
expressions in its own CEL environment and enforces them on real patches (a strategic merge of a pod's
status, a merge patch of its annotations). Runs when an API server is given, as
test_node_policy_live.py does (see there), and is skipped otherwise.

It creates the policy, its binding and one pod named tidal-pod-policy-check-* in `default` (with no node
it stays Pending), acts on the pod as the controller's service account (by impersonation), and deletes
all three at the end.
"""

from __future__ import annotations

import time
import uuid

import pytest

import live
from live import call
from test_chart import CONTROLLER_USER, POD_POLICY, chart, one, render  # noqa: F401

pytestmark = live.needed

POLICIES = "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies"
BINDINGS = "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicybindings"
PODS = "/api/v1/namespaces/default/pods"
STRATEGIC = "application/strategic-merge-patch+json"
MERGE = "application/merge-patch+json"
NOTICE = {"type": "tidal.dev/EvictionNotice", "status": "True", "reason": "ZoneClosing",
          "message": "zone z closes", "lastTransitionTime": "2026-11-29T04:20:00Z"}
ANNOTATIONS = {"tidal.dev/evict-after": "2026-11-29T04:30:00Z", "tidal.dev/evict-by": "2026-11-29T05:00:00Z"}


@pytest.fixture(scope="module")
def live_pod(chart):
    docs, _ = render(chart, {})
    policy = one(docs, "ValidatingAdmissionPolicy", POD_POLICY)
    binding = one(docs, "ValidatingAdmissionPolicyBinding", POD_POLICY)
    for path, doc in [(POLICIES, policy), (BINDINGS, binding)]:
        call("DELETE", f"{path}/{POD_POLICY}")
        code, answer = call("POST", path, doc)
        assert code == 201, answer
    # Without a controller manager nobody creates the namespace's default ServiceAccount.
    call("POST", "/api/v1/namespaces/default/serviceaccounts",
         {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "default"}})
    name = f"tidal-pod-policy-check-{uuid.uuid4().hex[:8]}"
    code, answer = call("POST", PODS, {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "labels": {"app": "p"}, "annotations": {"volcano.sh/preemptable": "true"}},
        "spec": {"containers": [{"name": "main", "image": "app:1"}]},
    })
    assert code == 201, answer
    yield name
    call("DELETE", f"{PODS}/{name}?gracePeriodSeconds=0")
    call("DELETE", f"{BINDINGS}/{POD_POLICY}")
    call("DELETE", f"{POLICIES}/{POD_POLICY}")


def as_controller(method: str, path: str, body, content_type: str):
    return call(method, path, body, impersonate=CONTROLLER_USER, content_type=content_type)


def test_the_controller_may_write_the_notice_and_nothing_else(live_pod):
    pod = f"{PODS}/{live_pod}"
    relabel = {"metadata": {"labels": {"app": "other"}}}
    # A new policy takes a moment to be enforced: wait until it refuses (and undo what got through).
    deadline = time.monotonic() + 30
    while True:
        code, answer = as_controller("PATCH", pod, relabel, MERGE)
        if code != 200 or time.monotonic() > deadline:
            break
        call("PATCH", pod, {"metadata": {"labels": {"app": "p"}}}, content_type=MERGE)
        time.sleep(0.5)
    assert code == 422 and "spec, labels" in answer.get("message", ""), answer

    # What the controller writes: the condition through pods/status, merged by type...
    code, answer = as_controller("PATCH", f"{pod}/status", {"status": {"conditions": [NOTICE]}}, STRATEGIC)
    assert code == 200, answer
    assert [c for c in answer["status"]["conditions"] if c["type"] == NOTICE["type"]][0]["status"] == "True"
    # ... the annotations, and taking both back.
    code, answer = as_controller("PATCH", pod, {"metadata": {"annotations": ANNOTATIONS}}, MERGE)
    assert code == 200 and answer["metadata"]["annotations"]["tidal.dev/evict-by"] == ANNOTATIONS["tidal.dev/evict-by"]
    withdrawn = {**NOTICE, "status": "False", "reason": "ZoneOpen"}
    code, answer = as_controller("PATCH", f"{pod}/status", {"status": {"conditions": [withdrawn]}}, STRATEGIC)
    assert code == 200, answer
    removed = {"metadata": {"annotations": {key: None for key in ANNOTATIONS}}}
    code, answer = as_controller("PATCH", pod, removed, MERGE)
    assert code == 200 and answer["metadata"]["annotations"] == {"volcano.sh/preemptable": "true"}, answer

    for path, body, content_type, says in [
        (pod, {"spec": {"containers": [{"name": "main", "image": "evil:1"}]}}, STRATEGIC, "spec, labels"),
        (pod, {"metadata": {"annotations": {"volcano.sh/preemptable": "false"}}}, MERGE, "only the tidal.dev/evict-after"),
        (f"{pod}/status", {"status": {"conditions": [{"type": "Ready", "status": "True"}]}}, STRATEGIC,
         "only the tidal.dev/EvictionNotice"),
    ]:
        code, answer = as_controller("PATCH", path, body, content_type)
        assert code == 422 and says in answer.get("message", ""), (body, answer)
    code, answer = call("DELETE", pod, impersonate=CONTROLLER_USER)
    assert code == 422 and "create or delete" in answer.get("message", ""), answer

    # Anyone else is left alone.
    code, answer = call("PATCH", pod, relabel, content_type=MERGE)
    assert code == 200, answer
