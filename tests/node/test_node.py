"""tidal installed by its chart on a real node, with real pods (tests/node/README.md).

One scenario, in order: install (no review skipped from the moment the webhook configuration is
active), a TDM drain of a zone that closes within about two minutes (rounds, budgets, evictPeriod, a gang
taken whole, a pod that ends before the close left to finish, the closed-zone taint, the webhook, a pod
declaring a run time longer than the zone has left kept off it, a leader failover mid-drain, what
`tidal report` and `tidal timeline` said beforehand), the zone's next opening, `helm upgrade` and a
rolling restart of the webhook (no review skipped), `helm uninstall` (no webhook configuration left).
Run by scripts/test-node, which brings the node up; skipped when TIDAL_NODE_KUBECONFIG is not set."""

from __future__ import annotations

import datetime as dt
import json
import os
import pathlib
import subprocess
import threading
import time

import pytest

from kube import Kube

KUBECONFIG = os.environ.get("TIDAL_NODE_KUBECONFIG")
pytestmark = pytest.mark.skipif(not KUBECONFIG, reason="TIDAL_NODE_KUBECONFIG not set: no real node")

ROOT = pathlib.Path(__file__).resolve().parents[2]
CHART = pathlib.Path(os.environ.get("TIDAL_NODE_CHART", ROOT / "charts" / "tidal"))
RELEASE, NAMESPACE = "tidal", "tidal-system"
NODE = os.environ.get("TIDAL_NODE_NAME", "realnode")
TDM_NS, PROBE_NS = "tidal-node-tdm", "tidal-node-probe"
ZONE, POLICY = "nightly", "node-tdm"
EVICT_PERIOD = 20
# The drain starts this long before the close (a fixed drainBefore): the rounds count from that instant,
# and a pod that ends between the drain's start and the close is the drain's to leave alone.
DRAIN_BEFORE = 60
# The pod that ends by itself (activeDeadlineSeconds) this long after the drain starts: after round 1 and
# round 2 have seen it running, well before the close (its end + 2 x its grace of 1 s + evictPeriod
# comes some 10 s before it), so the drain leaves it to finish.
FINISHER, FINISH_AFTER = "finish", 25
BUSYBOX = "localhost/busybox:1"
ZONE_TAINT = "tidal.dev/zone-closed"
# tidal's own pods share the only node with the zone: they may run there and tolerate its taint.
TOLERATION = {"key": ZONE_TAINT, "operator": "Exists", "effect": "NoSchedule"}
VALUES = {
    "image": {"repository": "localhost/tidal", "tag": "node", "pullPolicy": "Never"},
    "avoidRevocableNodes": False,
    "controller": {"tolerations": [TOLERATION]},
    "webhook": {"tolerations": [TOLERATION]},
}
# Jobs on the zone: (name, pods, budget annotation, expected evictions per round)
# A percentage budget counts the pods the job still has: train loses 2 of 4, then 1 of 2, then 1 of 1.
# gang is a Volcano gang (minMember 3 of its 3 pods): its first eviction gives its work up, so the drain
# takes all three in round 1, its budget of 1 allowing that one disruption, rather than one a round.
PODGROUPS = [("train", 4, "50%", [2, 1, 1]), ("sweep", 3, "1", [1, 1, 1]), ("gang", 3, "1", [3, 0, 0])]
MIN_MEMBER = {"train": 1, "sweep": 1, "gang": 3}
# A Deployment: its evicted pod is recreated and stays Pending (taint, webhook), which uses its budget up.
DEPLOYMENT = ("etl", 3, "1", [1, 0, 0])


@pytest.fixture(scope="module")
def kube():
    k = Kube(KUBECONFIG)
    status, _ = k.request("GET", "/readyz")
    assert status == 200, "the node's API server is not ready"
    return k


def helm_config():
    import helm_python as helm

    return helm.Config(kubeconfig_path=KUBECONFIG, namespace=NAMESPACE)


def tidal(*args: str) -> str:
    binary = os.environ.get("TIDAL_BIN", str(ROOT / "target" / "release" / "tidal"))
    result = subprocess.run([binary, *args, "--kubeconfig", KUBECONFIG], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    return result.stdout


# ---------------------------------------------------------------------------------------------------------
# Admission under load: reviews the API server sends while something changes


def probe_pod(index: int) -> dict:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": f"probe-{index}", "namespace": PROBE_NS},
        "spec": {"containers": [{"name": "c", "image": BUSYBOX, "imagePullPolicy": "Never"}]},
    }


def mutated(pod: dict) -> bool:
    """Whether tidal's webhook saw this non-preemptable pod: it gets the affinity off revocable nodes."""
    return "volcano.sh/revocable-zone" in json.dumps(pod.get("spec", {}).get("affinity", {}))


class AdmissionLoad(threading.Thread):
    """Server-side dry-run pod creations, about ten a second, each noting whether tidal's mutating
    configuration existed just before and whether the webhook's patch came back."""

    def __init__(self, kube: Kube):
        super().__init__(daemon=True)
        self.kube, self.stop, self.samples = kube, threading.Event(), []

    def run(self):
        index = 0
        while not self.stop.is_set():
            index += 1
            configured = self.kube.request(
                "GET", f"/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations/{RELEASE}"
            )[0] == 200
            started = time.time()
            status, answer = self.kube.request("POST", f"/api/v1/namespaces/{PROBE_NS}/pods?dryRun=All", probe_pod(index))
            self.samples.append(
                {"at": started, "configured": configured, "status": status,
                 "mutated": status == 201 and mutated(answer), "took": time.time() - started}
            )
            time.sleep(0.1)

    def finish(self):
        self.stop.set()
        self.join(30)
        return self.samples


