"""Tests of charts/tidal with the real Helm engine (helm-python-sdk: Helm's Go SDK in a wheel).

Every variant is linted, schema-checked and rendered offline; every rendered manifest is validated against
the Kubernetes JSON schemas (kubernetes-validate, strict: unknown fields fail) or, for tidal's own kinds,
against the CRD schema the chart ships. Then the things that matter for a safe install are asserted:
least-privilege RBAC (no delete on pods, ever), security contexts, webhook failure policy and selectors,
TLS material that actually chains, and arguments the tidal binary accepts.

Run with scripts/test-chart.
"""

from __future__ import annotations

import base64
import copy
import json
import re
import datetime
import os
import pathlib
import subprocess

import celpy
import helm_python as helm
import jsonschema
import kubernetes_validate
import pytest
import yaml
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, padding, rsa

ROOT = pathlib.Path(__file__).resolve().parents[2]
CHART = ROOT / "charts" / "tidal"
# kube 5 / k8s-openapi 0.29 cover Kubernetes 1.33-1.37; validate against a version in the middle.
KUBE_VERSION = "1.34.0"
RELEASE = "tidal"
NAMESPACE = "tidal-system"


def _user_ca() -> str:
    """A CA certificate (base64 PEM) as a user would give for webhook.tls.mode=secret."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(x509.oid.NameOID.COMMON_NAME, "corp-ca")])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now)
        .not_valid_after(now + datetime.timedelta(days=30))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    return base64.b64encode(cert.public_bytes(serialization.Encoding.PEM)).decode()


USER_CA = _user_ca()

VARIANTS: dict[str, dict] = {
    "default": {},
    "cert-manager": {"webhook": {"tls": {"mode": "cert-manager"}}},
    "cert-manager-issuer": {
        "webhook": {
            "tls": {
                "mode": "cert-manager",
                "certManager": {"issuerRef": {"name": "corp-ca", "kind": "ClusterIssuer", "group": "cert-manager.io"}},
            }
        }
    },
    "single-replica": {"controller": {"replicas": 1}, "webhook": {"replicas": 1}},
    "single-replica-no-lease": {"controller": {"replicas": 1, "leaderElection": {"enabled": False}}},
    "taints-off": {"zoneTaints": {"enabled": False}},
    "user-secret": {"webhook": {"tls": {"mode": "secret", "secret": {"name": "my-webhook-tls", "caBundle": USER_CA}}}},
    "strict": {"webhook": {"failurePolicy": "Fail", "excludeNamespaces": ["monitoring"]}},
    "webhook-off": {"webhook": {"enabled": False}},
    "everything": {
        "defaultPolicy": {"enabled": True},
        "policies": [
            {
                "name": "balance",
                "spec": {
                    "mode": "DryRun",
                    "interval": "10m",
                    "strategies": {
                        "lowNodeUtilization": {
                            "thresholds": {"cpu": 20, "memory": 20, "pods": 20},
                            "targetThresholds": {"cpu": 50, "memory": 50, "pods": 50},
                        }
                    },
                },
            },
            {
                "name": "restarts",
                "spec": {"mode": "DryRun", "strategies": {"removePodsHavingTooManyRestarts": {"podRestartThreshold": 100}}},
            },
        ],
        "zones": [
            {
                "name": "nightly-batch",
                "spec": {
                    "windows": [{"time": "20:00-06:00"}],
                    "timeZone": "Europe/Berlin",
                    "evictPeriod": "1m",
                    "drainBefore": "10m",
                },
            },
            {"name": "weekend", "spec": {"windows": [{"time": "00:00-00:00", "days": ["Sat", "Sun"]}]}},
        ],
        "metrics": {
            "serviceMonitor": {"enabled": True, "labels": {"release": "prometheus"}},
            "prometheusRule": {
                "enabled": True,
                "labels": {"release": "prometheus"},
                "additionalRuleLabels": {"team": "platform"},
                "severities": {"TidalCloseAtRisk": "critical"},
                "disabled": ["TidalWebhookFailingOpen"],
            },
            "grafanaDashboard": {"enabled": True, "folder": "Platform", "labels": {"team": "platform"}},
        },
        "networkPolicy": {
            "enabled": True,
            "webhookFrom": [{"ipBlock": {"cidr": "10.0.0.0/24"}}],
            "metricsFrom": [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "monitoring"}}}],
            "probesFrom": [{"ipBlock": {"cidr": "10.1.0.0/16"}}],
        },
        "imagePullSecrets": [{"name": "registry"}],
        "commonLabels": {"team": "platform"},
        "controller": {
            "extraArgs": ["--cycle-timeout=90s"],
            "priorityClassName": "system-cluster-critical",
            "measuredUsage": {"enabled": True},
            "eviction": {"gracePeriodSeconds": 0},
        },
        "webhook": {
            "namespaceSelectorExpressions": [{"key": "tidal.dev/admission", "operator": "In", "values": ["enabled"]}],
            "objectSelector": {"matchExpressions": [{"key": "tidal.dev/skip", "operator": "DoesNotExist"}]},
        },
    },
}

# Kinds whose schemas are not in Kubernetes itself (kubernetes-validate has none): checked against these
# structural schemas, the fields the operators require and the ones the chart sets, unknown fields refused.
FOREIGN_API_GROUPS = ("cert-manager.io/", "monitoring.coreos.com/")
_GO_DURATION = {"type": "string", "pattern": r"^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$"}
_NAME = {"type": "string", "pattern": r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$", "maxLength": 63}
_METADATA = {
    "type": "object",
    "required": ["name", "namespace"],
    "properties": {"name": _NAME, "namespace": _NAME, "labels": {"type": "object"}, "annotations": {"type": "object"}},
    "additionalProperties": False,
}


def _foreign(api_version: str, kind: str, spec: dict) -> dict:
    return {
        "type": "object",
        "required": ["apiVersion", "kind", "metadata", "spec"],
        "properties": {
            "apiVersion": {"const": api_version},
            "kind": {"const": kind},
            "metadata": _METADATA,
            "spec": spec,
        },
        "additionalProperties": False,
    }


_ISSUER_REF = {
    "type": "object",
    "required": ["name"],
    "properties": {"name": {"type": "string", "minLength": 1}, "kind": {"type": "string"}, "group": {"type": "string"}},
    "additionalProperties": False,
}
FOREIGN_SCHEMAS = {
    ("cert-manager.io/v1", "Certificate"): _foreign(
        "cert-manager.io/v1",
        "Certificate",
        {
            "type": "object",
            "required": ["secretName", "issuerRef"],
            # cert-manager refuses a Certificate without any identity.
            "anyOf": [{"required": ["commonName"]}, {"required": ["dnsNames"]}],
            "properties": {
                "secretName": _NAME,
                "issuerRef": _ISSUER_REF,
                "isCA": {"type": "boolean"},
                "commonName": {"type": "string", "minLength": 1, "maxLength": 64},
                "dnsNames": {"type": "array", "minItems": 1, "items": {"type": "string", "maxLength": 253}},
                "duration": _GO_DURATION,
                "renewBefore": _GO_DURATION,
                "privateKey": {
                    "type": "object",
                    "properties": {
                        "algorithm": {"enum": ["RSA", "ECDSA", "Ed25519"]},
                        "size": {"type": "integer"},
                        "rotationPolicy": {"enum": ["Never", "Always"]},
                    },
                    "additionalProperties": False,
                },
                "usages": {
                    "type": "array",
                    "items": {"enum": ["server auth", "client auth", "digital signature", "key encipherment"]},
                },
            },
            "additionalProperties": False,
        },
    ),
    ("cert-manager.io/v1", "Issuer"): _foreign(
        "cert-manager.io/v1",
        "Issuer",
        {
            "type": "object",
            "minProperties": 1,
            "maxProperties": 1,
            "properties": {
                "selfSigned": {"type": "object", "maxProperties": 0},
                "ca": {
                    "type": "object",
                    "required": ["secretName"],
                    "properties": {"secretName": _NAME},
                    "additionalProperties": False,
                },
            },
            "additionalProperties": False,
        },
    ),
    ("monitoring.coreos.com/v1", "ServiceMonitor"): _foreign(
        "monitoring.coreos.com/v1",
        "ServiceMonitor",
        {
            "type": "object",
            "required": ["selector", "endpoints"],
            "properties": {
                "selector": {"type": "object", "required": ["matchLabels"]},
                "jobLabel": {"type": "string", "minLength": 1},
                "namespaceSelector": {
                    "type": "object",
                    "properties": {"matchNames": {"type": "array", "items": _NAME}},
                    "additionalProperties": False,
                },
                "endpoints": {
                    "type": "array",
                    "minItems": 1,
                    "items": {
                        "type": "object",
                        "required": ["port"],
                        "properties": {
                            "port": {"type": "string"},
                            "path": {"type": "string"},
                            "interval": _GO_DURATION,
                            "scrapeTimeout": _GO_DURATION,
                        },
                        "additionalProperties": False,
                    },
                },
            },
            "additionalProperties": False,
        },
    ),
    ("monitoring.coreos.com/v1", "PrometheusRule"): _foreign(
        "monitoring.coreos.com/v1",
        "PrometheusRule",
        {
            "type": "object",
            "required": ["groups"],
            "properties": {
                "groups": {
                    "type": "array",
                    "minItems": 1,
                    "items": {
                        "type": "object",
                        "required": ["name", "rules"],
                        "properties": {
                            "name": {"type": "string", "minLength": 1},
                            "rules": {
                                "type": "array",
                                "minItems": 1,
                                "items": {
                                    "type": "object",
                                    "required": ["alert", "expr"],
                                    "properties": {
                                        "alert": {"type": "string", "pattern": "^[A-Za-z_][A-Za-z0-9_]*$"},
                                        "expr": {"type": "string", "minLength": 1},
                                        "for": _GO_DURATION,
                                        "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                                        "annotations": {"type": "object", "additionalProperties": {"type": "string"}},
                                    },
                                    "additionalProperties": False,
                                },
                            },
                        },
                        "additionalProperties": False,
                    },
                }
            },
            "additionalProperties": False,
        },
    ),
}


@pytest.fixture(scope="module")
def chart():
    with helm.Chart.load(str(CHART)) as loaded:
        yield loaded


def render(chart, values: dict, release: str = RELEASE) -> tuple[list[dict], str]:
    """The rendered objects (in template order) and NOTES.txt."""
    out = chart.render(values=copy.deepcopy(values), name=release, namespace=NAMESPACE, is_install=True)
    docs: list[dict] = []
    notes = ""
    for path in sorted(out):
        if path.endswith("NOTES.txt"):
            notes = out[path]
            continue
        for doc in yaml.safe_load_all(out[path]):
            if doc:
                docs.append(doc)
    # The webhook configurations are applied by the register hook from this ConfigMap, not by Helm:
    # they are checked here as the objects the cluster will hold.
    for config_map in find(docs, "ConfigMap"):
        if config_map["metadata"]["name"].endswith("-webhook-configurations"):
            docs.extend(json.loads(config_map["data"]["configurations.json"]))
    return docs, notes


def find(docs: list[dict], kind: str, name: str | None = None) -> list[dict]:
    return [d for d in docs if d["kind"] == kind and (name is None or d["metadata"]["name"] == name)]


def one(docs: list[dict], kind: str, name: str | None = None) -> dict:
    found = find(docs, kind, name)
    assert len(found) == 1, f"expected one {kind} {name or ''}, got {[d['metadata']['name'] for d in found]}"
    return found[0]


def crd_schemas(chart) -> dict[tuple[str, str], dict]:
    """openAPIV3Schema per (apiVersion, kind) of the CRDs the chart ships."""
    schemas = {}
    for entry in chart.crds:
        for crd in yaml.safe_load_all(entry["data"]):
            if not crd:
                continue
            group = crd["spec"]["group"]
            for version in crd["spec"]["versions"]:
                schemas[(f"{group}/{version['name']}", crd["spec"]["names"]["kind"])] = version["schema"][
                    "openAPIV3Schema"
                ]
    return schemas


# ---------------------------------------------------------------------------------------------- lint + schema


@pytest.mark.parametrize("variant", VARIANTS)
def test_lint_is_clean(variant):
    report = helm.lint(
        str(CHART), VARIANTS[variant], strict=True, namespace=NAMESPACE, kube_version=f"v{KUBE_VERSION}"
    )
    assert report["errors"] == []
    serious = [m for m in report["messages"] if m["severity"] >= 2]
    assert serious == [], serious


@pytest.mark.parametrize(
    "bad, mentions",
    [
        ({"controller": {"replicas": 0}}, "replicas"),
        ({"webhook": {"failurePolicy": "Sometimes"}}, "failurePolicy"),
        ({"webhook": {"timeoutSeconds": 45}}, "timeoutSeconds"),
        ({"webhook": {"lookupWait": "a while"}}, "lookupWait"),
        ({"webhook": {"tls": {"mode": "letsencrypt"}}}, "mode"),
        ({"webhook": {"tls": {"mode": "secret"}}}, "name"),
        ({"controler": {"replicas": 2}}, "controler"),
        ({"controller": {"eviction": {"qps": 0}}}, "qps"),
        ({"controller": {"logFormat": "xml"}}, "logFormat"),
        ({"image": {"digest": "latest"}}, "digest"),
        ({"defaultPolicy": {"enabled": True, "spec": {"mode": "Yolo", "strategies": {"tdm": {}}}}}, "mode"),
        ({"zones": [{"name": "z", "spec": {"windows": []}}]}, "windows"),
        ({"zoneTaints": {"enabled": "yes"}}, "enabled"),
        ({"webhook": {"shutdownDelay": "soon"}}, "shutdownDelay"),
        ({"webhook": {"tls": {"certManager": {"caDuration": "forever"}}}}, "caDuration"),
        # PEM pasted where base64 of the PEM belongs.
        (
            {"webhook": {"tls": {"mode": "secret", "secret": {"name": "s", "caBundle": "-----BEGIN CERTIFICATE-----"}}}},
            "caBundle",
        ),
        ({"controller": {"measuredUsage": {"enabled": "yes"}}}, "enabled"),
        ({"metrics": {"prometheusRule": {"enabled": "yes"}}}, "enabled"),
        ({"metrics": {"prometheusRule": {"disabled": "TidalNoLeader"}}}, "disabled"),
        ({"metrics": {"prometheusRule": {"severities": {"TidalNoLeader": 3}}}}, "TidalNoLeader"),
        ({"metrics": {"prometheusRule": {"additionalRuleLabels": {"team": 1}}}}, "team"),
        ({"metrics": {"prometheusRule": {"additionalRuleLabels": {"on-call": "x"}}}}, "on-call"),
        ({"metrics": {"prometheusRule": {"rules": []}}}, "rules"),
        ({"metrics": {"grafanaDashboard": {"enabled": 1}}}, "enabled"),
        ({"metrics": {"grafanaDashboard": {"labelValue": 1}}}, "labelValue"),
        ({"metrics": {"grafanaDashboard": {"folder": ["Platform"]}}}, "folder"),
        ({"metrics": {"grafanaDashboard": {"label": ""}}}, "label"),
    ],
)
def test_values_schema_rejects_bad_values(chart, bad, mentions):
    with pytest.raises(helm.HelmValuesError) as error:
        chart.validate_schema(bad)
    assert mentions in str(error.value)
    # Rendering refuses them too, before any template runs.
    with pytest.raises(helm.HelmError):
        chart.render(values=bad, name=RELEASE, namespace=NAMESPACE, is_install=True)


@pytest.mark.parametrize(
    "lookup_wait, timeout, ok",
    [("1s", 5, True), ("4.5s", 5, True), ("1500ms", 2, True), ("5s", 5, False), ("2s", 2, False), ("1m", 30, False)],
)
def test_lookup_wait_must_be_shorter_than_the_timeout(chart, lookup_wait, timeout, ok):
    values = {"webhook": {"lookupWait": lookup_wait, "timeoutSeconds": timeout}}
    if ok:
        render(chart, values)
        return
    with pytest.raises(helm.HelmError) as error:
        render(chart, values)
    assert "webhook.lookupWait" in str(error.value) and "timeoutSeconds" in str(error.value)


@pytest.mark.parametrize("variant", VARIANTS)
def test_values_schema_accepts_the_variants(chart, variant):
    chart.validate_schema(copy.deepcopy(VARIANTS[variant]))


# ------------------------------------------------------------------------------------ manifests vs. schemas


def validate_manifests(chart, docs: list[dict], variant: str):
    """Every object against its schema: Kubernetes', the chart's CRDs', or the structural ones above."""
    tidal_schemas = crd_schemas(chart)
    assert docs
    for doc in docs:
        key = (doc["apiVersion"], doc["kind"])
        where = f"{doc['kind']}/{doc['metadata'].get('name')} ({variant})"
        if doc["apiVersion"].startswith(FOREIGN_API_GROUPS):
            assert key in FOREIGN_SCHEMAS, f"{where}: no structural schema for {key}"
            try:
                jsonschema.validate(doc, FOREIGN_SCHEMAS[key])
            except jsonschema.ValidationError as error:
                pytest.fail(f"{where}: {error.message} at {list(error.path)}")
            continue
        if key in tidal_schemas:
            jsonschema.validate(doc, tidal_schemas[key])
            continue
        try:
            kubernetes_validate.validate(doc, KUBE_VERSION, strict=True)
        except kubernetes_validate.ValidationError as error:
            pytest.fail(f"{where}: {error.message} at {list(error.path)}")


