#!/usr/bin/env python3
"""Reads what run-drain.sh collected in a run's folder and prints, per zone: when its drain started, what
`tidal timeline` predicted for its empty instant, when it was actually empty (the sampler's last deletion),
its close, the margin kept, the prediction's error as a share of the drain's length, the preemptable pods left
at the close, and the DrainAtRisk Warning events about it; then those events' messages, the DrainStarted
messages, and each zone's status.drain as its drain started, as last written while pods were left,
and at the end.

  compare.py RUN_DIR [RUN_DIR ...]"""

from __future__ import annotations

import csv
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from kubeclient import parse_time, rfc3339  # noqa: E402


def load(run: str, name: str, default=None):
    path = os.path.join(run, name)
    if not os.path.exists(path):
        return default
    with open(path) as f:
        return json.load(f)


def hms(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    sign = "-" if seconds < 0 else ""
    seconds = abs(seconds)
    minutes, rest = divmod(seconds, 60)
    return f"{sign}{int(minutes)}m{rest:04.1f}s" if minutes else f"{sign}{rest:.1f}s"


def clock(seconds: float | None) -> str:
    return rfc3339(seconds, True)[11:-1] if seconds is not None else "-"


def event_time(event: dict) -> float:
    for field in ("eventTime", "deprecatedLastTimestamp", "deprecatedFirstTimestamp"):
        if event.get(field):
            return parse_time(event[field])
    return parse_time(event["metadata"]["creationTimestamp"])


def table(rows: list[list[str]]) -> str:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def evictions_audited(run: str) -> str | None:
    """What the API server's audit log says of the evictions sent: how many, their answers, and the pods
    evicted more than once (answered 2xx more than once)."""
    path = os.path.join(run, "audit.log")
    if not os.path.exists(path):
        return None
    codes: dict[int, int] = {}
    granted: dict[str, int] = {}
    sent = 0
    with open(path) as f:
        for line in f:
            try:
                event = json.loads(line)
            except ValueError:
                continue
            ref = event.get("objectRef") or {}
            if ref.get("subresource") != "eviction" or event.get("stage") != "ResponseComplete":
                continue
            sent += 1
            code = (event.get("responseStatus") or {}).get("code", 0)
            codes[code] = codes.get(code, 0) + 1
            if 200 <= code < 300:
                key = f"{ref.get('namespace')}/{ref.get('name')}"
                granted[key] = granted.get(key, 0) + 1
    twice = sorted(k for k, n in granted.items() if n > 1)
    answers = ", ".join(f"{code}: {n}" for code, n in sorted(codes.items()))
    return (f"evictions sent (audit log): {sent} ({answers}); pods evicted: {len(granted)}, more than once: "
            f"{len(twice)}" + (f" ({', '.join(twice[:5])})" if twice else ""))


def report(run: str) -> str:
    meta = load(run, "run.json", {})
    timeline = load(run, "timeline.json", {})
    zones = {z["metadata"]["name"]: z for z in load(run, "zones.json", {"items": []})["items"]}
    events = [e for e in load(run, "events.json", {"items": []})["items"]
              if e.get("regarding", {}).get("kind") == "RevocableZone"]
    sampler = load(run, os.path.join("sampler", "summary.json"), {"zones": {}, "violations": {}})
    # the status tidal wrote while a zone drained: once empty, status.drain only says so
    first_draining: dict[str, dict] = {}
    last_with_pods: dict[str, dict] = {}
    zones_log = os.path.join(run, "sampler", "zones.jsonl")
    closes = {z["name"]: parse_time(z["close"]) for z in meta.get("zones", [])}
    if os.path.exists(zones_log):
        with open(zones_log) as f:
            for line in f:
                entry = json.loads(line)
                name, drain = entry["zone"], entry.get("drain") or {}
                if name not in closes or parse_time(entry["time"]) >= closes[name]:
                    continue
                if entry.get("draining") and name not in first_draining:
                    first_draining[name] = entry
                if drain.get("remainingPods"):
                    last_with_pods[name] = entry
    deletions: dict[str, list[float]] = {}
    events_csv = os.path.join(run, "sampler", "events.csv")
    if os.path.exists(events_csv):
        with open(events_csv) as f:
            for row in csv.DictReader(f):
                if row["what"] == "deleted":
                    deletions.setdefault(row["zone"], []).append(parse_time(row["time"]))

    out = [f"run {os.path.basename(os.path.normpath(run))}: {meta.get('variant', '?')}, scale {meta.get('scale', '?')}, "
           f"{meta.get('tidalVersion', 'tidal ?')}, scripts at {meta.get('commit', '?')}, populate {meta.get('populateSeconds', '?')} s, "
           f"timeline at {meta.get('timelineAt', '-')} took {meta.get('timelineSeconds', '?')} s"]
    if meta.get("kill"):
        k = meta["kill"]
        out.append(f"leader {k.get('identity')} killed (SIGKILL) at {k.get('at')}; lease afterwards: holder "
                   f"{k.get('holderAfter', '?')}, acquired {k.get('acquiredAfter', '?')}, transitions {k.get('transitions', '?')}")
    for fault in meta.get("faults") or []:
        out.append(f"{fault.get('what')} at {fault.get('at')}: {fault.get('detail')}")
    audit = evictions_audited(run)
    if audit:
        out.append(audit)
    rows = [["zone", "drain start", "timeline empty", "actual empty", "close", "margin kept", "pred. error",
             "left at close", "DrainAtRisk"]]
    at_risk_lines, started_lines, status_lines = [], [], []
    for spec in meta.get("zones", []):
        name = spec["name"]
        close = parse_time(spec["close"])
        zone_events = [e for e in events if e["regarding"].get("name") == name]
        started = [e for e in zone_events if e.get("reason") == "DrainStarted"]
        risks = [e for e in zone_events if e.get("reason") == "DrainAtRisk"]
        status = zones.get(name, {}).get("status", {})
        drain = status.get("drain", {})
        start, source = None, ""
        if started:
            start, source = min(event_time(e) for e in started), "event"
        elif drain.get("startedAt"):
            start, source = parse_time(drain["startedAt"]), "status"
        elif (first_draining.get(name, {}).get("drain") or {}).get("startedAt"):
            start, source = parse_time(first_draining[name]["drain"]["startedAt"]), "status"
        elif spec.get("drainBefore", "auto") != "auto":
            lead = spec["drainBefore"]
            unit = {"s": 1, "m": 60, "h": 3600}[lead[-1]]
            start, source = close - float(lead[:-1]) * unit, "fixed"
        first = sampler["zones"].get(name, {}).get("firstEviction")
        predicted = None
        for line in timeline.get("drains", []):
            if line["zone"] == name and line.get("close") and abs(parse_time(line["close"]) - close) < 2:
                predicted = parse_time(line["expectedEmptyAt"]) if line.get("expectedEmptyAt") else None
        empty_text = sampler["zones"].get(name, {}).get("empty")
        empty = parse_time(empty_text) if empty_text else None
        initial = sampler["zones"].get(name, {}).get("initial", 0)
        left = initial - sum(1 for t in deletions.get(name, []) if t < close)
        error = None
        if predicted is not None and empty is not None and start is not None and empty > start:
            error = (predicted - empty) / (empty - start) * 100
        rows.append([
            name,
            f"{clock(start)} ({source})" + (f", 1st eviction {clock(parse_time(first))}" if first else ""),
            clock(predicted), clock(empty), clock(close),
            hms(close - empty) if empty is not None else "not empty",
            f"{error:+.1f}% ({hms(predicted - empty)})" if error is not None else "-",
            f"{left} of {initial}", str(len(risks)),
        ])
        for e in sorted(risks, key=event_time):
            count = (e.get("series") or {}).get("count", 1)
            at_risk_lines.append(f"  {name} {clock(event_time(e))} (x{count}): {e.get('note', '')}")
        for e in sorted(started, key=event_time):
            started_lines.append(f"  {name} {clock(event_time(e))}: {e.get('note', '')}")
        condition = next((c for c in status.get("conditions", []) if c.get("type") == "DrainOnTrack"), None)
        for what, entry in (("as the drain started", first_draining.get(name)),
                            ("last written with pods left", last_with_pods.get(name))):
            if entry:
                track = entry.get("drainOnTrack") or {}
                status_lines.append(f"  {name}, {what} ({clock(parse_time(entry['time']))}): drain "
                                    f"{json.dumps(entry['drain'], sort_keys=True)}")
                status_lines.append(f"    DrainOnTrack {track.get('status')}/{track.get('reason')}: {track.get('message')}")
        status_lines.append(f"  {name}, final: drain {json.dumps(drain, sort_keys=True)}")
        if condition:
            status_lines.append(f"    DrainOnTrack {condition.get('status')}/{condition.get('reason')}: {condition.get('message')}")
    out.append(table(rows))
    out.append("(times UTC; close = first closed second; margin kept = close - actual empty; pred. error = "
               "(timeline empty - actual empty) / (actual empty - drain start))")
    violations = sampler.get("violations", {})
    out.append(f"pods on zone nodes that are not preemptable, evicted / deleted: {violations.get('evicted', 0)} / "
               f"{violations.get('deleted', 0)}")
    out.append("DrainAtRisk Warning events:" if at_risk_lines else "DrainAtRisk Warning events: none")
    out += at_risk_lines
    out.append("DrainStarted events:" if started_lines else "DrainStarted events: none")
    out += started_lines
    out.append("status.drain:")
    out += status_lines
    return "\n".join(out)


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    print("\n\n".join(report(run) for run in sys.argv[1:]))


if __name__ == "__main__":
    main()