class FailOpen:
    """Reviews the API server could not get an answer for: its fail-open counter for tidal's webhooks
    (failurePolicy Ignore) and its log lines "failed calling webhook"."""

    def __init__(self, kube: Kube):
        self.kube = kube
        self.log = os.environ.get("TIDAL_NODE_APISERVER_LOG")
        self.metric0, self.lines0 = self.metric(), len(self.lines())

    def metric(self) -> float:
        return self.kube.metric_sum("apiserver_admission_webhook_fail_open_count", r'name="[a-z.]*tidal\.dev"')

    def lines(self) -> list[str]:
        if not self.log or not os.path.exists(self.log):
            return []
        with open(self.log, errors="replace") as f:
            return [line for line in f if "failed calling webhook" in line and "tidal.dev" in line]

    def since(self) -> tuple[float, list[str]]:
        return self.metric() - self.metric0, self.lines()[self.lines0:]


def settled(samples: list[dict], since: float) -> list[dict]:
    return [s for s in samples if s["at"] >= since]


# ---------------------------------------------------------------------------------------------------------
# The scenario's objects


PODGROUP_CRD = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "podgroups.scheduling.volcano.sh"},
    "spec": {
        "group": "scheduling.volcano.sh",
        "names": {"kind": "PodGroup", "plural": "podgroups", "singular": "podgroup", "shortNames": ["pg"]},
        "scope": "Namespaced",
        "versions": [{"name": "v1beta1", "served": True, "storage": True, "subresources": {"status": {}},
                      "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}}],
    },
}


def pod_template(labels: dict, annotations: dict) -> dict:
    return {
        "metadata": {"labels": labels, "annotations": annotations},
        "spec": {
            # busybox's sleep ignores SIGTERM: a short grace period makes an eviction quick to see.
            "terminationGracePeriodSeconds": 1,
            "containers": [{"name": "work", "image": BUSYBOX, "imagePullPolicy": "Never",
                            "command": ["sleep", "86400"]}],
        },
    }


def hhmm(t: dt.datetime) -> str:
    return t.strftime("%H:%M")


@pytest.fixture(scope="module")
def state():
    """What one test leaves for the next (the scenario is one story)."""
    return {}


# ---------------------------------------------------------------------------------------------------------
# 1. Install


def test_install_answers_every_review_once_registered(kube, state):
    kube.apply([PODGROUP_CRD])
    # A previous run deletes its namespaces without waiting: creating one while it still terminates fails.
    def phases():
        return [(kube.get(f"/api/v1/namespaces/{ns}") or {}).get("status", {}).get("phase") for ns in (PROBE_NS, TDM_NS)]
    kube.wait_for("the previous run's namespaces to be gone", lambda: "Terminating" not in phases(), 180)
    for ns in (PROBE_NS, TDM_NS):
        kube.kubectl("create", "namespace", ns, check=False)
    kube.wait_for("the namespaces", lambda: phases() == ["Active", "Active"], 30)
    kube.wait_for("the PodGroup CRD", lambda: kube.get("/apis/scheduling.volcano.sh/v1beta1/podgroups"), 30)
    fail_open = FailOpen(kube)
    load = AdmissionLoad(kube)
    load.start()
    time.sleep(2)
    started = time.time()
    with helm_config() as config:
        release = config.install(str(CHART), RELEASE, VALUES, namespace=NAMESPACE, create_namespace=True,
                                 wait="watcher", timeout=300)
    state["install_seconds"] = time.time() - started
    assert release.get("status") == "deployed", release
    time.sleep(5)
    samples = load.finish()
    metric, lines = fail_open.since()
    registered = [s["at"] for s in samples if s["configured"]]
    assert registered, "the webhook configuration never appeared"
    first = min(registered)
    state["registered_after"] = first - started
    before = [s for s in samples if s["at"] < first]
    # The API server picks a new configuration up through its informer: allow it a second.
    active = settled(samples, first + 1.0)
    print(f"\ninstall: helm install --wait {state['install_seconds']:.1f}s; configuration registered "
          f"{state['registered_after']:.1f}s after the install began; {len(samples)} dry-run creations, "
          f"{len(before)} before it, {len(active)} after it was active, "
          f"{sum(s['mutated'] for s in active)} of those patched; fail-open count +{metric:g}")
    # The load saw the change: creations well before the registration were not patched (the webhook did
    # not exist for the API server yet).
    assert before and not any(s["mutated"] for s in before if s["at"] < first - 2.0)
    assert active and all(s["status"] == 201 for s in active), [s for s in active if s["status"] != 201][:3]
    unchecked = [s for s in active if not s["mutated"]]
    assert not unchecked, f"{len(unchecked)} reviews skipped after registration, first at {unchecked[0]['at'] - first:.2f}s"
    assert metric == 0, f"the API server failed open {metric:g} times"
    assert not lines, lines[:3]
    # The webhook configurations are owned by the release (its register ClusterRole), not left to chance.
    for kind in ("mutatingwebhookconfigurations", "validatingwebhookconfigurations"):
        config = kube.get(f"/apis/admissionregistration.k8s.io/v1/{kind}/{RELEASE}")
        owners = config["metadata"].get("ownerReferences", [])
        assert [(o["kind"], o["name"]) for o in owners] == [("ClusterRole", "tidal-webhook-register")], owners
    # Both controller replicas and the leader Lease.
    kube.wait_for("a leader", lambda: leader(kube), 60)


def leader(kube: Kube) -> str | None:
    lease = kube.get(f"/apis/coordination.k8s.io/v1/namespaces/{NAMESPACE}/leases/tidal-controller")
    return lease and lease["spec"].get("holderIdentity")


# ---------------------------------------------------------------------------------------------------------
# 2. TDM on a real node


class PodWatch(threading.Thread):
    """Lists the namespace's pods twice a second: when each was first seen terminating (evicted), each
    binding, and each pod's job."""

    def __init__(self, kube: Kube, namespace: str):
        super().__init__(daemon=True)
        self.kube, self.namespace, self.stop = kube, namespace, threading.Event()
        self.pods: dict[str, dict] = {}

    def run(self):
        while not self.stop.is_set():
            now = time.time()
            listing = self.kube.get(f"/api/v1/namespaces/{self.namespace}/pods") or {"items": []}
            for pod in listing["items"]:
                meta, spec = pod["metadata"], pod["spec"]
                seen = self.pods.setdefault(meta["uid"], {
                    "name": meta["name"], "job": job_of(pod), "first": now, "terminating": None, "bound": None,
                    "preemptable": meta.get("labels", {}).get("volcano.sh/preemptable") == "true",
                })
                if spec.get("nodeName") and seen["bound"] is None:
                    seen["bound"] = now
                if meta.get("deletionTimestamp") and seen["terminating"] is None:
                    seen["terminating"] = now
            time.sleep(0.5)

    def evictions(self) -> list[dict]:
        return sorted((p for p in self.pods.values() if p["terminating"]), key=lambda p: p["terminating"])


def job_of(pod: dict) -> str:
    group = pod["metadata"].get("annotations", {}).get("scheduling.k8s.io/group-name")
    if group:
        return group
    return pod["metadata"]["labels"].get("app", pod["metadata"]["name"])


def rounds_of(evictions: list[dict], gap: float = 5.0) -> list[list[dict]]:
    rounds: list[list[dict]] = []
    for eviction in evictions:
        if rounds and eviction["terminating"] - rounds[-1][-1]["terminating"] < gap:
            rounds[-1].append(eviction)
        else:
            rounds.append([eviction])
    return rounds


def per_job(round_: list[dict]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for eviction in round_:
        counts[eviction["job"]] = counts.get(eviction["job"], 0) + 1
    return counts


def expected_rounds() -> list[dict[str, int]]:
    jobs = PODGROUPS + [DEPLOYMENT]
    out = []
    for index in range(3):
        counts = {name: plan[index] for name, _, _, plan in jobs if plan[index]}
        if counts:
            out.append(counts)
    return out


def node_taints(kube: Kube) -> list[dict]:
    return kube.get(f"/api/v1/nodes/{NODE}")["spec"].get("taints") or []


def zone_taint(kube: Kube) -> bool:
    return any(t["key"] == ZONE_TAINT and t["effect"] == "NoSchedule" for t in node_taints(kube))


def create_workloads(kube: Kube, finish_at: float):
    preemptable = {"volcano.sh/preemptable": "true"}
    documents = []
    for name, size, budget, _ in PODGROUPS:
        documents.append({
            "apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
            "metadata": {"name": name, "namespace": TDM_NS,
                         "annotations": {**preemptable, "volcano.sh/jdb-max-unavailable": budget}},
            "spec": {"minMember": MIN_MEMBER[name], "queue": "default"},
        })
    kube.apply(documents)
    pods = []
    for name, size, _, _ in PODGROUPS:
        group = kube.get(f"/apis/scheduling.volcano.sh/v1beta1/namespaces/{TDM_NS}/podgroups/{name}")
        owner = {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup", "name": name,
                 "uid": group["metadata"]["uid"], "controller": True}
        for index in range(size):
            template = pod_template({**preemptable, "app": name}, {"scheduling.k8s.io/group-name": name})
            pods.append({"apiVersion": "v1", "kind": "Pod",
                         "metadata": {**template["metadata"], "name": f"{name}-{index}", "namespace": TDM_NS,
                                      "ownerReferences": [owner]},
                         "spec": template["spec"]})
    name, size, budget, _ = DEPLOYMENT
    deployments = [
        (name, size, {**preemptable, "app": name}, {"volcano.sh/jdb-max-unavailable": budget}),
        # Not preemptable: the webhook keeps it off the zone's (only) node, so it stays Pending.
        ("web", 2, {"app": "web"}, {}),
    ]
    for name, size, labels, annotations in deployments:
        pods.append({
            "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": TDM_NS},
            "spec": {"replicas": size, "selector": {"matchLabels": {"app": name}},
                     "template": pod_template(labels, annotations)},
        })
    # A preemptable pod that ends by itself at `finish_at` (its deadline counts from its start, a second or
    # so after its creation): before the close with the margin the drain needs, so it is left to finish.
    finisher = pod_template({**preemptable, "app": FINISHER}, {})
    finisher["spec"]["activeDeadlineSeconds"] = max(1, round(finish_at - time.time()))
    pods.append({"apiVersion": "v1", "kind": "Pod",
                 "metadata": {**finisher["metadata"], "name": FINISHER, "namespace": TDM_NS},
                 "spec": finisher["spec"]})
    kube.apply(pods)


def long_pod(name: str, **spec) -> dict:
    """A preemptable pod that says it runs three hours."""
    template = pod_template({"volcano.sh/preemptable": "true", "app": "long"},
                            {"tidal.dev/expected-run-time": "3h"})
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {**template["metadata"], "name": name, "namespace": TDM_NS},
            "spec": {**template["spec"], **spec}}