@pytest.mark.parametrize("variant", VARIANTS)
def test_every_manifest_validates_against_kubernetes_schemas(chart, variant):
    docs, _ = render(chart, VARIANTS[variant])
    validate_manifests(chart, docs, variant)


# Helm's own limit on release names.
LONG_RELEASE = "payments-platform-descheduler-for-the-batch-cluster-x"
assert len(LONG_RELEASE) == 53


@pytest.mark.parametrize("variant", VARIANTS)
def test_a_long_release_name_gives_valid_names(chart, variant):
    docs, _ = render(chart, VARIANTS[variant], release=LONG_RELEASE)
    validate_manifests(chart, docs, variant)
    for doc in docs:
        name = doc["metadata"]["name"]
        assert len(name) <= 63, f"{doc['kind']} {name} ({len(name)})"
        for key, value in doc["metadata"].get("labels", {}).items():
            assert len(value) <= 63, (doc["kind"], name, key, value)
    # Truncation must not make two objects of a kind share a name (it cuts the release, not the suffix).
    seen = [(d["kind"], d["metadata"]["name"]) for d in docs]
    assert len(seen) == len(set(seen)), sorted(seen)
    for service in find(docs, "Service"):
        assert service["metadata"]["name"][0].isalpha(), service["metadata"]["name"]


def test_crds_validate_against_kubernetes_schemas(chart):
    crds = [crd for entry in chart.crds for crd in yaml.safe_load_all(entry["data"]) if crd]
    assert {c["spec"]["names"]["kind"] for c in crds} == {"RevocableZone", "DeschedulingPolicy"}
    for crd in crds:
        kubernetes_validate.validate(crd, KUBE_VERSION, strict=True)


def test_namespaced_objects_go_to_the_release_namespace(chart):
    docs, _ = render(chart, VARIANTS["everything"])
    cluster_scoped = {
        "ClusterRole",
        "ClusterRoleBinding",
        "MutatingWebhookConfiguration",
        "ValidatingWebhookConfiguration",
        "ValidatingAdmissionPolicy",
        "ValidatingAdmissionPolicyBinding",
        "DeschedulingPolicy",
        "RevocableZone",
    }
    for doc in docs:
        if doc["kind"] in cluster_scoped:
            assert "namespace" not in doc["metadata"], doc["metadata"]
        else:
            assert doc["metadata"]["namespace"] == NAMESPACE, doc["metadata"]


# ------------------------------------------------------------------------------------------------------ RBAC


def rules_of(docs, kind, name):
    return one(docs, kind, name)["rules"]


def grants(rules, group, resource, verb):
    return any(
        group in r.get("apiGroups", [])
        and resource in r.get("resources", [])
        and (verb in r.get("verbs", []) or "*" in r.get("verbs", []))
        for r in rules
    )


@pytest.mark.parametrize("variant", VARIANTS)
def test_no_role_can_delete_pods_or_use_wildcards(chart, variant):
    docs, _ = render(chart, VARIANTS[variant])
    for role in find(docs, "ClusterRole") + find(docs, "Role"):
        for rule in role["rules"]:
            assert "*" not in rule.get("verbs", []), role["metadata"]["name"]
            assert "*" not in rule.get("resources", []), role["metadata"]["name"]
            assert "*" not in rule.get("apiGroups", []), role["metadata"]["name"]
            if {"pods", "pods/eviction"} & set(rule.get("resources", [])):
                assert not {"delete", "deletecollection"} & set(rule["verbs"]), rule


