"""The aggregated roles: the cluster's view/edit/admin roles reach tidal's CRDs, and no user role can
write the status the controller owns."""

from __future__ import annotations

from test_chart import chart, find, grants, one, render  # noqa: F401  (chart is a fixture)

VIEW_LABEL = "rbac.authorization.k8s.io/aggregate-to-view"
EDIT_LABEL = "rbac.authorization.k8s.io/aggregate-to-edit"
KINDS = ["revocablezones", "deschedulingpolicies"]


def aggregated(docs, label):
    return [
        d
        for d in find(docs, "ClusterRole")
        if d["metadata"].get("labels", {}).get(label) == "true"
    ]


def all_rules(roles):
    return [rule for role in roles for rule in role.get("rules", [])]


def test_view_reads_and_edit_writes_tidal_kinds(chart):
    docs, _ = render(chart, {})
    view = all_rules(aggregated(docs, VIEW_LABEL))
    edit = all_rules(aggregated(docs, EDIT_LABEL))
    for kind in KINDS:
        for verb in ["get", "list", "watch"]:
            assert grants(view, "tidal.dev", kind, verb), (kind, verb)
            assert grants(view, "tidal.dev", f"{kind}/status", verb), (kind, verb)
        for verb in ["create", "update", "patch", "delete"]:
            assert not grants(view, "tidal.dev", kind, verb), f"view may {verb} {kind}"
            assert grants(edit, "tidal.dev", kind, verb), (kind, verb)
        for verb in ["update", "patch"]:
            assert not grants(edit, "tidal.dev", f"{kind}/status", verb), f"edit may {verb} {kind}/status"


def test_aggregation_can_be_turned_off(chart):
    docs, _ = render(chart, {"aggregateRoles": False})
    assert aggregated(docs, VIEW_LABEL) == []
    assert aggregated(docs, EDIT_LABEL) == []