def check_long_pod_kept_off(kube: Kube, close_minute: dt.datetime):
    """Admission knows the close: a preemptable pod declaring a run time longer than the zone has left
    is required off the zone (NotIn, the zone's node being the only one it stays Pending), and pinned
    to the node by nodeName it is refused, the message naming the close."""
    created = kube.must("POST", f"/api/v1/namespaces/{TDM_NS}/pods", long_pod("long"))
    affinity = created["spec"].get("affinity", {})
    terms = affinity.get("nodeAffinity", {}).get("requiredDuringSchedulingIgnoredDuringExecution", {}).get(
        "nodeSelectorTerms", [])
    not_in = {"key": "volcano.sh/revocable-zone", "operator": "NotIn", "values": [ZONE]}
    assert terms and all(not_in in term.get("matchExpressions", []) for term in terms), affinity

    def unschedulable():
        pod = kube.get(f"/api/v1/namespaces/{TDM_NS}/pods/long")
        return not pod["spec"].get("nodeName") and any(
            c["type"] == "PodScheduled" and c["status"] == "False" and c.get("reason") == "Unschedulable"
            for c in pod["status"].get("conditions", []))
    kube.wait_for("the scheduler to find no node for the 3h pod", unschedulable, 15, 0.2)
    status, answer = kube.request("POST", f"/api/v1/namespaces/{TDM_NS}/pods?dryRun=All",
                                  long_pod("long-pinned", nodeName=NODE))
    message = answer.get("message", "") if isinstance(answer, dict) else str(answer)
    close = f"closes at {close_minute.strftime('%Y-%m-%dT%H:%M')}"
    assert status == 403 and "expected-run-time 3h" in message and close in message, (status, answer)
    print(f"\n3h pod: NotIn [{ZONE}], Unschedulable; pinned by nodeName: {message}")