def test_controller_rbac_is_what_the_contract_lists(chart):
    docs, _ = render(chart, {})
    rules = rules_of(docs, "ClusterRole", "tidal-controller")
    # Everything `tidal run` watches (src/watch/mod.rs, ObjectKind::ALL): a kind it cannot list keeps
    # its cache unsynced, and the controller never plans.
    for resource in ["pods", "nodes", "namespaces", "persistentvolumeclaims"]:
        for verb in ["get", "list", "watch"]:
            assert grants(rules, "", resource, verb), (resource, verb)
    # Measured usage is off unless a value turns it on (see test_measured_usage_is_opt_in).
    for resource in ["nodes", "pods"]:
        assert not grants(rules, "metrics.k8s.io", resource, "list"), resource
    assert grants(rules, "", "pods/eviction", "create")
    assert grants(rules, "policy", "poddisruptionbudgets", "watch")
    assert grants(rules, "scheduling.volcano.sh", "podgroups", "watch")
    for resource in ["revocablezones", "deschedulingpolicies"]:
        assert grants(rules, "tidal.dev", resource, "watch")
        assert grants(rules, "tidal.dev", f"{resource}/status", "patch")
        # The status writer only patches (src/status/mod.rs).
        for verb in ["get", "update"]:
            assert not grants(rules, "tidal.dev", f"{resource}/status", verb), verb
        assert not grants(rules, "tidal.dev", resource, "update"), "spec is the user's"
    # kube's event recorder writes events.k8s.io/v1 only.
    assert grants(rules, "events.k8s.io", "events", "create")
    assert not grants(rules, "", "events", "create")
    # Closed-zone taints are on by default: nodes may be patched, nothing else about them.
    assert grants(rules, "", "nodes", "patch")
    assert not grants(rules, "", "nodes", "update")
    # Eviction notices are on by default: pods and their status may be patched (narrowed by the pod
    # policy), never updated.
    assert grants(rules, "", "pods", "patch") and grants(rules, "", "pods/status", "patch")
    assert not grants(rules, "", "pods", "update") and not grants(rules, "", "pods/status", "update")
    # Leases only in the release namespace.
    assert not grants(rules, "coordination.k8s.io", "leases", "get")
    lease_role = one(docs, "Role", "tidal-controller-leader-election")
    assert lease_role["metadata"]["namespace"] == NAMESPACE
    lease_rules = lease_role["rules"]
    for verb in ["get", "create", "update"]:
        assert grants(lease_rules, "coordination.k8s.io", "leases", verb)
    binding = one(docs, "ClusterRoleBinding", "tidal-controller")
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": "tidal-controller", "namespace": NAMESPACE}]


def test_measured_usage_is_opt_in(chart):
    docs, _ = render(chart, VARIANTS["everything"])
    rules = rules_of(docs, "ClusterRole", "tidal-controller")
    for resource in ["nodes", "pods"]:
        assert grants(rules, "metrics.k8s.io", resource, "list"), resource
        assert not grants(rules, "metrics.k8s.io", resource, "watch"), resource


def test_nodes_are_patched_only_with_taints_on(chart):
    docs, _ = render(chart, VARIANTS["taints-off"])
    for role in find(docs, "ClusterRole") + find(docs, "Role"):
        assert not grants(role["rules"], "", "nodes", "patch"), role["metadata"]["name"]
    controller = one(docs, "Deployment", "tidal-controller")
    env = {e["name"]: e for e in controller["spec"]["template"]["spec"]["containers"][0]["env"]}
    assert env["TIDAL_ZONE_TAINTS"]["value"] == "false"


def test_webhook_only_reads(chart):
    docs, _ = render(chart, {})
    rules = rules_of(docs, "ClusterRole", "tidal-webhook")
    for rule in rules:
        assert set(rule["verbs"]) <= {"get", "list", "watch"}, rule
    for group, resource in [("", "pods"), ("", "nodes"), ("scheduling.volcano.sh", "podgroups"), ("tidal.dev", "revocablezones")]:
        assert grants(rules, group, resource, "watch"), resource
    binding = one(docs, "ClusterRoleBinding", "tidal-webhook")
    assert binding["subjects"][0]["name"] == "tidal-webhook"


def test_no_lease_role_without_leader_election(chart):
    docs, _ = render(chart, VARIANTS["single-replica-no-lease"])
    for role in find(docs, "Role"):
        assert not grants(role["rules"], "coordination.k8s.io", "leases", "get"), role["metadata"]["name"]


# -------------------------------------------------------------------------------------------- pods and probes


def pod_spec(docs, name):
    return one(docs, "Deployment", name)["spec"]["template"]["spec"]


@pytest.mark.parametrize("variant", VARIANTS)
def test_security_contexts_and_resources(chart, variant):
    docs, _ = render(chart, VARIANTS[variant])
    deployments = find(docs, "Deployment")
    assert len(deployments) == (1 if variant == "webhook-off" else 2)
    for deployment in deployments:
        spec = deployment["spec"]["template"]["spec"]
        pod = spec["securityContext"]
        assert pod["runAsNonRoot"] is True
        assert pod["runAsUser"] != 0
        assert pod["seccompProfile"] == {"type": "RuntimeDefault"}
        assert not spec.get("hostNetwork") and not spec.get("hostPID")
        for container in spec["containers"]:
            sc = container["securityContext"]
            assert sc["runAsNonRoot"] is True
            assert sc["readOnlyRootFilesystem"] is True
            assert sc["allowPrivilegeEscalation"] is False
            assert sc["capabilities"] == {"drop": ["ALL"]}
            assert sc["seccompProfile"] == {"type": "RuntimeDefault"}
            assert not sc.get("privileged")
            for section in ["requests", "limits"]:
                assert {"cpu", "memory"} <= set(container["resources"][section]), (container["name"], section)


