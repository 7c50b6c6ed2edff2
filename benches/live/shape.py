"""The cluster the live drain run measures, as data: how many nodes and pods, which zones, their preemptable
jobs. Every script reads it from here, so the populator, the sampler and compare.py agree on names and counts.

At scale 1: 5,000 nodes of 30 pods (150,000 Running pods); three revocable zones
  rz1  500 nodes, 6,304 one-pod jobs (each pod its own ReplicaSet), grace 30 s, drainBefore auto, closes at T
  rz3  200 nodes, 988 one-pod jobs + 40 PodGroups of 25 pods (owned by the PodGroup alone, jdb-max-unavailable
       20%), grace 20 s, drainBefore auto, closes at T
  rz2  500 nodes, 3,837 one-pod jobs, grace 30 s, drainBefore 10m, closes at T + 2 min
Every other pod, zone nodes included, is not preemptable. A smaller scale shrinks every count."""

from __future__ import annotations

PODS_PER_NODE = 30
GROUP_SIZE = 25
# Marks every pod on a zone node with its zone, and the preemptable ones, so that the kubelet stand-in and
# the sampler watch those ~36,000 pods only, not all 150,000.
ZONE_LABEL = "live.tidal.dev/zone"
PREEMPTABLE_LABEL = "live.tidal.dev/preemptable"


def scaled(count: int, scale: float, least: int = 0) -> int:
    return max(least, round(count * scale)) if count else 0


def shape(scale: float = 1.0) -> dict:
    zones = [
        # name, nodes, one-pod jobs, PodGroups of GROUP_SIZE, grace, drainBefore, close offset (s)
        ("rz1", 500, 6304, 0, 30, "auto", 0),
        ("rz3", 200, 988, 40, 20, "auto", 0),
        ("rz2", 500, 3837, 0, 30, "10m", 120),
    ]
    out = {"scale": scale, "nodes": scaled(5000, scale, 60), "namespaces": scaled(200, scale, 10),
           "podsPerNode": PODS_PER_NODE, "groupSize": GROUP_SIZE, "zones": []}
    first = 0
    for name, nodes, singles, groups, grace, drain_before, offset in zones:
        n = scaled(nodes, scale, 2)
        out["zones"].append({
            "name": name, "firstNode": first, "nodes": n,
            "singles": scaled(singles, scale, 1), "groups": scaled(groups, scale, 1 if groups else 0),
            "grace": grace, "drainBefore": drain_before, "closeOffset": offset,
        })
        first += n
    for zone in out["zones"]:
        zone["preemptable"] = zone["singles"] + zone["groups"] * GROUP_SIZE
        if zone["preemptable"] > zone["nodes"] * PODS_PER_NODE:
            raise ValueError(f"zone {zone['name']}: more preemptable pods than pod slots")
    out["pods"] = out["nodes"] * PODS_PER_NODE
    return out


def node_name(index: int) -> str:
    return f"node-{index:04d}"
