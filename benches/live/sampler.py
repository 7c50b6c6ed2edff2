#!/usr/bin/env python3
"""Follows the pods on the zone nodes through a watch and writes, into --out:

  samples.csv   every --interval seconds: per zone the preemptable pods left (not yet deleted) and how many
                of them are terminating, the pods on zone nodes that are not preemptable but were
                evicted or deleted anyway (must stay 0: the policy sets evictPlacementViolations: false),
                and the machine's load average
  events.csv    one line per preemptable pod as it goes: when it was first seen terminating (evicted) and
                when it was deleted, by this process's clock
  zones.jsonl   each zone's status (open, draining, status.drain, DrainOnTrack) every time tidal changes it
  summary.json  per zone: preemptable pods at the start, the first eviction seen, the instant its last
                preemptable pod was deleted (the zone is empty), and the counts now; rewritten every sample

  sampler.py --kubeconfig K --out DIR [--interval 1]     runs until SIGTERM/SIGINT"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from kubeclient import Kube, rfc3339  # noqa: E402
from shape import PREEMPTABLE_LABEL, ZONE_LABEL  # noqa: E402


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--kubeconfig", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--interval", type=float, default=1.0)
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    kube = Kube(args.kubeconfig)
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())

    lock = threading.Lock()
    pods: dict = {}  # uid -> [zone, preemptable, terminating, namespace/name]
    zones: dict = {}  # zone -> summary
    violations = {"evicted": 0, "deleted": 0, "pods": []}
    listed = threading.Event()
    events = open(os.path.join(args.out, "events.csv"), "a", buffering=1)
    if events.tell() == 0:
        events.write("time,zone,what,pod\n")

    def zone_entry(z):
        return zones.setdefault(z, {"initial": 0, "left": 0, "terminating": 0, "firstEviction": None,
                                    "lastEviction": None, "empty": None})

    def violation(what, meta):
        violations[what] += 1
        if len(violations["pods"]) < 20:
            violations["pods"].append(f"{what} {meta['namespace']}/{meta['name']} at {rfc3339(time.time(), True)}")

    def seen(pod, kind):
        meta = pod["metadata"]
        labels = meta.get("labels", {})
        z, pre = labels.get(ZONE_LABEL), labels.get(PREEMPTABLE_LABEL) == "true"
        terminating = bool(meta.get("deletionTimestamp"))
        now = time.time()
        key = f"{meta['namespace']}/{meta['name']}"
        with lock:
            entry = zone_entry(z) if pre else None
            old = pods.get(meta["uid"])
            if kind == "DELETED":
                gone(meta["uid"], now)
                return
            if old is None:
                pods[meta["uid"]] = [z, pre, False, key]
                old = pods[meta["uid"]]
                if pre:
                    entry["left"] += 1
            if terminating and not old[2]:
                old[2] = True
                if pre:
                    entry["terminating"] += 1
                    entry["firstEviction"] = entry["firstEviction"] or rfc3339(now, True)
                    entry["lastEviction"] = rfc3339(now, True)
                    events.write(f"{rfc3339(now, True)},{z},evicted,{key}\n")
                else:
                    violation("evicted", meta)

    def gone(uid, now):
        # under the lock
        old = pods.pop(uid, None)
        if old is None:
            return
        z, pre, terminating, key = old
        if pre:
            entry = zone_entry(z)
            entry["left"] -= 1
            entry["terminating"] -= terminating
            events.write(f"{rfc3339(now, True)},{z},deleted,{key}\n")
            if entry["left"] == 0:
                entry["empty"] = rfc3339(now, True)
        else:
            namespace, name = key.split("/", 1)
            violation("deleted", {"namespace": namespace, "name": name})

    def on_list(items):
        # A list again (the watch expired, or the server restarted): what it no longer holds was deleted while
        # the watch was away, and is counted as deleted now.
        listed_uids = {pod["metadata"]["uid"] for pod in items}
        with lock:
            now = time.time()
            for uid in [uid for uid in pods if uid not in listed_uids]:
                gone(uid, now)
        for pod in items:
            seen(pod, "ADDED")
        with lock:
            for entry in zones.values():
                entry["initial"] = entry["initial"] or entry["left"]
        listed.set()
        print(f"sampler: {len(items)} pods on zone nodes, preemptable "
              + ", ".join(f"{z} {e['left']}" for z, e in sorted(zones.items())), flush=True)

    def watch():
        for kind, pod in kube.watch("/api/v1/pods", {"labelSelector": ZONE_LABEL}, on_list=on_list, stop=stop):
            seen(pod, kind)
    threading.Thread(target=watch, daemon=True).start()

    # what tidal tells about each zone over time: after the close the zone's status.drain only says it is
    # empty, so the estimate it held while draining is kept here, one line per change
    zone_log = open(os.path.join(args.out, "zones.jsonl"), "a", buffering=1)
    last_status: dict = {}

    def record_zone(zone):
        status = zone.get("status", {})
        state = {"drain": status.get("drain"), "open": status.get("open"), "draining": status.get("draining"),
                 "drainOnTrack": next((c for c in status.get("conditions", []) if c.get("type") == "DrainOnTrack"), None)}
        name = zone["metadata"]["name"]
        if last_status.get(name) != state:
            last_status[name] = state
            zone_log.write(json.dumps({"time": rfc3339(time.time(), True), "zone": name, **state}) + "\n")

    def watch_zones():
        for _, zone in kube.watch("/apis/tidal.dev/v1alpha1/revocablezones",
                                  on_list=lambda items: [record_zone(z) for z in items], stop=stop):
            record_zone(zone)
    threading.Thread(target=watch_zones, daemon=True).start()
    listed.wait()

    names = sorted(zones)
    samples_path = os.path.join(args.out, "samples.csv")
    samples = open(samples_path, "a", buffering=1)
    if samples.tell() == 0:
        samples.write("time,unix," + ",".join(f"{z}_left,{z}_terminating" for z in names)
                      + ",violations_evicted,violations_deleted,load1\n")
    while True:
        now = time.time()
        with lock:
            row = [rfc3339(now, True), f"{now:.3f}"]
            for z in names:
                row += [str(zones[z]["left"]), str(zones[z]["terminating"])]
            row += [str(violations["evicted"]), str(violations["deleted"])]
        with open("/proc/loadavg") as f:
            row.append(f.read().split()[0])
            summary = {"time": rfc3339(now, True), "zones": zones, "violations": violations}
            text = json.dumps(summary, indent=1)
        samples.write(",".join(row) + "\n")
        tmp = os.path.join(args.out, "summary.json.tmp")
        with open(tmp, "w") as f:
            f.write(text)
        os.replace(tmp, os.path.join(args.out, "summary.json"))
        if stop.wait(max(0.0, args.interval - (time.time() - now))):
            break


if __name__ == "__main__":
    main()
