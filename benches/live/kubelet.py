#!/usr/bin/env python3
"""Stands in for the kubelets of the zone nodes: a pod that gets a deletionTimestamp (evicted) is deleted
for good (gracePeriodSeconds 0) once its grace period has passed since this process saw it terminating, as
a kubelet does when the container exits at the end of its grace period. Without it an evicted pod would stay
Terminating forever on a server with no kubelets.

Watches only the pods on zone nodes (label live.tidal.dev/zone): the others are never evicted in the
drain run, and watching all 150,000 would cost this process more than the run is worth.

  kubelet.py --kubeconfig K [--log FILE]      runs until SIGTERM/SIGINT"""

from __future__ import annotations

import argparse
import http.client
import heapq
import os
import queue
import signal
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from kubeclient import ApiError, Kube, parse_time, rfc3339  # noqa: E402
from shape import ZONE_LABEL  # noqa: E402


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--kubeconfig", required=True)
    parser.add_argument("--log", help="one line per deletion: when, pod, grace, seconds late, seconds the watch "
                                      "took to show the pod terminating")
    # A cluster has a kubelet per node, all deleting at once: the stand-in must not be what paces a drain.
    parser.add_argument("--workers", type=int, default=48)
    args = parser.parse_args()
    kube = Kube(args.kubeconfig)
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())

    due: list = []  # heap of (when, uid, namespace, name, grace)
    scheduled: set = set()
    lock = threading.Condition()
    work: queue.Queue = queue.Queue()
    log = open(args.log, "a", buffering=1) if args.log else None
    deleted = [0]

    def schedule(pod):
        meta = pod["metadata"]
        if not meta.get("deletionTimestamp") or meta["uid"] in scheduled:
            return
        grace = meta.get("deletionGracePeriodSeconds") or 0
        now = time.time()
        # the server sets deletionTimestamp to the eviction's instant plus the grace period (whole seconds)
        seen_after = now - (parse_time(meta["deletionTimestamp"]) - grace)
        with lock:
            scheduled.add(meta["uid"])
            heapq.heappush(due, (now + grace, meta["uid"], meta["namespace"], meta["name"], grace, seen_after))
            lock.notify()

    def clock():
        while not stop.is_set():
            with lock:
                while due and due[0][0] <= time.time():
                    work.put(heapq.heappop(due))
                wait = min(0.5, due[0][0] - time.time()) if due else 0.5
                lock.wait(max(wait, 0.01))

    def deleter():
        while True:
            item = work.get()
            if item is None:
                return
            when, uid, ns, name, grace, seen_after = item
            try:
                kube.request("DELETE", f"/api/v1/namespaces/{ns}/pods/{name}",
                             {"apiVersion": "v1", "kind": "DeleteOptions", "gracePeriodSeconds": 0,
                              "preconditions": {"uid": uid}})
            except ApiError as error:
                if error.status not in (404, 409):  # gone already, or a namesake: nothing left to do
                    print(f"delete {ns}/{name}: {error}", file=sys.stderr, flush=True)
                    continue
            except (OSError, http.client.HTTPException):
                # the server is away (restarting): the deletion is due again in a second
                with lock:
                    heapq.heappush(due, (time.time() + 1, uid, ns, name, grace, seen_after))
                continue
            deleted[0] += 1
            if log:
                log.write(f"{rfc3339(time.time(), True)},{ns}/{name},{grace},{time.time() - when:.3f},{seen_after:.1f}\n")

    threads = [threading.Thread(target=clock, daemon=True)]
    threads += [threading.Thread(target=deleter, daemon=True) for _ in range(args.workers)]
    for t in threads:
        t.start()

    def on_list(items):
        for pod in items:
            schedule(pod)
        print(f"kubelet stand-in: watching {len(items)} pods on zone nodes", flush=True)

    def watch():
        for kind, pod in kube.watch("/api/v1/pods", {"labelSelector": ZONE_LABEL}, on_list=on_list, stop=stop):
            if kind in ("ADDED", "MODIFIED"):
                schedule(pod)
            elif kind == "DELETED":
                scheduled.discard(pod["metadata"]["uid"])
    threading.Thread(target=watch, daemon=True).start()
    stop.wait()
    print(f"kubelet stand-in: {deleted[0]} pods deleted", flush=True)


if __name__ == "__main__":
    main()