def test_controller_deployment(chart):
    docs, _ = render(chart, {})
    deployment = one(docs, "Deployment", "tidal-controller")
    assert deployment["spec"]["replicas"] == 2
    spec = deployment["spec"]["template"]["spec"]
    assert spec["serviceAccountName"] == "tidal-controller"
    container = spec["containers"][0]
    assert container["args"][0] == "run"
    assert "--leader-elect=true" in container["args"]
    assert "--leader-elect-resource-name=tidal-controller" in container["args"]
    assert "--metrics-bind-address=0.0.0.0:8080" in container["args"]
    assert "--health-probe-bind-address=0.0.0.0:8081" in container["args"]
    env = {e["name"]: e for e in container["env"]}
    assert env["POD_NAMESPACE"]["valueFrom"]["fieldRef"]["fieldPath"] == "metadata.namespace"
    assert env["POD_NAME"]["valueFrom"]["fieldRef"]["fieldPath"] == "metadata.name"
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    assert ports == {"metrics": 8080, "health": 8081}
    assert container["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "health"}
    assert container["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "health"}
    pdb = one(docs, "PodDisruptionBudget", "tidal-controller")
    assert pdb["spec"]["minAvailable"] == 1
    assert pdb["spec"]["selector"]["matchLabels"] == deployment["spec"]["selector"]["matchLabels"]
    # tidal's own pods stay off revocable nodes and spread over nodes.
    terms = spec["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    assert terms == [{"matchExpressions": [{"key": "volcano.sh/revocable-zone", "operator": "DoesNotExist"}]}]
    assert spec["affinity"]["podAntiAffinity"]


def test_eviction_grace_period_is_the_pods_own_unless_set(chart):
    docs, _ = render(chart, {})
    args = pod_spec(docs, "tidal-controller")["containers"][0]["args"]
    assert not any(a.startswith("--eviction-grace-period-seconds") for a in args), args
    # 0 is a value (kill at once), not "unset".
    docs, _ = render(chart, VARIANTS["everything"])
    args = pod_spec(docs, "tidal-controller")["containers"][0]["args"]
    assert "--eviction-grace-period-seconds=0" in args, args


def test_prometheus_is_asked_only_with_a_url_and_its_token_is_a_mounted_secret(chart):
    docs, _ = render(chart, {})
    spec = pod_spec(docs, "tidal-controller")
    assert not any(a.startswith("--prometheus") for a in spec["containers"][0]["args"])
    assert [v["name"] for v in spec["volumes"]] == ["tmp"]
    values = {"controller": {"prometheus": {
        "url": "https://prometheus.monitoring:9090",
        "tokenSecret": {"name": "prom-token", "key": "token.txt"}}}}
    docs, _ = render(chart, values)
    spec = pod_spec(docs, "tidal-controller")
    args = spec["containers"][0]["args"]
    assert "--prometheus-url=https://prometheus.monitoring:9090" in args, args
    assert "--prometheus-token-file=/var/run/tidal/prometheus/token" in args, args
    volume = next(v for v in spec["volumes"] if v["name"] == "prometheus-token")
    assert volume["secret"] == {"secretName": "prom-token", "items": [{"key": "token.txt", "path": "token"}]}
    mount = next(m for m in spec["containers"][0]["volumeMounts"] if m["name"] == "prometheus-token")
    assert mount == {"name": "prometheus-token", "mountPath": "/var/run/tidal/prometheus", "readOnly": True}
    # Without a token: the URL alone.
    docs, _ = render(chart, {"controller": {"prometheus": {"url": "http://prometheus:9090"}}})
    args = pod_spec(docs, "tidal-controller")["containers"][0]["args"]
    assert "--prometheus-url=http://prometheus:9090" in args
    assert not any(a.startswith("--prometheus-token-file") for a in args), args


def test_grace_period_follows_the_shutdown_delay(chart):
    docs, _ = render(chart, {"webhook": {"shutdownDelay": "1m30s"}})
    spec = pod_spec(docs, "tidal-webhook")
    assert "--shutdown-delay=1m30s" in spec["containers"][0]["args"]
    assert spec["terminationGracePeriodSeconds"] > 90 + 10


def test_single_replica_has_no_pdb_that_would_block_drains(chart):
    docs, _ = render(chart, VARIANTS["single-replica"])
    assert find(docs, "PodDisruptionBudget") == []
    assert one(docs, "Deployment", "tidal-controller")["spec"]["replicas"] == 1
    docs, _ = render(chart, VARIANTS["single-replica-no-lease"])
    args = pod_spec(docs, "tidal-controller")["containers"][0]["args"]
    assert "--leader-elect=false" in args


def test_replicas_without_leader_election_are_refused(chart):
    with pytest.raises(helm.HelmError) as error:
        chart.render(
            values={"controller": {"leaderElection": {"enabled": False}}},
            name=RELEASE,
            namespace=NAMESPACE,
            is_install=True,
        )
    assert "leaderElection" in str(error.value)


def test_webhook_deployment_and_service(chart):
    docs, _ = render(chart, {})
    deployment = one(docs, "Deployment", "tidal-webhook")
    spec = deployment["spec"]["template"]["spec"]
    container = spec["containers"][0]
    assert container["args"][0] == "webhook"
    assert "--tls-cert=/etc/tidal/tls/tls.crt" in container["args"]
    assert "--tls-key=/etc/tidal/tls/tls.key" in container["args"]
    # On SIGTERM the webhook keeps answering for the delay, then gets 10s for in-flight requests: the
    # kubelet must not kill it before.
    assert "--shutdown-delay=5s" in container["args"]
    assert spec["terminationGracePeriodSeconds"] > 5 + 10
    mount = next(m for m in container["volumeMounts"] if m["name"] == "tls")
    assert mount["mountPath"] == "/etc/tidal/tls" and mount["readOnly"] is True
    assert "subPath" not in mount, "a subPath mount never sees a renewed certificate"
    volume = next(v for v in spec["volumes"] if v["name"] == "tls")
    assert volume["secret"]["secretName"] == "tidal-webhook-tls"
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    assert ports == {"https": 8443, "metrics": 8080}
    # Probes on the plain-HTTP metrics port: a flood of the admission port cannot fail them.
    for probe, path in [("livenessProbe", "/healthz"), ("readinessProbe", "/readyz")]:
        assert container[probe]["httpGet"] == {"path": path, "port": "metrics"}
    service = one(docs, "Service", "tidal-webhook")
    assert service["spec"]["ports"] == [{"name": "https", "port": 443, "targetPort": "https", "protocol": "TCP"}]
    assert service["spec"]["selector"] == deployment["spec"]["selector"]["matchLabels"]
    assert one(docs, "PodDisruptionBudget", "tidal-webhook")["spec"]["minAvailable"] == 1


# ------------------------------------------------------------------------------------- webhook configurations


def webhooks(docs):
    mutating = one(docs, "MutatingWebhookConfiguration")["webhooks"]
    validating = one(docs, "ValidatingWebhookConfiguration")["webhooks"]
    return {w["name"]: w for w in mutating}, {w["name"]: w for w in validating}


def test_webhook_configurations_are_safe_and_exact(chart):
    docs, _ = render(chart, {})
    mutating, validating = webhooks(docs)
    assert set(mutating) == {"pods.mutate.tidal.dev"}
    assert set(validating) == {"bindings.validate.tidal.dev", "pods.validate.tidal.dev"}
    expected = {
        "pods.mutate.tidal.dev": ("/mutate-pods", ["pods"]),
        # "bindings": the legacy POST /api/v1/namespaces/{ns}/bindings, which skips pods/binding.
        "bindings.validate.tidal.dev": ("/validate-bindings", ["pods/binding", "bindings"]),
        "pods.validate.tidal.dev": ("/validate-pods", ["pods"]),
    }
    for name, hook in {**mutating, **validating}.items():
        path, resources = expected[name]
        assert hook["clientConfig"]["service"] == {
            "name": "tidal-webhook",
            "namespace": NAMESPACE,
            "path": path,
            "port": 443,
        }
        assert hook["rules"] == [
            {"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": resources, "scope": "Namespaced"}
        ]
        assert hook["failurePolicy"] == "Ignore"
        # Equivalent: a request through another version of pods still reaches the webhook.
        assert hook["matchPolicy"] == "Equivalent"
        assert hook["sideEffects"] == "None"
        assert hook["timeoutSeconds"] <= 10
        assert hook["admissionReviewVersions"] == ["v1"]
        selector = hook["namespaceSelector"]["matchExpressions"][0]
        assert selector["key"] == "kubernetes.io/metadata.name" and selector["operator"] == "NotIn"
        assert {"kube-system", NAMESPACE} <= set(selector["values"])
    # Only pods created already bound go to /validate-pods; bindings carry no pod labels, so no objectSelector.
    assert validating["pods.validate.tidal.dev"]["matchConditions"][0]["expression"].startswith("has(object.spec.nodeName)")
    assert "objectSelector" not in validating["bindings.validate.tidal.dev"]
    assert mutating["pods.mutate.tidal.dev"]["reinvocationPolicy"] == "IfNeeded"


def test_strict_sites_get_fail_and_extra_exclusions(chart):
    docs, _ = render(chart, VARIANTS["strict"])
    mutating, validating = webhooks(docs)
    for hook in {**mutating, **validating}.values():
        assert hook["failurePolicy"] == "Fail"
        assert "monitoring" in hook["namespaceSelector"]["matchExpressions"][0]["values"]


def test_selectors_from_values(chart):
    docs, _ = render(chart, VARIANTS["everything"])
    mutating, validating = webhooks(docs)
    for hook in [mutating["pods.mutate.tidal.dev"], validating["pods.validate.tidal.dev"]]:
        assert hook["objectSelector"] == {"matchExpressions": [{"key": "tidal.dev/skip", "operator": "DoesNotExist"}]}
    for hook in {**mutating, **validating}.values():
        assert hook["namespaceSelector"]["matchExpressions"][1] == {
            "key": "tidal.dev/admission",
            "operator": "In",
            "values": ["enabled"],
        }


def test_webhook_off_renders_no_webhook_objects(chart):
    docs, _ = render(chart, VARIANTS["webhook-off"])
    kinds = {d["kind"] for d in docs}
    assert not {"MutatingWebhookConfiguration", "ValidatingWebhookConfiguration", "Secret", "Job", "ConfigMap"} & kinds
    assert [d["metadata"]["name"] for d in find(docs, "Deployment")] == ["tidal-controller"]


# ------------------------------------------------------------------------ registration and rollout (no fail-open)


def register_hook(docs):
    return one(docs, "Job", "tidal-webhook-register")


def test_webhook_configurations_are_registered_by_a_hook_not_by_helm(chart):
    out = chart.render(values={}, name=RELEASE, namespace=NAMESPACE, is_install=True)
    rendered_kinds = {
        doc["kind"]
        for path, text in out.items()
        if not path.endswith("NOTES.txt")
        for doc in yaml.safe_load_all(text)
        if doc
    }
    # Helm itself never creates them: at install they would be active before the webhook can answer.
    assert not {"MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"} & rendered_kinds
    docs, _ = render(chart, {})
    job = register_hook(docs)
    annotations = job["metadata"]["annotations"]
    assert annotations["helm.sh/hook"] == "post-install,post-upgrade,post-rollback"
    assert set(annotations["helm.sh/hook-delete-policy"].split(",")) == {"before-hook-creation", "hook-succeeded"}
    spec = job["spec"]["template"]["spec"]
    container = spec["containers"][0]
    assert container["args"] == [
        "register-webhooks",
        "--configurations=/etc/tidal/register/configurations.json",
        "--owner-cluster-role=tidal-webhook-register",
        "--timeout=4m",
    ]
    volume = next(v for v in spec["volumes"] if v["name"] == "configurations")
    assert volume["configMap"]["name"] == "tidal-webhook-configurations"
    assert spec["serviceAccountName"] == "tidal-webhook-register"
    assert spec["restartPolicy"] == "Never"
    # The Job outlives its wait by a margin: the command gives up first and says why.
    assert job["spec"]["activeDeadlineSeconds"] == 4 * 60 + 60
    # Its pod is not a webhook pod: the Service must never send it a review.
    service = one(docs, "Service", "tidal-webhook")
    labels = job["spec"]["template"]["metadata"]["labels"]
    assert not all(labels.get(k) == v for k, v in service["spec"]["selector"].items()), labels
    assert container["securityContext"]["readOnlyRootFilesystem"] is True
    assert spec["securityContext"]["runAsNonRoot"] is True


def test_the_register_hook_may_touch_only_the_releases_configurations(chart):
    docs, _ = render(chart, {})
    rules = rules_of(docs, "ClusterRole", "tidal-webhook-register")
    for rule in rules:
        # Named objects only, and nothing is ever deleted or updated: the hook applies in place.
        assert rule.get("resourceNames"), rule
        assert set(rule["verbs"]) <= {"get", "create", "patch"}, rule
    admission = [r for r in rules if r["apiGroups"] == ["admissionregistration.k8s.io"]]
    assert admission == [{
        "apiGroups": ["admissionregistration.k8s.io"],
        "resources": ["mutatingwebhookconfigurations", "validatingwebhookconfigurations"],
        "resourceNames": ["tidal"],
        "verbs": ["get", "create", "patch"],
    }]
    # The owner it reads is its own ClusterRole: deleting it at uninstall deletes the configurations.
    assert {"apiGroups": ["rbac.authorization.k8s.io"], "resources": ["clusterroles"],
            "resourceNames": ["tidal-webhook-register"], "verbs": ["get"]} in rules
    assert rules_of(docs, "Role", "tidal-webhook-register") == [
        {"apiGroups": [""], "resources": ["services"], "resourceNames": ["tidal-webhook"], "verbs": ["get"]}
    ]
    for kind in ("ClusterRoleBinding", "RoleBinding"):
        binding = one(docs, kind, "tidal-webhook-register")
        assert binding["subjects"] == [{"kind": "ServiceAccount", "name": "tidal-webhook-register", "namespace": NAMESPACE}]
    # The configurations name the object the role allows.
    for kind in ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"):
        assert one(docs, kind)["metadata"]["name"] == "tidal"


def test_a_half_turned_off_is_registered_without_webhooks(chart):
    docs, _ = render(chart, {"webhook": {"mutating": {"enabled": False}}})
    assert one(docs, "MutatingWebhookConfiguration")["webhooks"] == []
    assert len(one(docs, "ValidatingWebhookConfiguration")["webhooks"]) == 2
    docs, _ = render(chart, {"webhook": {"validating": {"enabled": False}}})
    assert one(docs, "ValidatingWebhookConfiguration")["webhooks"] == []


def test_the_register_hook_runs_where_the_webhook_may(chart):
    docs, _ = render(chart, VARIANTS["everything"])
    webhook = pod_spec(docs, "tidal-webhook")
    hook = register_hook(docs)["spec"]["template"]["spec"]
    for key in ("nodeSelector", "tolerations", "priorityClassName", "imagePullSecrets"):
        assert hook.get(key) == webhook.get(key), key
    docs, _ = render(chart, {"webhook": {"register": {"timeout": "90s"}}})
    job = register_hook(docs)
    assert "--timeout=90s" in job["spec"]["template"]["spec"]["containers"][0]["args"]
    assert job["spec"]["activeDeadlineSeconds"] == 150


def test_a_webhook_rollout_never_leaves_the_service_without_a_ready_pod(chart):
    docs, _ = render(chart, {})
    strategy = one(docs, "Deployment", "tidal-webhook")["spec"]["strategy"]
    assert strategy == {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0}}
    assert one(docs, "PodDisruptionBudget", "tidal-webhook")["spec"]["minAvailable"] == 1


def test_the_binary_accepts_the_register_args(chart):
    binary_with_command("register-webhooks")
    docs, _ = render(chart, {})
    container = register_hook(docs)["spec"]["template"]["spec"]["containers"][0]
    result = run_tidal(container)
    assert result is not None
    # Past parsing, the configurations file (only in the pod) stops it.
    assert result.returncode == 1, result.stderr
    assert "/etc/tidal/register/configurations.json" in result.stderr, result.stderr


# -------------------------------------------------------------------------------------------------------- TLS


def pem_certs(b64: str) -> list[x509.Certificate]:
    return x509.load_pem_x509_certificates(base64.b64decode(b64))


def verify_signed_by(cert: x509.Certificate, ca: x509.Certificate):
    key = ca.public_key()
    if isinstance(key, rsa.RSAPublicKey):
        key.verify(cert.signature, cert.tbs_certificate_bytes, padding.PKCS1v15(), cert.signature_hash_algorithm)
    else:
        key.verify(cert.signature, cert.tbs_certificate_bytes, ec.ECDSA(cert.signature_hash_algorithm))


def test_self_signed_tls_chains_and_names_the_service(chart):
    docs, _ = render(chart, {})
    secret = one(docs, "Secret", "tidal-webhook-tls")
    assert secret["type"] == "kubernetes.io/tls"
    (ca,) = pem_certs(secret["data"]["ca.crt"])
    (leaf,) = pem_certs(secret["data"]["tls.crt"])
    verify_signed_by(leaf, ca)
    names = leaf.extensions.get_extension_for_class(x509.SubjectAlternativeName).value.get_values_for_type(x509.DNSName)
    assert f"tidal-webhook.{NAMESPACE}.svc" in names
    key = serialization.load_pem_private_key(base64.b64decode(secret["data"]["tls.key"]), password=None)
    assert key.public_key().public_numbers() == leaf.public_key().public_numbers()
    mutating, validating = webhooks(docs)
    for hook in {**mutating, **validating}.values():
        assert hook["clientConfig"]["caBundle"] == secret["data"]["ca.crt"]


def test_cert_manager_issues_the_secret_the_webhook_mounts(chart):
    docs, _ = render(chart, VARIANTS["cert-manager"])
    assert find(docs, "Secret") == []
    certificate = one(docs, "Certificate", "tidal-webhook")
    assert certificate["apiVersion"] == "cert-manager.io/v1"
    assert certificate["spec"]["secretName"] == "tidal-webhook-tls"
    assert f"tidal-webhook.{NAMESPACE}.svc" in certificate["spec"]["dnsNames"]
    # commonName is capped at 64 characters by cert-manager; the DNS names are what the API server checks.
    assert "commonName" not in certificate["spec"]
    volume = next(v for v in pod_spec(docs, "tidal-webhook")["volumes"] if v["name"] == "tls")
    assert volume["secret"]["secretName"] == "tidal-webhook-tls"


def test_cert_manager_serving_certificate_is_signed_by_a_lasting_ca(chart):
    """selfSigned Issuer -> CA Certificate -> CA Issuer -> serving Certificate, caBundle from the CA: renewing
    the serving certificate leaves the caBundle alone, so the pods' old certificate stays trusted until the
    webhook reloads the new one."""
    docs, _ = render(chart, VARIANTS["cert-manager"])
    issuers = {i["metadata"]["name"]: i for i in find(docs, "Issuer")}
    certificates = {c["metadata"]["name"]: c for c in find(docs, "Certificate")}
    assert set(issuers) == {"tidal-webhook-selfsigned", "tidal-webhook-ca"}
    assert set(certificates) == {"tidal-webhook-ca", "tidal-webhook"}
    assert issuers["tidal-webhook-selfsigned"]["spec"] == {"selfSigned": {}}

    ca = certificates["tidal-webhook-ca"]["spec"]
    assert ca["isCA"] is True
    assert ca["issuerRef"] == {"name": "tidal-webhook-selfsigned", "kind": "Issuer", "group": "cert-manager.io"}
    assert ca["privateKey"]["rotationPolicy"] == "Never", "a renewed CA must still verify what it signed"
    serving = certificates["tidal-webhook"]["spec"]
    assert _hours(ca["duration"]) > _hours(serving["duration"])
    assert issuers["tidal-webhook-ca"]["spec"] == {"ca": {"secretName": ca["secretName"]}}

    assert not serving.get("isCA")
    assert serving["issuerRef"] == {"name": "tidal-webhook-ca", "kind": "Issuer", "group": "cert-manager.io"}
    assert serving["secretName"] != ca["secretName"]
    for config in find(docs, "MutatingWebhookConfiguration") + find(docs, "ValidatingWebhookConfiguration"):
        assert config["metadata"]["annotations"]["cert-manager.io/inject-ca-from"] == f"{NAMESPACE}/tidal-webhook-ca"
        for hook in config["webhooks"]:
            assert "caBundle" not in hook["clientConfig"], "cert-manager's cainjector fills it"

    # The user's issuer: only the serving certificate, the CA injected from its Secret's ca.crt.
    docs, _ = render(chart, VARIANTS["cert-manager-issuer"])
    assert find(docs, "Issuer") == []
    assert one(docs, "Certificate")["spec"]["issuerRef"] == {
        "name": "corp-ca",
        "kind": "ClusterIssuer",
        "group": "cert-manager.io",
    }
    for config in find(docs, "MutatingWebhookConfiguration") + find(docs, "ValidatingWebhookConfiguration"):
        assert config["metadata"]["annotations"]["cert-manager.io/inject-ca-from"] == f"{NAMESPACE}/tidal-webhook"


def _hours(duration: str) -> float:
    assert duration.endswith("h"), duration
    return float(duration[:-1])


def test_user_provided_secret(chart):
    docs, _ = render(chart, VARIANTS["user-secret"])
    assert find(docs, "Secret") == [] and find(docs, "Certificate") == []
    volume = next(v for v in pod_spec(docs, "tidal-webhook")["volumes"] if v["name"] == "tls")
    assert volume["secret"]["secretName"] == "my-webhook-tls"
    mutating, validating = webhooks(docs)
    for hook in {**mutating, **validating}.values():
        assert hook["clientConfig"]["caBundle"] == USER_CA
    # Without the CA the API server could not trust the webhook: refuse to render.
    with pytest.raises(helm.HelmError) as error:
        chart.render(
            values={"webhook": {"tls": {"mode": "secret", "secret": {"name": "my-webhook-tls"}}}},
            name=RELEASE,
            namespace=NAMESPACE,
            is_install=True,
        )
    assert "caBundle" in str(error.value)


# ------------------------------------------------------------------------------ metrics, optional objects, notes


def test_metrics_services_and_service_monitor(chart):
    docs, _ = render(chart, {})
    assert find(docs, "ServiceMonitor") == []
    for component in ["controller", "webhook"]:
        service = one(docs, "Service", f"tidal-{component}-metrics")
        assert service["spec"]["ports"][0]["name"] == "metrics"
        assert service["spec"]["ports"][0]["port"] == 8080
        assert service["metadata"]["labels"]["tidal.dev/metrics"] == "true"
        assert service["spec"]["selector"] == one(docs, "Deployment", f"tidal-{component}")["spec"]["selector"]["matchLabels"]
    docs, _ = render(chart, VARIANTS["everything"])
    monitor = one(docs, "ServiceMonitor")
    assert monitor["spec"]["selector"]["matchLabels"]["tidal.dev/metrics"] == "true"
    assert monitor["spec"]["endpoints"][0]["port"] == "metrics"
    assert monitor["metadata"]["labels"]["release"] == "prometheus"


def test_policy_and_zones_are_opt_in(chart):
    docs, _ = render(chart, {})
    assert find(docs, "DeschedulingPolicy") == [] and find(docs, "RevocableZone") == []
    docs, _ = render(chart, VARIANTS["everything"])
    policy = one(docs, "DeschedulingPolicy", "default")
    assert policy["spec"]["mode"] == "DryRun", "a chart-made policy never evicts by default"
    assert [z["metadata"]["name"] for z in find(docs, "RevocableZone")] == ["nightly-batch", "weekend"]


def test_notes_tell_how_to_see_the_report(chart):
    _, notes = render(chart, {})
    assert "kubectl get deschedulingpolicies" in notes
    assert "kubectl get revocablezones" in notes
    assert "tidal report" in notes
    assert "No DeschedulingPolicy was installed" in notes
    # The examples it points at are in the notes themselves.
    assert "kind: RevocableZone" in notes
    assert "tidal explain pod" in notes
    assert "tidal convert -f" in notes


# -------------------------------------------------------------------------- policies and zones in values


def render_error(chart, values: dict) -> str:
    """What `helm template`/`helm install` print when they refuse `values`."""
    with pytest.raises(helm.HelmError) as error:
        chart.render(values=copy.deepcopy(values), name=RELEASE, namespace=NAMESPACE, is_install=True)
    return str(error.value)


def _policy(name: str, **spec) -> dict:
    return {"name": name, "spec": {"mode": "DryRun", "strategies": {"tdm": {}}, **spec}}


def _zone(name: str) -> dict:
    return {"name": name, "spec": {"windows": [{"time": "20:00-06:00"}]}}


@pytest.mark.parametrize(
    "bad, path, says",
    [
        (
            {"defaultPolicy": {"spec": {"strategies": {"lowNodeUtilisation": {}}}}},
            "/defaultPolicy/spec/strategies",
            "'lowNodeUtilisation' not allowed",
        ),
        ({"defaultPolicy": {"spec": {"interval": 300}}}, "/defaultPolicy/spec/interval", "want string"),
        ({"defaultPolicy": {"spec": {"namespaces": {"exclude": "kube-system"}}}}, "/defaultPolicy/spec/namespaces/exclude", "want array"),
        ({"zones": [{"name": "z", "spec": {"windows": [{"time": "20:00-06:00"}], "timezone": "UTC"}}]}, "/zones/0/spec", "'timezone' not allowed"),
        ({"zones": [{"name": "z", "spec": {"windows": [{"time": "8-20"}]}}]}, "/zones/0/spec/windows/0/time", "does not match pattern"),
        ({"zones": [{"name": "z", "spec": {"windows": [{"time": "20:00-06:00"}], "evictPeriod": 60}}]}, "/zones/0/spec/evictPeriod", "want string"),
        (
            {"policies": [_policy("p", strategies={"lowNodeUtilization": {"thresholds": {"cpu": "lots"}, "targetThresholds": {}}})]},
            "/policies/0/spec/strategies/lowNodeUtilization/thresholds/cpu",
            "want number",
        ),
        ({"policies": [{"name": "p", "spec": {"strategies": {"tdm": {}}}}]}, "/policies/0/spec", "missing property 'mode'"),
        ({"policies": [_policy("p"), _policy("q", mode="Yolo")]}, "/policies/1/spec/mode", "must be one of 'Evict', 'DryRun'"),
        ({"policies": [{"name": "p"}]}, "/policies/0", "missing property 'spec'"),
        ({"policies": [_policy("Not_A_Name")]}, "/policies/0/name", "does not match pattern"),
    ],
)
def test_specs_in_values_are_checked_against_the_crd_schemas(chart, bad, path, says):
    with pytest.raises(helm.HelmValuesError) as error:
        chart.validate_schema(copy.deepcopy(bad))
    message = str(error.value)
    assert any(f"at '{path}':" in line and says in line for line in message.splitlines()), message
    # helm install and helm template refuse them before any template runs, so nothing is applied.
    with pytest.raises(helm.HelmValuesError):
        chart.render(values=copy.deepcopy(bad), name=RELEASE, namespace=NAMESPACE, is_install=True)


def _commented_examples(values_yaml: str) -> dict[str, object]:
    """The examples values.yaml gives in comments (a comment ending in "Example:" and the commented YAML
    under it), by their top-level key."""
    examples: dict[str, object] = {}
    lines = values_yaml.splitlines()
    for at, line in enumerate(lines):
        if not (line.startswith("#") and line.rstrip().endswith("Example:")):
            continue
        block = []
        for following in lines[at + 1 :]:
            if not following.startswith("# "):
                break
            block.append(following[2:])
        examples.update(yaml.safe_load("\n".join(block)))
    return examples


def test_the_examples_in_values_yaml_render_and_validate(chart):
    examples = _commented_examples((CHART / "values.yaml").read_text())
    assert set(examples) == {"policies", "zones"}, examples
    values = {"defaultPolicy": {"enabled": True}, **examples}
    chart.validate_schema(copy.deepcopy(values))
    docs, _ = render(chart, values)
    validate_manifests(chart, docs, "values.yaml examples")
    assert [p["metadata"]["name"] for p in find(docs, "DeschedulingPolicy")] == ["default"] + [
        p["name"] for p in examples["policies"]
    ]
    assert [z["metadata"]["name"] for z in find(docs, "RevocableZone")] == [z["name"] for z in examples["zones"]]


def test_the_shipped_examples_are_accepted_as_values(chart):
    # Every example the repository ships, given as chart values: the generated definitions must admit
    # everything the CRDs admit, or a policy that `kubectl apply` takes would fail `helm install`.
    objects = [
        doc
        for path in sorted((ROOT / "policies").glob("*.yaml")) + [ROOT / "examples" / "demo-cluster.yaml"]
        for doc in yaml.safe_load_all(path.read_text())
        if doc and doc.get("apiVersion") == "tidal.dev/v1alpha1"
    ]
    policies = [{"name": o["metadata"]["name"], "spec": o["spec"]} for o in objects if o["kind"] == "DeschedulingPolicy"]
    zones = [{"name": o["metadata"]["name"], "spec": o["spec"]} for o in objects if o["kind"] == "RevocableZone"]
    assert len(policies) >= 14 and zones
    values = {"policies": policies, "zones": zones}
    chart.validate_schema(copy.deepcopy(values))
    docs, _ = render(chart, values)
    validate_manifests(chart, docs, "shipped examples")
    assert len(find(docs, "DeschedulingPolicy")) == len(policies)


def test_several_policies_render_one_deschedulingpolicy_each(chart):
    values = VARIANTS["everything"]
    docs, notes = render(chart, values)
    policies = find(docs, "DeschedulingPolicy")
    assert [p["metadata"]["name"] for p in policies] == ["default", "balance", "restarts"]
    by_name = {p["metadata"]["name"]: p for p in policies}
    for given in values["policies"]:
        assert by_name[given["name"]]["spec"] == given["spec"], "taken as written, nothing merged in"
        assert by_name[given["name"]]["metadata"]["labels"]["team"] == "platform"
    # The notes say what was installed rather than asking for a first policy.
    assert "No DeschedulingPolicy was installed" not in notes
    for line in ["default: DryRun, every 5m", "balance: DryRun, every 10m", "restarts: DryRun, every 5m"]:
        assert line in notes, notes


def test_policies_need_no_default_policy(chart):
    docs, notes = render(chart, {"policies": [_policy("default"), _policy("night", interval="1h")]})
    assert [p["metadata"]["name"] for p in find(docs, "DeschedulingPolicy")] == ["default", "night"]
    assert "night: DryRun, every 1h" in notes and "No DeschedulingPolicy was installed" not in notes


def test_default_policy_spec_is_merged_into_its_default(chart):
    # Helm merges maps: the default `tdm` strategy stays beside the one given, unless set to null (as
    # values.yaml says); `policies` items are lists, so they are taken as written.
    given = {"enabled": True, "spec": {"strategies": {"removeFailedPods": {}}}}
    docs, _ = render(chart, {"defaultPolicy": given})
    assert set(one(docs, "DeschedulingPolicy")["spec"]["strategies"]) == {"tdm", "removeFailedPods"}
    given["spec"]["strategies"]["tdm"] = None
    docs, _ = render(chart, {"defaultPolicy": given})
    assert set(one(docs, "DeschedulingPolicy")["spec"]["strategies"]) == {"removeFailedPods"}


@pytest.mark.parametrize(
    "values, says",
    [
        (
            {"policies": [_policy("a"), _policy("b"), _policy("a")]},
            'policies[2].name: "a" is already the name of policies[0]',
        ),
        (
            {"defaultPolicy": {"enabled": True}, "policies": [_policy("default")]},
            'policies[0].name: "default" is already the name of defaultPolicy',
        ),
        (
            {"defaultPolicy": {"enabled": True, "name": "batch"}, "policies": [_policy("other"), _policy("batch")]},
            'policies[1].name: "batch" is already the name of defaultPolicy',
        ),
        ({"zones": [_zone("night"), _zone("day"), _zone("night")]}, 'zones[2].name: "night" is already the name of zones[0]'),
    ],
)
def test_a_name_given_twice_is_refused(chart, values, says):
    assert says in render_error(chart, values)


def test_a_disabled_default_policy_leaves_its_name_free(chart):
    docs, _ = render(chart, {"policies": [_policy("default")]})
    assert [p["metadata"]["name"] for p in find(docs, "DeschedulingPolicy")] == ["default"]


# ---------------------------------------------------------------------- values from the descheduler's chart

DESCHEDULER_VALUES = ROOT / "tests" / "fixtures" / "descheduler" / "v0.36.0" / "chart" / "values.yaml"
DESCHEDULER_HEADLINE = "values of the Kubernetes descheduler's chart, which tidal's chart does not read"
# Keys the descheduler's values.yaml documents only in comments.
DESCHEDULER_COMMENTED_KEYS = [
    "startingDeadlineSeconds",
    "successfulJobsHistoryLimit",
    "failedJobsHistoryLimit",
    "ttlSecondsAfterFinished",
    "activeDeadlineSeconds",
    "timeZone",
    "automountServiceAccountToken",
    "extraServiceAccountVolumeMounts",
    "extraServiceAccountVolumes",
]


def refused_lines(message: str) -> dict[str, str]:
    """The refusal's lines, `  key: tidal's equivalent`, by key."""
    assert DESCHEDULER_HEADLINE in message, message
    lines = message.split(DESCHEDULER_HEADLINE, 1)[1].splitlines()[1:]
    return dict(line.strip().split(": ", 1) for line in lines if line.startswith("  "))


def refused_keys() -> set[str]:
    """The top-level keys the schema admits only so that the chart can refuse them."""
    schema = json.loads((CHART / "values.schema.json").read_text())
    return {
        key
        for key, value in schema["properties"].items()
        if value.get("description", "").startswith("A value of the Kubernetes descheduler's chart")
    }


@pytest.mark.parametrize(
    "values, key, equivalent",
    [
        (
            {"deschedulerPolicy": {"profiles": [{"name": "default", "plugins": {}}]}},
            "deschedulerPolicy",
            "`tidal convert -f <this values file>` prints the DeschedulingPolicies",
        ),
        ({"deschedulerPolicyAPIVersion": "descheduler/v1alpha2"}, "deschedulerPolicyAPIVersion", "`tidal convert` reads"),
        ({"cmdOptions": {"v": 3, "dry-run": None}}, "cmdOptions", "controller.extraArgs"),
        ({"cmdOptions": {"dry-run": True}}, "cmdOptions", "dry-run is a policy's spec.mode: DryRun"),
        ({"leaderElection": {"enabled": True, "leaseDuration": "15s"}}, "leaderElection", "controller.leaderElection"),
        ({"serviceMonitor": {"enabled": True}}, "serviceMonitor", "metrics.serviceMonitor"),
        ({"kind": "Deployment"}, "kind", "tidal always runs as a Deployment"),
        ({"schedule": "*/2 * * * *"}, "schedule", "every spec.interval"),
        ({"deschedulingInterval": "5m"}, "deschedulingInterval", "spec.interval of each policy"),
        ({"replicas": 3}, "replicas", "controller.replicas"),
        ({"nodeSelector": {"pool": "system"}}, "nodeSelector", "controller.nodeSelector"),
        ({"tolerations": [{"operator": "Exists"}]}, "tolerations", "controller.tolerations"),
        ({"resources": {"requests": {"cpu": "500m"}}}, "resources", "controller.resources"),
        ({"priorityClassName": "system-node-critical"}, "priorityClassName", "controller.priorityClassName"),
        ({"podDisruptionBudget": {"enabled": True}}, "podDisruptionBudget", "controller.podDisruptionBudget"),
        ({"rbac": {"create": False}}, "rbac", "always creates tidal's least-privilege RBAC"),
    ],
)
def test_descheduler_chart_values_are_refused_with_tidals_equivalent(chart, values, key, equivalent):
    # The schema admits them, so that what helm prints is the sentence naming the equivalent rather than
    # "additional properties not allowed".
    chart.validate_schema(copy.deepcopy(values))
    refused = refused_lines(render_error(chart, values))
    assert list(refused) == [key]
    assert equivalent in refused[key], refused[key]


def test_the_descheduler_charts_values_file_is_refused_whole(chart):
    text = DESCHEDULER_VALUES.read_text()
    upstream = yaml.safe_load(text)
    ours = yaml.safe_load((CHART / "values.yaml").read_text())
    for key in DESCHEDULER_COMMENTED_KEYS:
        assert f"\n# {key}:" in text, key
    # Every value of the descheduler's chart is either one of tidal's (same meaning) or refused.
    assert set(upstream) | set(DESCHEDULER_COMMENTED_KEYS) <= set(ours) | refused_keys()
    # One error names them all, so a copied file is fixed in one go; empty ones set nothing and pass.
    refused = refused_lines(render_error(chart, upstream))
    assert set(refused) == {key for key, value in upstream.items() if key in refused_keys() and value}
    assert {"deschedulerPolicy", "cmdOptions", "kind", "schedule", "replicas", "serviceMonitor"} <= set(refused)
    commented = {key: 1 for key in DESCHEDULER_COMMENTED_KEYS}
    assert set(refused_lines(render_error(chart, commented))) == set(DESCHEDULER_COMMENTED_KEYS)


def test_empty_descheduler_values_set_nothing_and_pass(chart):
    values = {"nodeSelector": {}, "tolerations": [], "leaderElection": {}, "suspend": False, "initContainers": None}
    docs, _ = render(chart, values)
    assert "nodeSelector" not in pod_spec(docs, "tidal-controller")


# Dotted value paths named in prose: `controller.leaderElection`, `zones[].spec.timeZone`, `--set a.b=c`.
_VALUE_PATH = re.compile(
    r"(?<![\w.$/-])(controller|webhook|metrics|zoneTaints|networkPolicy|image|defaultPolicy|policies|zones)"
    r"((?:\[\])?(?:\.[A-Za-z]\w*)+)"
)


def value_paths(text: str) -> set[str]:
    return {
        m.group(1) + m.group(2)
        for m in _VALUE_PATH.finditer(text)
        # API groups (metrics.k8s.io) and file names (controller.yaml) are not values.
        if not m.group(2).endswith((".io", ".yaml", ".md"))
    }


def value_path_exists(chart, path: str) -> bool:
    """Whether `path` is one of the chart's values, or a field of a spec the chart takes in values."""
    specs = crd_schemas(chart)
    spec_of = {
        "defaultPolicy.spec": specs[("tidal.dev/v1alpha1", "DeschedulingPolicy")]["properties"]["spec"],
        "policies[].spec": specs[("tidal.dev/v1alpha1", "DeschedulingPolicy")]["properties"]["spec"],
        "zones[].spec": specs[("tidal.dev/v1alpha1", "RevocableZone")]["properties"]["spec"],
    }
    for prefix, schema in spec_of.items():
        if path == prefix:
            return True
        if path.startswith(prefix + "."):
            for part in path[len(prefix) + 1 :].split("."):
                schema = schema.get("properties", {}).get(part)
                if schema is None:
                    return False
            return True
    node: object = yaml.safe_load((CHART / "values.yaml").read_text())
    for part in path.replace("[]", "").split("."):
        if not isinstance(node, dict) or part not in node:
            return path.replace("[]", "") in {"policies.name", "zones.name", "policies.spec", "zones.spec"}
        node = node[part]
    return True


def test_every_admitted_descheduler_value_is_refused_naming_values_that_exist(chart):
    message = render_error(chart, {key: 1 for key in refused_keys()})
    # The schema's list and the template's are one: a key admitted but not refused would be ignored.
    assert set(refused_lines(message)) == refused_keys()
    named = value_paths(message)
    assert {"controller.leaderElection", "metrics.serviceMonitor", "controller.extraArgs"} <= named, named
    assert [path for path in named if not value_path_exists(chart, path)] == []


@pytest.mark.parametrize("variant", ["default", "everything", "single-replica-no-lease", "webhook-off"])
def test_notes_name_only_values_that_exist(chart, variant):
    _, notes = render(chart, VARIANTS[variant])
    named = value_paths(notes)
    assert [path for path in named if not value_path_exists(chart, path)] == [], notes


def test_controller_priority_class_defaults_to_system_cluster_critical(chart):
    # As the descheduler's chart does; "" runs it at the default priority.
    docs, _ = render(chart, {})
    assert pod_spec(docs, "tidal-controller")["priorityClassName"] == "system-cluster-critical"
    docs, _ = render(chart, {"controller": {"priorityClassName": ""}})
    assert "priorityClassName" not in pod_spec(docs, "tidal-controller")


def test_common_labels_and_pull_secrets_reach_everything(chart):
    docs, _ = render(chart, VARIANTS["everything"])
    for doc in docs:
        assert doc["metadata"]["labels"]["team"] == "platform", doc["metadata"]["name"]
    for name in ["tidal-controller", "tidal-webhook"]:
        assert pod_spec(docs, name)["imagePullSecrets"] == [{"name": "registry"}]


# --------------------------------------------------------------------------- the binary accepts the chart's args


def tidal_binary() -> pathlib.Path | None:
    explicit = os.environ.get("TIDAL_BIN")
    if explicit:
        return pathlib.Path(explicit)
    for profile in ["debug", "release"]:
        candidate = ROOT / "target" / profile / "tidal"
        if candidate.exists():
            return candidate
    return None


def binary_with_command(command: str) -> pathlib.Path:
    """The built tidal binary; skips the test when there is none, or when it has no `command`."""
    binary = tidal_binary()
    if binary is None:
        pytest.skip("no tidal binary built (cargo build) and TIDAL_BIN unset")
    probe = subprocess.run([str(binary), command, "--help"], capture_output=True, text=True)
    if probe.returncode != 0:
        pytest.skip(f"this tidal binary has no `{command}` command")
    return binary


def container_env(container: dict) -> dict[str, str]:
    """The container's environment as the kubelet would give it: literal values as rendered, the downward
    API fields the chart uses filled in."""
    downward = {"metadata.namespace": NAMESPACE, "metadata.name": "tidal-0"}
    env = {}
    for entry in container.get("env", []):
        if "value" in entry:
            env[entry["name"]] = entry["value"]
        else:
            env[entry["name"]] = downward[entry["valueFrom"]["fieldRef"]["fieldPath"]]
    return env


def run_tidal(container: dict) -> subprocess.CompletedProcess | None:
    """Runs tidal with the container's arguments and environment plus a kubeconfig that cannot exist, so it
    stops right after parsing them. None if it kept running (it accepted them and is retrying)."""
    binary = tidal_binary()
    args = container["args"]
    env = {"PATH": os.environ.get("PATH", ""), "HOME": "/nonexistent", **container_env(container)}
    try:
        return subprocess.run(
            [str(binary), *args, "--kubeconfig=/nonexistent/kubeconfig"],
            capture_output=True,
            text=True,
            timeout=20,
            env=env,
        )
    except subprocess.TimeoutExpired:
        return None


@pytest.mark.skipif(tidal_binary() is None, reason="no tidal binary built (cargo build) and TIDAL_BIN unset")
def test_the_binary_accepts_the_webhook_args(chart):
    docs, _ = render(chart, VARIANTS["everything"])
    result = run_tidal(pod_spec(docs, "tidal-webhook")["containers"][0])
    if result is not None:
        # clap exits 2 on arguments it does not know; past parsing, the missing certificate stops it.
        assert result.returncode != 2, result.stderr
        assert "webhook certificate" in result.stderr, result.stderr


def test_the_binary_accepts_the_controller_args(chart):
    binary_with_command("run")
    for variant in ["everything", "taints-off"]:
        docs, _ = render(chart, VARIANTS[variant])
        container = pod_spec(docs, "tidal-controller")["containers"][0]
        assert "TIDAL_ZONE_TAINTS" in container_env(container)
        result = run_tidal(container)
        if result is not None:
            assert result.returncode != 2, (variant, result.stderr)


# ------------------------------------------------------------------------------ least privilege: node policy

CONTROLLER_USER = f"system:serviceaccount:{NAMESPACE}:tidal-controller"
ZONE_TAINT = {"key": "tidal.dev/zone-closed", "value": "z1", "effect": "NoSchedule"}
GPU_TAINT = {"key": "gpu", "value": "true", "effect": "NoSchedule"}


def _node(taints=None, labels=None, **spec) -> dict:
    node = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": "rev-1", "labels": labels or {"volcano.sh/revocable-zone": "z1"}},
        "spec": dict(spec),
        "status": {"allocatable": {"cpu": "8"}},
    }
    if taints is not None:
        node["spec"]["taints"] = taints
    return node


def _evaluate(expression: str, activation: dict):
    env = celpy.Environment()
    return env.program(env.compile(expression)).evaluate(activation)


def admit(policy: dict, operation: str, old: dict | None, new: dict | None, user: str = CONTROLLER_USER):
    """What the API server does with the policy for one request: None when it does not match, else the
    messages of the failed validations (an expression error fails too: failurePolicy is Fail)."""
    spec = policy["spec"]
    rules = spec["matchConstraints"]["resourceRules"]
    kind = {"Node": "nodes", "Pod": "pods"}[(new or old)["kind"]]
    if not any(operation in r["operations"] and kind in r["resources"] for r in rules):
        return None
    activation = {
        "request": celpy.json_to_cel({"operation": operation, "userInfo": {"username": user}}),
        "object": celpy.json_to_cel(new),
        "oldObject": celpy.json_to_cel(old),
    }
    if not all(_evaluate(c["expression"], activation) for c in spec["matchConditions"]):
        return None
    variables = {}
    for variable in spec["variables"]:
        # The API server evaluates variables lazily: one that errors only matters where it is used.
        try:
            variables[variable["name"]] = _evaluate(variable["expression"], activation)
        except Exception:  # noqa: BLE001 - celpy raises several kinds
            pass
    activation["variables"] = celpy.json_to_cel({}) if not variables else celpy.celtypes.MapType(
        {celpy.celtypes.StringType(k): v for k, v in variables.items()}
    )
    failed = []
    for validation in spec["validations"]:
        try:
            result = _evaluate(validation["expression"], activation)
        except Exception as error:  # noqa: BLE001
            failed.append(f"error in {validation['expression']!r}: {error}")
            continue
        if isinstance(result, celpy.CELEvalError):
            failed.append(f"error in {validation['expression']!r}: {result}")
        elif not isinstance(result, (bool, celpy.celtypes.BoolType)):
            failed.append(f"not a bool from {validation['expression']!r}: {result!r}")
        elif not result:
            failed.append(validation["message"])
    return failed


NODE_POLICY = "tidal-controller-node-taints-only"
POD_POLICY = "tidal-controller-pod-notices-only"


def _admission_policy(chart, name: str) -> dict:
    docs, _ = render(chart, {})
    policy = one(docs, "ValidatingAdmissionPolicy", name)
    binding = one(docs, "ValidatingAdmissionPolicyBinding", name)
    assert binding["spec"] == {"policyName": name, "validationActions": ["Deny"]}
    return policy


@pytest.fixture(scope="module")
def node_policy(chart):
    return _admission_policy(chart, NODE_POLICY)


def test_node_policy_is_rendered_with_the_taints_only(chart):
    assert find(render(chart, {})[0], "ValidatingAdmissionPolicy", NODE_POLICY)
    for values in [{"zoneTaints": {"enabled": False}}, {"zoneTaints": {"nodePolicy": {"enabled": False}}}]:
        docs, _ = render(chart, values)
        assert not find(docs, "ValidatingAdmissionPolicy", NODE_POLICY)
        assert not find(docs, "ValidatingAdmissionPolicyBinding", NODE_POLICY)


def test_node_policy_names_the_controllers_service_account_and_its_taint(node_policy):
    assert node_policy["spec"]["failurePolicy"] == "Fail", "only tidal's own requests match"
    assert CONTROLLER_USER in node_policy["spec"]["matchConditions"][0]["expression"]
    # The key and effect the reconciler writes (src/controller/taints.rs).
    source = (ROOT / "src" / "controller" / "taints.rs").read_text()
    assert re.search(r'pub const ZONE_CLOSED: &str = "tidal.dev/zone-closed";', source)
    assert re.search(r'pub const EFFECT: &str = "NoSchedule";', source)


@pytest.mark.parametrize(
    "old, new",
    [
        (_node(), _node([ZONE_TAINT])),
        (_node([GPU_TAINT]), _node([GPU_TAINT, ZONE_TAINT])),
        (_node([GPU_TAINT, ZONE_TAINT]), _node([GPU_TAINT])),
        (_node([ZONE_TAINT, GPU_TAINT]), _node([GPU_TAINT])),
        (_node([ZONE_TAINT]), _node([{**ZONE_TAINT, "value": "z2"}])),
        (_node([GPU_TAINT], unschedulable=True), _node([GPU_TAINT, ZONE_TAINT], unschedulable=True)),
    ],
)
def test_node_policy_lets_the_controller_change_its_taint(node_policy, old, new):
    assert admit(node_policy, "UPDATE", old, new) == []


@pytest.mark.parametrize(
    "operation, old, new, says",
    [
        ("UPDATE", _node([GPU_TAINT]), _node([ZONE_TAINT]), "other taints must stay"),
        ("UPDATE", _node(), _node([GPU_TAINT]), "other taints must stay"),
        ("UPDATE", _node([GPU_TAINT]), _node([{**GPU_TAINT, "effect": "NoExecute"}]), "other taints must stay"),
        ("UPDATE", _node(), _node([{**ZONE_TAINT, "effect": "NoExecute"}]), "effect NoSchedule"),
        ("UPDATE", _node(), _node(labels={"volcano.sh/revocable-zone": "z2"}), "taints only"),
        ("UPDATE", _node(), _node(unschedulable=True), "taints only"),
        ("UPDATE", _node(), _node(providerID="aws://i-1"), "taints only"),
        ("UPDATE", _node(), {**_node(), "metadata": {**_node()["metadata"], "annotations": {"a": "b"}}}, "taints only"),
        ("DELETE", _node(), None, "create or delete"),
        ("CREATE", None, _node(), "create or delete"),
    ],
)
def test_node_policy_refuses_everything_else(node_policy, operation, old, new, says):
    failed = admit(node_policy, operation, old, new)
    assert failed, "allowed"
    # Refused by the rule that says so, not by an expression that failed to evaluate.
    assert any(says in message for message in failed), failed
    assert not [m for m in failed if m.startswith(("error in", "not a bool"))], failed


def test_node_policy_leaves_other_users_alone(node_policy):
    old, new = _node(), _node(labels={"volcano.sh/revocable-zone": "z2"})
    assert admit(node_policy, "UPDATE", old, new, user="system:serviceaccount:kube-system:node-controller") is None
    assert admit(node_policy, "UPDATE", old, new, user="admin") is None


NOTICE_CONDITION = {
    "type": "tidal.dev/EvictionNotice",
    "status": "True",
    "reason": "ZoneClosing",
    "lastTransitionTime": "2026-11-29T04:20:00Z",
}
SCHEDULED = {"type": "PodScheduled", "status": "True", "lastTransitionTime": "2026-11-29T01:00:00Z"}


def _pod(annotations=None, conditions=None, image="app:1", labels=None, phase="Running") -> dict:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": "p-1",
            "namespace": "batch",
            "labels": labels or {"app": "p"},
            "annotations": annotations or {"volcano.sh/preemptable": "true"},
        },
        "spec": {"nodeName": "rev-1", "containers": [{"name": "main", "image": image}]},
        "status": {"phase": phase, "conditions": conditions or [SCHEDULED]},
    }


