"""The chart's node policy (a ValidatingAdmissionPolicy) on a real kube-apiserver.

test_chart.py evaluates the policy's CEL with a Python CEL engine; only a real API server compiles the
expressions in its own CEL environment (it refuses to create a policy whose expressions do not compile)
and enforces them. This test runs when one is given, and is
skipped otherwise (CI has no API server):

    TIDAL_TEST_APISERVER=https://127.0.0.1:6443 TIDAL_TEST_TOKEN=<token of a system:masters user> \
    TIDAL_TEST_CA=/path/ca.crt scripts/test-chart -k live

It creates the policy, its binding and one node named tidal-node-policy-check-*, acts on the node as the
controller's service account (by impersonation), and deletes all three at the end.
"""

from __future__ import annotations

import time
import uuid

import pytest

import live
from live import call
from test_chart import CONTROLLER_USER, GPU_TAINT, NODE_POLICY, ZONE_TAINT, chart, one, render  # noqa: F401

pytestmark = live.needed

POLICIES = "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies"
BINDINGS = "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicybindings"
JSON_PATCH = "application/json-patch+json"


@pytest.fixture(scope="module")
def live_policy(chart):
    docs, _ = render(chart, {})
    policy = one(docs, "ValidatingAdmissionPolicy", NODE_POLICY)
    binding = one(docs, "ValidatingAdmissionPolicyBinding", NODE_POLICY)
    name = policy["metadata"]["name"]
    for path, doc in [(POLICIES, policy), (BINDINGS, binding)]:
        call("DELETE", f"{path}/{name}")
        code, answer = call("POST", path, doc)
        assert code == 201, answer
    node = f"tidal-node-policy-check-{uuid.uuid4().hex[:8]}"
    code, answer = call(
        "POST",
        "/api/v1/nodes",
        {"apiVersion": "v1", "kind": "Node", "metadata": {"name": node}, "spec": {"taints": [GPU_TAINT]}},
    )
    assert code == 201, answer
    # The API server taints a new node not-ready (TaintNodesByCondition) until a node controller sees it
    # Ready; this one never runs a kubelet: only the taint the test starts from stays.
    code, answer = call("PATCH", f"/api/v1/nodes/{node}", [{"op": "replace", "path": "/spec/taints",
                                                             "value": [GPU_TAINT]}], content_type=JSON_PATCH)
    assert code == 200, answer
    yield name, node
    call("DELETE", f"/api/v1/nodes/{node}")
    call("DELETE", f"{BINDINGS}/{name}")
    call("DELETE", f"{POLICIES}/{name}")


def controller_patch(node: str, ops: list[dict]):
    return call("PATCH", f"/api/v1/nodes/{node}", ops, impersonate=CONTROLLER_USER, content_type=JSON_PATCH)


def refused_until_enforced(node: str, ops: list[dict]) -> tuple[int, dict]:
    """The first refusal of `ops`: a new policy takes a moment to be enforced. Fails if it never is."""
    deadline = time.monotonic() + 30
    while True:
        code, answer = controller_patch(node, ops)
        if code != 200 or time.monotonic() > deadline:
            return code, answer
        # Allowed before the policy was enforced: undo and try again.
        call("PUT", f"/api/v1/nodes/{node}", {**answer, "metadata": {**answer["metadata"], "labels": {}}})
        time.sleep(0.5)


def test_the_controller_may_change_its_taint_and_nothing_else(live_policy):
    _, node = live_policy
    label = [{"op": "add", "path": "/metadata/labels", "value": {"volcano.sh/revocable-zone": "z2"}}]
    code, answer = refused_until_enforced(node, label)
    assert code == 422 and "taints only" in answer.get("message", ""), answer

    add_zone_taint = [{"op": "add", "path": "/spec/taints/-", "value": ZONE_TAINT}]
    code, answer = controller_patch(node, add_zone_taint)
    assert code == 200, answer
    assert answer["spec"]["taints"] == [GPU_TAINT, ZONE_TAINT]

    for ops, says in [
        ([{"op": "remove", "path": "/spec/taints/0"}], "other taints must stay"),
        ([{"op": "replace", "path": "/spec/taints/1/effect", "value": "NoExecute"}], "effect NoSchedule"),
        ([{"op": "add", "path": "/spec/unschedulable", "value": True}], "taints only"),
    ]:
        code, answer = controller_patch(node, ops)
        assert code == 422 and says in answer.get("message", ""), (ops, answer)

    code, answer = controller_patch(node, [{"op": "remove", "path": "/spec/taints/1"}])
    assert code == 200 and answer["spec"]["taints"] == [GPU_TAINT], answer

    code, answer = call("DELETE", f"/api/v1/nodes/{node}", impersonate=CONTROLLER_USER)
    assert code == 422 and "create or delete" in answer.get("message", ""), answer

    # Anyone else is left alone.
    code, answer = call("PATCH", f"/api/v1/nodes/{node}", label, content_type=JSON_PATCH)
    assert code == 200, answer
