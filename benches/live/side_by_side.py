#!/usr/bin/env python3
"""The table of a side-by-side run (side-by-side.sh): side_by_side.py RUN_DIRECTORY."""

from __future__ import annotations

import csv
import re
import statistics
import sys
from pathlib import Path


def histogram_mean(text: str, name: str) -> tuple[float, int] | None:
    """(mean seconds, observations) of a Prometheus histogram, its series summed."""
    total = count = 0.0
    for line in text.splitlines():
        match = re.match(rf"^{name}_(sum|count)(\{{[^}}]*\}})? ([0-9.eE+-]+)$", line)
        if match:
            if match.group(1) == "sum":
                total += float(match.group(3))
            else:
                count += float(match.group(3))
    return (total / count, int(count)) if count else None


def span(values: list[float], unit: str = "") -> str:
    return f"{min(values):g}–{max(values):g}{unit} (median {statistics.median(values):g}{unit})"


def main() -> None:
    run = Path(sys.argv[1])
    rows = list(csv.DictReader(open(run / "cold.csv")))
    seconds: dict[str, dict[int, float]] = {}
    peak: dict[str, list[float]] = {}
    for row in rows:
        seconds.setdefault(row["who"], {})[int(row["pair"])] = float(row["seconds"])
        peak.setdefault(row["who"], []).append(int(row["peak_kb"]) / 1024)
    tidal, descheduler, floor = (seconds.get(w, {}) for w in ("tidal", "descheduler", "floor"))
    pairs = sorted(set(tidal) & set(descheduler))
    if not pairs:
        sys.exit(f"{run}: no complete pair in cold.csv")
    ratios = [tidal[p] / descheduler[p] for p in pairs]
    over_floor = [tidal[p] / floor[p] for p in pairs if p in floor]
    print(f"{len(pairs)} interleaved pairs ({run.name})\n")
    print("| measure | descheduler | tidal | ratio |")
    print("| --- | --- | --- | --- |")
    print(
        f"| cold start: list everything, plan lowNodeUtilization once | {span(list(descheduler.values()), ' s')} "
        f"| {span(list(tidal.values()), ' s')} | median of pairs {statistics.median(ratios):.2f} "
        f"({min(ratios):.2f}–{max(ratios):.2f}) |"
    )
    d_peak, t_peak = statistics.median(peak["descheduler"]), statistics.median(peak["tidal"])
    print(
        f"| peak RSS of that run | {span([round(v) for v in peak['descheduler']], ' MiB')} "
        f"| {span([round(v) for v in peak['tidal']], ' MiB')} | {t_peak / d_peak:.2f} |"
    )
    metrics = {name: (run / f"{name}.metrics").read_text() for name in ("descheduler", "tidal") if (run / f"{name}.metrics").exists()}
    loop = histogram_mean(metrics.get("descheduler", ""), "descheduler_loop_duration_seconds")
    cycle = histogram_mean(metrics.get("tidal", ""), "tidal_cycle_duration_seconds")
    plan = histogram_mean(metrics.get("tidal", ""), "tidal_plan_duration_seconds")
    if loop and cycle and plan:
        print(
            f"| steady: loop mean (descheduler) and cycle mean, plan mean (tidal) | {loop[0] * 1000:.1f} ms ({loop[1]} loops) "
            f"| cycle {cycle[0] * 1000:.1f} ms, plan {plan[0] * 1000:.1f} ms ({cycle[1]} cycles) "
            f"| {loop[0] / cycle[0]:.1f}× (cycle), {loop[0] / plan[0]:.1f}× (plan) |"
        )
    rss = {}
    if (run / "steady-rss.txt").exists():
        for line in (run / "steady-rss.txt").read_text().splitlines():
            who, kb = line.split()
            rss[who] = int(kb) / 1024
    if "descheduler" in rss and "tidal" in rss:
        print(f"| RSS once synced | {rss['descheduler']:.0f} MiB | {rss['tidal']:.0f} MiB | {rss['tidal'] / rss['descheduler']:.2f} |")
    if floor:
        print(
            f"\nFloor (benches/list_floor.rs: the same watch-lists through the same client, read and thrown away): {span(list(floor.values()), ' s')}; "
            f"tidal's cold start over the floor, per pair: median {statistics.median(over_floor):.2f} "
            f"({min(over_floor):.2f}–{max(over_floor):.2f})"
        )


if __name__ == "__main__":
    main()