@pytest.fixture(scope="module")
def pod_policy(chart):
    return _admission_policy(chart, POD_POLICY)


def test_pod_policy_and_its_rbac_come_with_eviction_notices(chart):
    docs, _ = render(chart, {})
    assert find(docs, "ValidatingAdmissionPolicy", POD_POLICY)
    rules = one(docs, "ClusterRole", "tidal-controller")["rules"]
    assert {"apiGroups": [""], "resources": ["pods", "pods/status"], "verbs": ["patch"]} in rules
    # No delete on pods, whatever the values: evictions go through the Eviction API.
    assert not [r for r in rules if "pods" in r["resources"] and "delete" in r["verbs"]]
    docs, _ = render(chart, {"evictionNotice": {"enabled": False}})
    assert not find(docs, "ValidatingAdmissionPolicy", POD_POLICY)
    rules = one(docs, "ClusterRole", "tidal-controller")["rules"]
    assert not [r for r in rules if "pods" in r["resources"] and "patch" in r["verbs"]]
    docs, _ = render(chart, {"evictionNotice": {"podPolicy": {"enabled": False}}})
    assert not find(docs, "ValidatingAdmissionPolicyBinding", POD_POLICY)


def test_pod_policy_lets_the_controller_give_a_notice(pod_policy):
    told = {"volcano.sh/preemptable": "true", "tidal.dev/evict-after": "2026-11-29T04:30:00Z", "tidal.dev/evict-by": "2026-11-29T05:00:00Z"}
    # The condition through pods/status, then the annotations; and a notice given again.
    assert admit(pod_policy, "UPDATE", _pod(), _pod(conditions=[SCHEDULED, NOTICE_CONDITION])) == []
    assert admit(pod_policy, "UPDATE", _pod(), _pod(annotations=told)) == []
    again = {**NOTICE_CONDITION, "lastTransitionTime": "2026-11-30T04:20:00Z"}
    assert admit(pod_policy, "UPDATE", _pod(conditions=[SCHEDULED, NOTICE_CONDITION]), _pod(conditions=[SCHEDULED, again])) == []