def test_tdm_drains_a_closing_zone_round_by_round(kube, state):
    # The zone: open now, closing at the end of a minute 100-160 s away (its drain starting DRAIN_BEFORE
    # earlier, 40-100 s from now), open again two minutes after the close.
    now = dt.datetime.now(dt.timezone.utc)
    close_minute = (now + dt.timedelta(seconds=100 + DRAIN_BEFORE)).replace(second=0, microsecond=0)
    closes_at = close_minute + dt.timedelta(seconds=1)  # both ends of a window are included
    drain_at = closes_at - dt.timedelta(seconds=DRAIN_BEFORE)
    opens_at = close_minute + dt.timedelta(minutes=2)
    start = now - dt.timedelta(minutes=1)
    zone = {
        "apiVersion": "tidal.dev/v1alpha1", "kind": "RevocableZone", "metadata": {"name": ZONE},
        "spec": {"windows": [{"time": f"{hhmm(start)}-{hhmm(close_minute)}"},
                             {"time": f"{hhmm(opens_at)}-{hhmm(opens_at + dt.timedelta(minutes=30))}"}],
                 "timeZone": "UTC", "evictPeriod": f"{EVICT_PERIOD}s", "taintWhenClosed": True,
                 # A fixed start, so that the rounds are counted from it; the default (auto) would start
                 # the drain at once, the zone closing sooner than its estimated drain.
                 "drainBefore": f"{DRAIN_BEFORE}s"},
    }
    policy = {
        "apiVersion": "tidal.dev/v1alpha1", "kind": "DeschedulingPolicy", "metadata": {"name": POLICY},
        "spec": {"mode": "Evict", "interval": "30s", "strategies": {"tdm": {}},
                 "defaults": {"cooldown": "0s"}, "namespaces": {"include": [TDM_NS]}},
    }
    kube.kubectl("label", "node", NODE, f"volcano.sh/revocable-zone={ZONE}", "--overwrite")
    kube.apply([zone, policy])
    create_workloads(kube, drain_at.timestamp() + FINISH_AFTER)
    watch = PodWatch(kube, TDM_NS)
    watch.start()
    preemptable_total = sum(size for _, size, _, _ in PODGROUPS) + DEPLOYMENT[1] + 1  # and the finisher

    def running():
        pods = (kube.get(f"/api/v1/namespaces/{TDM_NS}/pods") or {"items": []})["items"]
        up = [p for p in pods if p["status"].get("phase") == "Running"]
        return len(up) == preemptable_total and up
    kube.wait_for("the preemptable pods Running on the node", running, 60)
    check_long_pod_kept_off(kube, close_minute)
    assert dt.datetime.now(dt.timezone.utc) < drain_at - dt.timedelta(seconds=10), "too slow to set up"
    assert not zone_taint(kube), "the open zone's node is tainted"

    # What tidal says will happen, from outside the cluster, before it happens.
    timeline = json.loads(tidal("timeline", "-o", "json", "--span", "10m"))
    state["timeline"] = timeline
    report_open = json.loads(tidal("report", "-o", "json"))
    assert not report_open["evictions"], report_open["evictions"]

    # The drain's start: the taint (a draining zone counts as closed) and the first round.
    wait = (drain_at - dt.datetime.now(dt.timezone.utc)).total_seconds()
    time.sleep(max(0.0, wait))
    drained = time.time()
    kube.wait_for("the closed-zone taint", lambda: zone_taint(kube), 15, 0.2)
    state["taint_after"] = time.time() - drained
    kube.wait_for("round 1", lambda: watch.evictions(), 30, 0.2)
    time.sleep(2)
    # While round 2 waits for evictPeriod, once round 1's pods are gone (a terminating pod still counts
    # against its job's budget): what `tidal report` says now.
    evicted = {e["name"] for e in watch.evictions()}

    def gone():
        names = {p["metadata"]["name"] for p in kube.get(f"/api/v1/namespaces/{TDM_NS}/pods")["items"]}
        return not evicted & names
    kube.wait_for("round 1's pods to be gone", gone, 15, 0.2)
    report_closed = json.loads(tidal("report", "-o", "json"))
    state["report_closed"] = report_closed
    # Leader failover mid-drain: delete the leader's pod (the standby takes the Lease).
    holder = leader(kube)
    kube.kubectl("-n", NAMESPACE, "delete", "pod", holder, "--wait=false")
    failover = time.time()
    kube.wait_for("a new leader", lambda: (leader(kube) or holder) != holder, 60, 0.5)
    state["failover_seconds"] = time.time() - failover

    expected = expected_rounds()
    total = sum(sum(r.values()) for r in expected)
    kube.wait_for(f"{total} evictions", lambda: len(watch.evictions()) >= total,
                  EVICT_PERIOD * (len(expected) + 2) + 30)
    time.sleep(EVICT_PERIOD + 5)  # nothing more may follow
    watch.stop.set()
    evictions = watch.evictions()
    rounds = rounds_of(evictions)
    observed = [per_job(r) for r in rounds]
    starts = [r[0]["terminating"] - drained for r in rounds]
    print(f"\ndrain: taint {state['taint_after']:.1f}s after the drain's start; rounds at "
          f"{', '.join(f'+{s:.1f}s' for s in starts)}: {observed}; failover {state['failover_seconds']:.1f}s")

    # Round by round, each job within its budget; evictPeriod apart, across the failover too.
    assert observed == expected, (observed, expected)
    for before, after in zip(starts, starts[1:]):
        assert after - before >= EVICT_PERIOD - 1.0, starts
    assert starts[0] < 10, f"the first round came {starts[0]:.1f}s after the drain's start"
    # No pod evicted twice, by either replica: one Descheduled event per evicted pod.
    events = kube.get(f"/apis/events.k8s.io/v1/namespaces/{TDM_NS}/events")["items"]
    descheduled = [e["regarding"]["name"] for e in events if e.get("reason") == "Descheduled"]
    counts = {name: sum(e.get("series", {}).get("count", 1) for e in events
                        if e.get("reason") == "Descheduled" and e["regarding"]["name"] == name)
              for name in set(descheduled)}
    assert sorted(counts) == sorted(e["name"] for e in evictions), (counts, [e["name"] for e in evictions])
    assert set(counts.values()) == {1}, counts
    # The gang went whole, in one round, each eviction saying so.
    gang = [e for e in events if e.get("reason") == "Descheduled" and e["regarding"]["name"].startswith("gang-")]
    assert len(gang) == 3 and all("gang of 3 (minMember 3), taken whole" in e.get("note", "") for e in gang), gang
    # The pod that ends before the close was left to finish: no eviction, the kubelet ended it at its
    # deadline, and `tidal report` during the drain counted it in the zone's estimate as ending by itself.
    assert FINISHER not in counts and FINISHER not in {e["name"] for e in evictions}, counts
    finisher = kube.get(f"/api/v1/namespaces/{TDM_NS}/pods/{FINISHER}")
    ended = (finisher["status"].get("phase"), finisher["status"].get("reason"))
    assert ended == ("Failed", "DeadlineExceeded"), finisher["status"]
    estimate = [z.get("drain") or {} for z in report_closed["zones"] if z["name"] == ZONE]
    assert estimate and "1 pod left to finish" in estimate[0].get("summary", ""), report_closed["zones"]

    # What `tidal timeline` said before the close is what happened: the same rounds at the same times,
    # as many pods of each job in each, the same pods of the PodGroups. The only node is the zone's, so
    # the timeline has the Deployment's replacement stay Pending and hold its budget, as it does here;
    # the PodGroup pods have nothing to recreate them, so those jobs get smaller.
    predicted = timeline_rounds(timeline)
    assert [per_job(r) for r in predicted] == observed, (predicted, observed)
    for index, (plan, real) in enumerate(zip(predicted, rounds)):
        assert abs((plan[0]["at"] - drain_at.timestamp()) - starts[index]) < 8, (index, plan[0]["at"], starts)
        groups = {name for name, _, _, _ in PODGROUPS}
        assert sorted(e["name"] for e in plan if e["job"] in groups) == sorted(
            e["name"] for e in real if e["job"] in groups), (index, plan, real)
    # It also said the gang goes whole in round 1, and when the finisher ends by itself (its deadline
    # from its start: what the kubelet did).
    assert [event.get("gangs", []) for event in timeline["events"] if event.get("zone") == ZONE
            and event.get("evictions")][0] == [f"PodGroup {TDM_NS}/gang (gang of 3 (minMember 3))"], timeline
    ends = [event for event in timeline["events"] if event.get("event") == "finishes"]
    assert [event.get("pod") for event in ends] == [f"{TDM_NS}/{FINISHER}"], timeline
    started = dt.datetime.fromisoformat(finisher["status"]["startTime"].replace("Z", "+00:00")).timestamp()
    predicted_end = dt.datetime.fromisoformat(ends[0]["at"].replace("Z", "+00:00")).timestamp()
    assert predicted_end == started + finisher["spec"]["activeDeadlineSeconds"], (ends[0], finisher["status"])
    # What `tidal report` said during round 2's wait: the pods of round 2 wait for it, at its time.
    waiting = {w["name"]: w for w in report_closed.get("waiting", [])}
    round2 = {e["name"] for e in rounds[1]}
    assert round2 <= set(waiting), (round2, sorted(waiting))
    next_round = dt.datetime.fromisoformat(waiting[min(round2)]["nextRound"].replace("Z", "+00:00")).timestamp()
    assert abs(next_round - rounds[1][0]["terminating"]) < 8, (next_round, rounds[1][0]["terminating"])
    # And now, the drain over: the Deployment's two pods stay, held by its budget (its replacement is
    # Pending), which is what the controller did.
    report_after = json.loads(tidal("report", "-o", "json"))
    assert not report_after["evictions"], report_after["evictions"]
    held = [s for s in report_after["skipped"] if s["gate"] == "budget"]
    assert sorted(s["name"] for s in held) == sorted(on_node_names(kube)), report_after["skipped"]
    assert all("1 unavailable" in s["detail"] for s in held), held

    # The zone's status, once the close has passed: closed and evicting ("draining" is true while tidal
    # evicts the zone's pods, closed or ahead of the close, as the CRD describes it), the last round
    # recorded, and the two etl pods that stay named with their reason: the replacement has no node to
    # run on.
    time.sleep(max(0.0, (closes_at - dt.datetime.now(dt.timezone.utc)).total_seconds() + 3))
    status = kube.get(f"/apis/tidal.dev/v1alpha1/revocablezones/{ZONE}")["status"]
    assert status["open"] is False and status["draining"] is True, status
    assert status["drain"]["remainingPods"] == 2, status
    assert "2 stay (2 budget held by Pending replacements)" in status["drain"]["summary"], status
    last_round = dt.datetime.fromisoformat(status["lastEvictionRound"].replace("Z", "+00:00")).timestamp()
    assert abs(last_round - rounds[-1][0]["terminating"]) < 3, (status, rounds[-1][0]["terminating"])

    # Where the pods went: the PodGroup pods are gone; the Deployment's evicted pod was recreated and
    # stays Pending, as do the non-preemptable web (never bound to the zone's node) and the 3h pod.
    pods = kube.get(f"/api/v1/namespaces/{TDM_NS}/pods")["items"]
    on_node = [p["metadata"]["name"] for p in pods if p["spec"].get("nodeName") == NODE
               and not p["metadata"].get("deletionTimestamp") and p["status"].get("phase") != "Failed"]
    assert sorted(on_node) == sorted(p["metadata"]["name"] for p in pods
                                     if p["metadata"]["labels"].get("app") == "etl"
                                     and p["status"].get("phase") == "Running"), on_node
    pending = [p for p in pods if p["status"].get("phase") == "Pending"]
    assert sorted(job_of(p) for p in pending) == ["etl", "long", "web", "web"], [
        p["metadata"]["name"] for p in pending]
    assert not any(p["bound"] and not p["preemptable"] for p in watch.pods.values()), "a non-preemptable pod was bound"
    late = [p["name"] for p in watch.pods.values() if p["bound"] and p["bound"] > drained + 1]
    assert not late, f"bound to the closed zone: {late}"
    # The webhook refuses a preemptable pod placed on the closed zone's node directly (no scheduler).
    status, answer = kube.request("POST", f"/api/v1/namespaces/{TDM_NS}/pods?dryRun=All", {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "direct", "labels": {"volcano.sh/preemptable": "true"}},
        "spec": {"nodeName": NODE, "containers": [{"name": "c", "image": BUSYBOX}]},
    })
    assert status == 403 and "tidal" in json.dumps(answer), (status, answer)
    state["opens_at"] = opens_at
    state["watch"] = watch


