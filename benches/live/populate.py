#!/usr/bin/env python3
"""Fills the live API server with the drain run's cluster (shape.py), or sets its zones and policy.

  populate.py cluster --kubeconfig K [--scale S]   namespaces, nodes, PodGroups, pods (created, then their
                                                   status set to Running through the status subresource)
  populate.py zones --kubeconfig K --close T [--scale S]
                                                   the three RevocableZones, open now and closing at T
                                                   (rz2 two minutes later), and the `tdm` policy

Re-runnable: objects that exist are left alone (a pod's status is written again). Expects tidal's CRDs and
the PodGroup CRD to be installed (run-drain.sh applies them). Pods are bound at creation (spec.nodeName), so
no scheduler is needed; they were scheduled and started a day ago, far past the policy's 10-minute cooldown.
Several processes of many threads each, one keep-alive connection per thread: one Python process tops out
well below what the API server takes."""

from __future__ import annotations

import argparse
import multiprocessing
import os
import queue
import sys
import threading
import time
import uuid

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from kubeclient import ApiError, Kube, parse_time, rfc3339  # noqa: E402
from shape import GROUP_SIZE, PREEMPTABLE_LABEL, ZONE_LABEL, node_name, shape  # noqa: E402

DAY_AGO = rfc3339(time.time() - 86400)
IMAGE = "registry.example/app:1"


def namespace(index: int, count: int) -> str:
    return f"bench-{index % count:03d}"


def plan_pods(cluster: dict) -> list[tuple]:
    """Every pod as (namespace, name, node, owner kind, owner name, grace, zone, preemptable, group), node by
    node: a zone node first gets its share of the zone's preemptable pods (spread round-robin, so a
    PodGroup's 25 pods land on 25 nodes), then ordinary pods up to 30."""
    ns_count = cluster["namespaces"]
    zone_of = {}
    for zone in cluster["zones"]:
        for n in range(zone["firstNode"], zone["firstNode"] + zone["nodes"]):
            zone_of[n] = zone
    per_node: dict[int, list[tuple]] = {}
    for zone in cluster["zones"]:
        z = zone["name"]
        members = []
        for s in range(zone["singles"]):
            name = f"{z}-job-{s:05d}"
            members.append((namespace(s, ns_count), name, "ReplicaSet", name, zone["grace"], z, True, None))
        for g in range(zone["groups"]):
            group = f"{z}-pg-{g:03d}"
            for k in range(GROUP_SIZE):
                members.append((namespace(g, ns_count), f"{group}-{k:02d}", "PodGroup", group, zone["grace"], z,
                                True, group))
        for p, member in enumerate(members):
            n = zone["firstNode"] + p % zone["nodes"]
            per_node.setdefault(n, []).append(member)
    pods, ordinary = [], 0
    for n in range(cluster["nodes"]):
        node = node_name(n)
        mine = per_node.get(n, [])
        zone = zone_of.get(n)
        for member in mine:
            ns, name, owner_kind, owner, grace, z, pre, group = member
            pods.append((ns, name, node, owner_kind, owner, grace, z, pre, group))
        for _ in range(cluster["podsPerNode"] - len(mine)):
            ns = namespace(ordinary, ns_count)
            # ten consecutive pods of a namespace share a ReplicaSet, as in the performance runs
            rs = f"rs-{ordinary // ns_count // 10:05d}"
            pods.append((ns, f"pod-{ordinary:06d}", node, "ReplicaSet", rs, 30, zone["name"] if zone else None,
                         False, None))
            ordinary += 1
    return pods


def pod_body(pod: tuple, group_uids: dict) -> dict:
    ns, name, node, owner_kind, owner, grace, zone, preemptable, group = pod
    labels = {"app": owner}
    annotations = {}
    if zone:
        labels[ZONE_LABEL] = zone
    if preemptable:
        labels[PREEMPTABLE_LABEL] = "true"
        annotations["volcano.sh/preemptable"] = "true"
    if owner_kind == "PodGroup":
        annotations["scheduling.k8s.io/group-name"] = group
        ref = {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup", "name": owner,
               "uid": group_uids[(ns, owner)], "controller": True, "blockOwnerDeletion": True}
    else:
        # no ReplicaSet object exists (no controller-manager): the reference alone makes the job
        ref = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": owner,
               "uid": str(uuid.uuid5(uuid.NAMESPACE_URL, f"replicaset/{ns}/{owner}")),
               "controller": True, "blockOwnerDeletion": True}
    metadata = {"name": name, "namespace": ns, "labels": labels, "ownerReferences": [ref]}
    if annotations:
        metadata["annotations"] = annotations
    return {
        "apiVersion": "v1", "kind": "Pod", "metadata": metadata,
        "spec": {
            "nodeName": node, "terminationGracePeriodSeconds": grace, "automountServiceAccountToken": False,
            "containers": [{"name": "app", "image": IMAGE,
                            "resources": {"requests": {"cpu": "360m", "memory": "1480Mi"}}}],
        },
    }