@pytest.mark.parametrize(
    "operation, old, new, says",
    [
        ("UPDATE", _pod(), _pod(image="evil:1"), "spec, labels"),
        ("UPDATE", _pod(), _pod(labels={"app": "other"}), "spec, labels"),
        ("UPDATE", _pod(), _pod(annotations={"volcano.sh/preemptable": "false"}), "only the tidal.dev/evict-after"),
        ("UPDATE", _pod(), _pod(annotations={"volcano.sh/preemptable": "true", "x": "y"}), "only the tidal.dev/evict-after"),
        ("UPDATE", _pod(), _pod(conditions=[{**SCHEDULED, "status": "False"}]), "only the tidal.dev/EvictionNotice"),
        ("UPDATE", _pod(), _pod(phase="Failed"), "status beyond"),
        ("DELETE", _pod(), None, "create or delete"),
        ("CREATE", None, _pod(), "create or delete"),
    ],
)
def test_pod_policy_refuses_everything_else(pod_policy, operation, old, new, says):
    failed = admit(pod_policy, operation, old, new)
    assert failed, "allowed"
    assert any(says in message for message in failed), failed
    assert not [m for m in failed if m.startswith(("error in", "not a bool"))], failed


def test_pod_policy_names_what_the_controller_writes(pod_policy):
    assert pod_policy["spec"]["failurePolicy"] == "Fail", "only tidal's own requests match"
    assert CONTROLLER_USER in pod_policy["spec"]["matchConditions"][0]["expression"]
    labels = (ROOT / "src" / "api" / "labels.rs").read_text()
    for constant, value in [
        ("EVICTION_NOTICE", "tidal.dev/EvictionNotice"),
        ("EVICT_AFTER", "tidal.dev/evict-after"),
        ("EVICT_BY", "tidal.dev/evict-by"),
    ]:
        assert f'pub const {constant}: &str = "{value}";' in labels
    assert admit(pod_policy, "UPDATE", _pod(), _pod(image="evil:1"), user="admin") is None