def on_node_names(kube: Kube) -> list[str]:
    pods = kube.get(f"/api/v1/namespaces/{TDM_NS}/pods")["items"]
    return [p["metadata"]["name"] for p in pods if p["spec"].get("nodeName") == NODE
            and p["status"].get("phase") not in ("Failed", "Succeeded")]


def timeline_rounds(timeline: dict) -> list[list[dict]]:
    """The evictions `tidal timeline -o json` predicted for the zone, round by round."""
    rounds = []
    for event in timeline["events"]:
        if event.get("zone") != ZONE or not event.get("evictions"):
            continue
        at = dt.datetime.fromisoformat(event["at"].replace("Z", "+00:00")).timestamp()
        rounds.append([{"at": at, "name": p["name"], "job": job_name(p)} for p in event["evictions"]])
    return rounds


def job_name(pod: dict) -> str:
    """The test's job name of a report entry ("PodGroup ns/train", "ReplicaSet ns/etl-5d9c...")."""
    name = (pod.get("job") or "").split("/")[-1]
    return DEPLOYMENT[0] if name.startswith(DEPLOYMENT[0] + "-") else name


def test_the_zone_opens_again_untainted_and_takes_its_pods_back(kube, state):
    opens_at = state["opens_at"]
    time.sleep(max(0.0, (opens_at - dt.datetime.now(dt.timezone.utc)).total_seconds()))
    opened = time.time()
    kube.wait_for("the taint to go", lambda: not zone_taint(kube), 20, 0.2)
    state["untaint_after"] = time.time() - opened

    def etl_back():
        pods = kube.get(f"/api/v1/namespaces/{TDM_NS}/pods?labelSelector=app%3Detl")["items"]
        return len(pods) == DEPLOYMENT[1] and all(p["status"].get("phase") == "Running" for p in pods)
    kube.wait_for("the recreated etl pod Running again", etl_back, 60)
    web = kube.get(f"/api/v1/namespaces/{TDM_NS}/pods?labelSelector=app%3Dweb")["items"]
    assert all(not p["spec"].get("nodeName") for p in web), "a non-preemptable pod landed on a revocable node"
    # The 3h pod's exclusion was decided at its creation and stays (the new window is 30 minutes anyway).
    assert not kube.get(f"/api/v1/namespaces/{TDM_NS}/pods/long")["spec"].get("nodeName"), "the 3h pod was bound"
    print(f"\nopen: taint removed {state['untaint_after']:.1f}s after the opening")