POD_STATUS = {"status": {
    "phase": "Running", "startTime": DAY_AGO, "hostIP": "10.0.0.1", "podIP": "10.1.0.1",
    "conditions": [{"type": t, "status": "True", "lastTransitionTime": DAY_AGO}
                   for t in ("PodReadyToStartContainers", "Initialized", "Ready", "ContainersReady", "PodScheduled")],
    "containerStatuses": [{"name": "app", "ready": True, "started": True, "restartCount": 0, "image": IMAGE,
                           "imageID": IMAGE, "containerID": "containerd://0",
                           "state": {"running": {"startedAt": DAY_AGO}}}],
}}


def run_pool(kube: Kube, tasks, threads: int, label: str, report_every=10.0) -> int:
    """Runs fn(kube) for every fn in tasks on `threads` threads; returns how many failed."""
    work: queue.Queue = queue.Queue(maxsize=threads * 64)
    failed, done = [0], [0]
    lock = threading.Lock()

    def worker():
        while True:
            task = work.get()
            if task is None:
                return
            try:
                task(kube)
            except Exception as error:  # noqa: BLE001 - counted and shown, the rest goes on
                with lock:
                    failed[0] += 1
                    if failed[0] <= 5:
                        print(f"{label}: {error}", file=sys.stderr, flush=True)
            with lock:
                done[0] += 1

    pool = [threading.Thread(target=worker, daemon=True) for _ in range(threads)]
    for t in pool:
        t.start()
    start = last = time.monotonic()
    for task in tasks:
        work.put(task)
        now = time.monotonic()
        if now - last >= report_every and done[0]:
            last = now
            print(f"  {label}: {done[0]} done, {done[0] / (now - start):.0f}/s", flush=True)
    for _ in pool:
        work.put(None)
    for t in pool:
        t.join()
    return failed[0]


def create_pod(body: dict):
    path = f"/api/v1/namespaces/{body['metadata']['namespace']}/pods"
    name = body["metadata"]["name"]

    def task(kube: Kube):
        kube.create(path, body)
        kube.request("PATCH", f"{path}/{name}/status", POD_STATUS, content_type="application/merge-patch+json")
    return task


def pod_worker(kubeconfig: str, cluster: dict, group_uids: dict, part: int, parts: int, threads: int, out):
    kube = Kube(kubeconfig)
    pods = plan_pods(cluster)
    mine = (create_pod(pod_body(p, group_uids)) for i, p in enumerate(pods) if i % parts == part)
    # only the first process reports, for all: they advance together
    out.put(run_pool(kube, mine, threads, f"pods (x{parts})", report_every=60.0 if part == 0 else float("inf")))