# ----------------------------------------------------------------------------------------- network policies


def test_network_policies_are_off_by_default(chart):
    assert not find(render(chart, {})[0], "NetworkPolicy")


def _ingress_ports(policy: dict) -> dict:
    return {rule["ports"][0]["port"]: rule.get("from") for rule in policy["spec"]["ingress"]}


def test_network_policies_open_only_the_serving_ports(chart):
    docs, _ = render(chart, {"networkPolicy": {"enabled": True}})
    controller = one(docs, "NetworkPolicy", "tidal-controller")
    webhook = one(docs, "NetworkPolicy", "tidal-webhook")
    for policy, component in [(controller, "controller"), (webhook, "webhook")]:
        assert policy["spec"]["policyTypes"] == ["Ingress"], "egress (to the API server) is not restricted"
        deployment = one(docs, "Deployment", f"tidal-{component}")
        assert policy["spec"]["podSelector"]["matchLabels"] == deployment["spec"]["selector"]["matchLabels"]
        # Every port named in the policy is one the container declares.
        declared = {p["name"] for p in deployment["spec"]["template"]["spec"]["containers"][0]["ports"]}
        assert set(_ingress_ports(policy)) <= declared
    assert _ingress_ports(controller) == {"metrics": None, "health": None}
    assert _ingress_ports(webhook) == {"https": None, "metrics": None}