# ---------------------------------------------------------------------------------------------------------
# Notice before eviction


NOTICE = 45
NOTICE_DRAIN_BEFORE = 30
NOTICED = ("told-0", "told-1", "reader")


def noticed_pod(name: str) -> dict:
    """A preemptable pod; `reader` prints, every second, the eviction instant its notice gives it, read
    through a downward API volume as a workload about to save its work would."""
    template = pod_template({"volcano.sh/preemptable": "true", "app": "told"}, {})
    spec = template["spec"]
    if name == "reader":
        spec["volumes"] = [{"name": "notice", "downwardAPI": {"items": [
            {"path": "evict-after", "fieldRef": {"fieldPath": "metadata.annotations['tidal.dev/evict-after']"}}]}}]
        spec["containers"][0]["command"] = [
            "sh", "-c", "while true; do echo \"evict-after=$(cat /notice/evict-after)\"; sleep 1; done"]
        spec["containers"][0]["volumeMounts"] = [{"name": "notice", "mountPath": "/notice"}]
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {**template["metadata"], "name": name, "namespace": TDM_NS}, "spec": spec}


def notice_of(pod: dict) -> dict | None:
    return next((c for c in pod["status"].get("conditions", [])
                 if c["type"] == "tidal.dev/EvictionNotice" and c["status"] == "True"), None)


