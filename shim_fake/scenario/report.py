"""The run's report: a dict for `--report FILE.json`, and a summary table for people."""

from __future__ import annotations

from typing import Any, TextIO

from shim_fake.scenario.expectations import Outcome
from shim_fake.scenario.recording import Recording
from shim_fake.scenario.units import fmt_quantity


def build_report(
    rec: Recording, outcomes: list[Outcome], speed: float, real_seconds: float
) -> dict[str, Any]:
    return {
        "scenario": rec.scenario.name,
        "description": rec.scenario.description,
        "speed": speed,
        "scenario_seconds": round(rec.end_time, 3),
        "real_seconds": round(real_seconds, 3),
        "resource": rec.resource,
        "tasks": rec.task_summary(),
        "gangs": rec.gang_summary(),
        "placements": rec.placements,
        "queues": {q: rec.queue_summary(q) for q in rec.queues},
        "expectations": [o.as_dict() for o in outcomes],
        "all_expectations_met": all(o.met for o in outcomes),
        "events": rec.events,
        "rejections": rec.rejections,
        "timeline": [
            {"t": round(t, 3), "usage": usage, "placeholders": held}
            for (t, usage), (_, held) in zip(rec.samples, rec.placeholder_samples, strict=True)
        ],
    }


def _limit(history: list[dict[str, int]], resource: str) -> str:
    """A limit as it was over the run: "16.0Gi", or "40.0Gi→16.0Gi" when a config change moved it."""
    values: list[str] = []
    for limits in history:
        text = fmt_quantity(resource, limits[resource]) if resource in limits else "-"
        if not values or values[-1] != text:
            values.append(text)
    return "→".join(values) if values else "-"


def _seconds(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}s"


def write_summary(report: dict[str, Any], out: TextIO) -> None:
    res = report["resource"]
    tasks = report["tasks"]
    out.write(
        f"\nscenario {report['scenario']}: {report['scenario_seconds']:.1f}s of scenario time at speed "
        f"{report['speed']:g} ({report['real_seconds']:.1f}s real)\n"
        f"tasks: {tasks['total']} total, {tasks['ran']} ran, {tasks['finished']} finished, "
        f"{tasks['preempted']} preempted, {tasks['lost_with_node']} lost with a node, "
        f"{tasks['never_ran']} never ran\n"
    )
    for app, gang in report["gangs"].items():
        out.write(
            f"gang {app}: {gang['placeholders']} placeholders, {gang['allocated']} allocated, "
            f"{gang['replaced']} replaced by real tasks\n"
        )
    out.write("\n")
    header = ("queue", "guaranteed", "max", f"usage min / mean / max ({res})", "allocs", "preempted",
              "wait p50", "wait p99")  # fmt: skip
    rows = [header]
    for name, q in report["queues"].items():
        usage = q["usage"]
        rows.append(
            (
                name,
                _limit(q["guaranteed_history"], res),
                _limit(q["max_history"], res),
                f"{fmt_quantity(res, usage['min'])} / {fmt_quantity(res, usage['mean'])} / "
                f"{fmt_quantity(res, usage['max'])}",
                str(q["allocations"]),
                str(q["preemptions"]),
                _seconds(q["wait_p50"]),
                _seconds(q["wait_p99"]),
            )
        )
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    for i, row in enumerate(rows):
        out.write(
            "  ".join(
                cell.ljust(widths[j]) if j == 0 else cell.rjust(widths[j]) for j, cell in enumerate(row)
            )
        )
        out.write("\n")
        if i == 0:
            out.write("  ".join("-" * w for w in widths) + "\n")
    if report["rejections"]:
        out.write(f"\n{len(report['rejections'])} rejection(s) from the core:\n")
        for r in report["rejections"][:10]:
            out.write(f"  t={r['t']:.1f}s {r['what']}: {r['reason']}\n")
    if report["expectations"]:
        met = sum(1 for e in report["expectations"] if e["met"])
        out.write(f"\nexpectations: {met} of {len(report['expectations'])} met\n")
        for e in report["expectations"]:
            mark = "ok  " if e["met"] else "FAIL"
            out.write(f"  {mark} {e['expect']} (line {e['line']}): {e['detail']}\n")
