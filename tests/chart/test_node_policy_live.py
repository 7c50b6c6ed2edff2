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

import json
import os
import ssl
import time
import urllib.error
import urllib.request
import uuid

import pytest

from test_chart import CONTROLLER_USER, GPU_TAINT, ZONE_TAINT, chart, one, render  # noqa: F401

SERVER = os.environ.get("TIDAL_TEST_APISERVER")
pytestmark = pytest.mark.skipif(not SERVER, reason="TIDAL_TEST_APISERVER not set: no real API server")

POLICIES = "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies"
BINDINGS = "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicybindings"


def call(method: str, path: str, body=None, as_controller: bool = False, patch: str | None = None):
    """(status code, decoded body) of one request as the admin, or as tidal's controller."""
    headers = {"Authorization": f"Bearer {os.environ['TIDAL_TEST_TOKEN']}", "Accept": "application/json"}
    if as_controller:
        # The policy matches on the user name; the group only spares this test an RBAC setup.
        headers["Impersonate-User"] = CONTROLLER_USER
        headers["Impersonate-Group"] = "system:masters"
    data = None
    if body is not None:
        data = json.dumps(body).encode()
        headers["Content-Type"] = patch or "application/json"
    request = urllib.request.Request(SERVER + path, data=data, method=method, headers=headers)
    context = ssl.create_default_context(cafile=os.environ.get("TIDAL_TEST_CA"))
    try:
        with urllib.request.urlopen(request, context=context, timeout=10) as response:
            return response.status, json.loads(response.read() or b"{}")
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read() or b"{}")


@pytest.fixture(scope="module")
def live_policy(chart):
    docs, _ = render(chart, {})
    policy = one(docs, "ValidatingAdmissionPolicy")
    binding = one(docs, "ValidatingAdmissionPolicyBinding")
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
    yield name, node
    call("DELETE", f"/api/v1/nodes/{node}")
    call("DELETE", f"{BINDINGS}/{name}")
    call("DELETE", f"{POLICIES}/{name}")


def controller_patch(node: str, ops: list[dict]):
    return call("PATCH", f"/api/v1/nodes/{node}", ops, as_controller=True, patch="application/json-patch+json")


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

    code, answer = call("DELETE", f"/api/v1/nodes/{node}", as_controller=True)
    assert code == 422 and "create or delete" in answer.get("message", ""), answer

    # Anyone else is left alone.
    code, answer = call(
        "PATCH", f"/api/v1/nodes/{node}", label, patch="application/json-patch+json"
    )
    assert code == 200, answer