def instant(text: str) -> float:
    return dt.datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def test_pods_are_told_before_a_drain_evicts_them(kube, state):
    # The zone, open again, now closes at the end of a minute 120-180 s away, drains 30 s before, and
    # gives 45 s of notice: its pods are told 85 s (and 10 s) before the close, evicted from the drain's
    # start, through the chart's RBAC and the policy that lets it write only the notice.
    now = dt.datetime.now(dt.timezone.utc)
    close_minute = (now + dt.timedelta(seconds=180)).replace(second=0, microsecond=0)
    closes_at = close_minute + dt.timedelta(seconds=1)
    drain_at = closes_at - dt.timedelta(seconds=NOTICE_DRAIN_BEFORE)
    kube.merge_patch(f"/apis/tidal.dev/v1alpha1/revocablezones/{ZONE}", {"spec": {
        "windows": [{"time": f"{hhmm(state['opens_at'])}-{hhmm(close_minute)}"}],
        "drainBefore": f"{NOTICE_DRAIN_BEFORE}s", "evictionNotice": f"{NOTICE}s"}})
    kube.apply([noticed_pod(name) for name in NOTICED])

    def running():
        pods = [kube.get(f"/api/v1/namespaces/{TDM_NS}/pods/{name}") for name in NOTICED]
        return all(p and p["status"].get("phase") == "Running" for p in pods)
    kube.wait_for("the pods to be told Running", running, 60)
    timeline = json.loads(tidal("timeline", "-o", "json", "--span", "10m"))
    assert dt.datetime.now(dt.timezone.utc) < drain_at - dt.timedelta(seconds=NOTICE + 10), "too slow to set up"
    watch = PodWatch(kube, TDM_NS)
    watch.start()

    def told():
        pods = [kube.get(f"/api/v1/namespaces/{TDM_NS}/pods/{name}") for name in NOTICED]
        return all(notice_of(p) for p in pods) and pods
    pods = kube.wait_for("every pod told", told, (drain_at - dt.datetime.now(dt.timezone.utc)).total_seconds())
    told_at = {p["metadata"]["name"]: instant(notice_of(p)["lastTransitionTime"]) for p in pods}
    evict_after = {p["metadata"]["name"]: p["metadata"]["annotations"]["tidal.dev/evict-after"] for p in pods}
    for pod in pods:
        name, annotations = pod["metadata"]["name"], pod["metadata"].get("annotations", {})
        assert instant(annotations["tidal.dev/evict-after"]) == told_at[name] + NOTICE, annotations
        assert instant(annotations["tidal.dev/evict-by"]) == close_minute.timestamp(), annotations
        # Told before the drain, its notice's length ahead of it (and the few seconds the controller
        # allows itself).
        assert drain_at.timestamp() - 20 - NOTICE <= told_at[name] <= drain_at.timestamp() - NOTICE + 1, (
            name, told_at[name], drain_at)
    events = kube.get(f"/apis/events.k8s.io/v1/namespaces/{TDM_NS}/events")["items"]
    noticed = sorted(e["regarding"]["name"] for e in events if e.get("reason") == "EvictionNotice")
    assert set(NOTICED) <= set(noticed), noticed
    # The workload reads its notice: the kubelet refreshes the downward API file while it runs.

    def read():
        log = kube.kubectl("-n", TDM_NS, "logs", "reader", check=False)
        return f"evict-after={evict_after['reader']}" in log
    kube.wait_for("the reader to see its notice", read, NOTICE - 5, 1)
    read_after = time.time() - told_at["reader"]

    kube.wait_for("the told pods evicted", lambda: set(NOTICED) <= {e["name"] for e in watch.evictions()},
                  (closes_at - dt.datetime.now(dt.timezone.utc)).total_seconds() + 30)
    watch.stop.set()
    ahead = {}
    for name in NOTICED:
        pod = kube.get(f"/api/v1/namespaces/{TDM_NS}/pods/{name}")
        # The eviction's instant as the API server wrote it: the deletion it made, less the grace period.
        evicted = instant(pod["metadata"]["deletionTimestamp"]) - pod["metadata"]["deletionGracePeriodSeconds"]
        ahead[name] = evicted - told_at[name]
        assert ahead[name] >= NOTICE - 1, (name, ahead[name])
    # What `tidal timeline` said before: the notices, then the round that evicts the told pods.
    notified = [e for e in timeline["events"] if e.get("zone") == ZONE and e.get("event") == "notified"]
    assert notified, timeline["events"]
    predicted = instant(notified[0]["at"])
    assert abs(predicted - min(told_at.values())) < 8, (notified[0], told_at)
    print(f"\nnotice: told {', '.join(f'{n} {drain_at.timestamp() - t:.0f}s' for n, t in told_at.items())} before "
          f"the drain; evicted {', '.join(f'{n} {a:.0f}s' for n, a in ahead.items())} after its notice; the "
          f"reader saw it {read_after:.0f}s after; the timeline said {predicted - min(told_at.values()):+.0f}s")