def test_network_policies_restrict_sources_when_given(chart):
    api = [{"ipBlock": {"cidr": "10.0.0.0/24"}}]
    prometheus = [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "monitoring"}}}]
    nodes = [{"ipBlock": {"cidr": "10.1.0.0/16"}}]
    values = {"networkPolicy": {"enabled": True, "webhookFrom": api, "metricsFrom": prometheus}}
    webhook = one(render(chart, values)[0], "NetworkPolicy", "tidal-webhook")
    # The webhook's probes share its metrics port: without probesFrom that port stays open to the kubelets.
    assert _ingress_ports(webhook) == {"https": api, "metrics": None}
    values["networkPolicy"]["probesFrom"] = nodes
    docs, _ = render(chart, values)
    assert _ingress_ports(one(docs, "NetworkPolicy", "tidal-webhook")) == {"https": api, "metrics": prometheus + nodes}
    assert _ingress_ports(one(docs, "NetworkPolicy", "tidal-controller")) == {"metrics": prometheus, "health": nodes}


# ------------------------------------------------------------------------------- docs name existing values


def install_page_values() -> set[str]:
    """The values docs/install.md's table describes: `a.b`, `.c` (a sibling of the previous one) and
    `*.d` (both components')."""
    text = (ROOT / "docs" / "install.md").read_text()
    section = text.split("\n## Values\n", 1)[1].split("\n## ", 1)[0]
    paths: set[str] = set()
    for line in section.splitlines():
        if not line.startswith("| `"):
            continue
        previous = None
        for span in re.findall(r"`([^`]+)`", line.split("|")[1]):
            if span.startswith("*."):
                paths |= {f"controller{span[1:]}", f"webhook{span[1:]}"}
                continue
            if span.startswith(".") and previous:
                span = previous.rsplit(".", 1)[0] + span
            paths.add(span)
            previous = span
    return paths


def test_the_install_page_describes_values_that_exist(chart):
    described = install_page_values()
    assert {"defaultPolicy.spec", "policies", "zones", "controller.priorityClassName"} <= described, described
    assert sorted(path for path in described if not value_path_exists(chart, path)) == []


@pytest.mark.parametrize("page", ["README.md", "docs/install.md", "docs/descheduler.md", "docs/admission.md", "docs/controller.md"])
def test_set_flags_in_the_docs_name_values_that_exist(chart, page):
    text = (ROOT / page).read_text()
    named = set(re.findall(r"--set ([\w.\[\]]+)=", text))
    assert sorted(path for path in named if not value_path_exists(chart, path)) == []