def populate_cluster(args):
    cluster = shape(args.scale)
    kube = Kube(args.kubeconfig)
    t0 = time.monotonic()
    lap = lambda what: print(f"[populate +{time.monotonic() - t0:.0f}s] {what}", flush=True)  # noqa: E731
    print(f"scale {args.scale}: {cluster['nodes']} nodes, {cluster['pods']} pods, "
          + ", ".join(f"{z['name']} {z['nodes']} nodes {z['preemptable']} preemptable" for z in cluster["zones"]),
          flush=True)
    for _ in range(60):  # the CRDs were just applied: wait until the PodGroup API is served
        try:
            kube.get("/apis/scheduling.volcano.sh/v1beta1/podgroups?limit=1")
            break
        except ApiError:
            time.sleep(1)
    names = [namespace(i, cluster["namespaces"]) for i in range(cluster["namespaces"])]

    def ns_task(name):
        def task(k: Kube):
            k.create("/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
            # the ServiceAccount admission plugin refuses pods whose ServiceAccount does not exist, and no
            # controller-manager creates `default`
            k.create(f"/api/v1/namespaces/{name}/serviceaccounts",
                     {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "default"}})
        return task
    failed = run_pool(kube, (ns_task(n) for n in names), args.threads, "namespaces")
    lap(f"{len(names)} namespaces")

    zone_of = {}
    for zone in cluster["zones"]:
        for n in range(zone["firstNode"], zone["firstNode"] + zone["nodes"]):
            zone_of[n] = zone["name"]
    resources = {"cpu": "32", "memory": "128Gi", "pods": "110", "ephemeral-storage": "100Gi"}

    def node_task(n):
        name = node_name(n)
        labels = {"kubernetes.io/hostname": name, "kubernetes.io/os": "linux",
                  "topology.kubernetes.io/zone": f"zone-{n % 3}"}
        if n in zone_of:
            labels["volcano.sh/revocable-zone"] = zone_of[n]
        status = {"status": {
            "capacity": resources, "allocatable": resources,
            "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady",
                            "lastHeartbeatTime": DAY_AGO, "lastTransitionTime": DAY_AGO}],
            "addresses": [{"type": "InternalIP", "address": f"10.0.{n // 250}.{n % 250 + 1}"},
                          {"type": "Hostname", "address": name}],
        }}

        def task(k: Kube):
            k.create("/api/v1/nodes", {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels}})
            # what a kubelet reports; nothing updates it later (no node lifecycle controller runs)
            k.request("PATCH", f"/api/v1/nodes/{name}/status", status, content_type="application/merge-patch+json")
        return task
    failed += run_pool(kube, (node_task(n) for n in range(cluster["nodes"])), args.threads, "nodes")
    lap(f"{cluster['nodes']} nodes")

    group_uids = {}
    for zone in cluster["zones"]:
        for g in range(zone["groups"]):
            group = f"{zone['name']}-pg-{g:03d}"
            ns = namespace(g, cluster["namespaces"])
            path = f"/apis/scheduling.volcano.sh/v1beta1/namespaces/{ns}/podgroups"
            kube.create(path, {
                "apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
                "metadata": {"name": group, "namespace": ns,
                             "annotations": {"volcano.sh/jdb-max-unavailable": "20%"}},
                "spec": {"minMember": GROUP_SIZE},
            })
            group_uids[(ns, group)] = kube.get(f"{path}/{group}")["metadata"]["uid"]
    lap(f"{len(group_uids)} PodGroups")

    out = multiprocessing.Queue()
    procs = [multiprocessing.Process(target=pod_worker, args=(args.kubeconfig, cluster, group_uids, p, args.processes,
                                                                args.threads, out))
             for p in range(args.processes)]
    start = time.monotonic()
    for p in procs:
        p.start()
    for p in procs:
        p.join()
    failed += sum(out.get() for _ in procs)
    took = time.monotonic() - start
    lap(f"{cluster['pods']} pods in {took:.0f}s ({cluster['pods'] / took:.0f} pods/s, two requests each)")
    if failed:
        print(f"{failed} objects failed", file=sys.stderr)
        sys.exit(1)


def windows_closing_at(close: float) -> str:
    """A daily window open now and ending at `close`'s minute (close must be a whole minute: the window's
    end is inclusive to the second, so the zone closes one second after it)."""
    end = time.gmtime(close)
    start = time.gmtime(close - 12 * 3600)
    return f"{start.tm_hour:02d}:{start.tm_min:02d}-{end.tm_hour:02d}:{end.tm_min:02d}"


def set_zones(args):
    cluster = shape(args.scale)
    kube = Kube(args.kubeconfig)
    close = parse_time(args.close)
    if close % 60:
        sys.exit("--close must be a whole minute")
    for zone in cluster["zones"]:
        spec = {"windows": [{"time": windows_closing_at(close + zone["closeOffset"])}], "timeZone": "UTC",
                "drainBefore": zone["drainBefore"]}
        body = {"apiVersion": "tidal.dev/v1alpha1", "kind": "RevocableZone", "metadata": {"name": zone["name"]},
                "spec": spec}
        path = "/apis/tidal.dev/v1alpha1/revocablezones"
        if kube.create(path, body) is None:
            kube.request("PATCH", f"{path}/{zone['name']}", {"spec": spec}, content_type="application/merge-patch+json")
        print(f"zone {zone['name']}: windows {spec['windows'][0]['time']} UTC, drainBefore {zone['drainBefore']}, "
              f"closes {rfc3339(close + zone['closeOffset'] + 1)}")
    policy = {"apiVersion": "tidal.dev/v1alpha1", "kind": "DeschedulingPolicy", "metadata": {"name": "tdm"},
              "spec": {"mode": "Evict", "strategies": {"tdm": {"evictPlacementViolations": False}},
                       "defaults": {"cooldown": "10m"}}}
    path = "/apis/tidal.dev/v1alpha1/deschedulingpolicies"
    if kube.create(path, policy) is None:
        kube.request("PATCH", f"{path}/tdm", {"spec": policy["spec"]}, content_type="application/merge-patch+json")
    print("policy tdm: Evict, tdm (evictPlacementViolations: false), defaults.cooldown 10m")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    for name in ("cluster", "zones"):
        p = sub.add_parser(name)
        p.add_argument("--kubeconfig", required=True)
        p.add_argument("--scale", type=float, default=1.0)
        if name == "cluster":
            p.add_argument("--processes", type=int, default=3)
            p.add_argument("--threads", type=int, default=12)
        else:
            p.add_argument("--close", required=True, help="RFC 3339, a whole minute: rz1 and rz3 close then")
    args = parser.parse_args()
    (populate_cluster if args.command == "cluster" else set_zones)(args)


if __name__ == "__main__":
    main()