# ---------------------------------------------------------------------------------------------------------
# 3. Upgrade and rolling restart


def test_upgrade_and_rolling_restart_answer_every_review(kube, state):
    fail_open = FailOpen(kube)
    load = AdmissionLoad(kube)
    load.start()
    time.sleep(2)
    values = {**VALUES, "webhook": {**VALUES["webhook"], "timeoutSeconds": 4, "lookupWait": "2s"}}
    started = time.time()
    with helm_config() as config:
        release = config.upgrade(str(CHART), RELEASE, values, namespace=NAMESPACE, wait="watcher", timeout=300)
    upgraded = time.time() - started
    assert release.get("status") == "deployed", release
    mutating = kube.get(f"/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations/{RELEASE}")
    assert mutating["webhooks"][0]["timeoutSeconds"] == 4
    deployment = kube.get(f"/apis/apps/v1/namespaces/{NAMESPACE}/deployments/tidal-webhook")
    assert "--lookup-wait=2s" in deployment["spec"]["template"]["spec"]["containers"][0]["args"]
    restarted = time.time()
    kube.kubectl("-n", NAMESPACE, "rollout", "restart", "deployment/tidal-webhook")
    kube.kubectl("-n", NAMESPACE, "rollout", "status", "deployment/tidal-webhook", "--timeout=180s")
    restart = time.time() - restarted
    time.sleep(5)
    samples = load.finish()
    metric, lines = fail_open.since()
    print(f"\nupgrade {upgraded:.1f}s, rolling restart {restart:.1f}s: {len(samples)} dry-run creations, "
          f"{sum(s['mutated'] for s in samples)} patched, slowest {max(s['took'] for s in samples):.2f}s; "
          f"fail-open count +{metric:g}")
    assert all(s["status"] == 201 for s in samples), [s for s in samples if s["status"] != 201][:3]
    unchecked = [s for s in samples if not s["mutated"]]
    assert not unchecked, f"{len(unchecked)} of {len(samples)} reviews skipped"
    assert metric == 0, f"the API server failed open {metric:g} times"
    assert not lines, lines[:3]


# ---------------------------------------------------------------------------------------------------------
# 4. Uninstall


def test_uninstall_leaves_no_webhook_configuration(kube, state):
    with helm_config() as config:
        config.uninstall(RELEASE, wait="watcher", timeout=120)

    def gone():
        return all(
            kube.request("GET", f"/apis/admissionregistration.k8s.io/v1/{kind}/{RELEASE}")[0] == 404
            for kind in ("mutatingwebhookconfigurations", "validatingwebhookconfigurations")
        )
    kube.wait_for("the webhook configurations to go", gone, 30)
    status, answer = kube.request("POST", f"/api/v1/namespaces/{PROBE_NS}/pods?dryRun=All", probe_pod(0))
    assert status == 201 and not mutated(answer), (status, answer)
    # Leave the node as it was found.
    kube.kubectl("delete", "namespace", TDM_NS, PROBE_NS, "--wait=false", check=False)
    kube.kubectl("delete", "revocablezone", ZONE, "--ignore-not-found", check=False)
    kube.kubectl("delete", "deschedulingpolicy", POLICY, "--ignore-not-found", check=False)
    kube.kubectl("label", "node", NODE, "volcano.sh/revocable-zone-", check=False)
    kube.kubectl("taint", "node", NODE, f"{ZONE_TAINT}-", check=False)
