"""`--plot FILE.png`: a timeline of each queue's usage, its max dashed, preemptions marked, the part
gang placeholders hold hatched.

matplotlib is an optional extra (`pip install 'pykorn-scheduler[plot]'`); `make run` installs it.
"""

from __future__ import annotations

import math
from pathlib import Path

from shim_fake.scenario.recording import Recording
from shim_fake.scenario.units import GiB


class PlotUnavailable(RuntimeError):
    pass


def _scale(resource: str) -> tuple[float, str]:
    if resource == "memory":
        return GiB, "GiB"
    if resource == "vcore":
        return 1000, "cores"
    return 1, resource


def write_plot(rec: Recording, path: Path) -> None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as exc:
        raise PlotUnavailable("--plot needs matplotlib: pip install 'pykorn-scheduler[plot]'") from exc

    divisor, unit = _scale(rec.resource)
    times = [t for t, _ in rec.samples]
    fig, ax = plt.subplots(figsize=(11, 6), dpi=110)
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for i, queue in enumerate(plotted_queues(rec)):
        color = colors[i % len(colors)]
        usage = [u.get(queue, 0) / divisor for _, u in rec.samples]
        ax.step(times, usage, where="post", color=color, linewidth=1.8, label=f"{queue} usage")
        held = [h.get(queue, 0) / divisor for _, h in rec.placeholder_samples]
        if any(held):  # the part a gang's placeholders hold: room kept, no work running yet
            ax.fill_between(times, held, step="post", facecolor="none", edgecolor=color, hatch="//",
                            linewidth=0, label=f"{queue} placeholders")  # fmt: skip
        max_t, max_v = _max_series(rec, queue, divisor)
        if max_v and not all(math.isnan(v) for v in max_v):
            ax.step(
                max_t, max_v, where="post", color=color, linestyle="--", linewidth=1.2, label=f"{queue} max"
            )
        preempted = [e for e in rec.events if e["kind"] == "preempted" and _under(e["queue"], queue)]
        if preempted:
            px = [e["t"] for e in preempted]
            py = [_usage_at(rec, queue, t) / divisor for t in px]
            ax.scatter(px, py, marker="x", s=60, color=color, zorder=5, label=f"{queue} preemption")
    for event in rec.events:
        if event["kind"] == "config" and event["accepted"]:
            ax.axvline(event["t"], color="grey", linestyle=":", linewidth=1)
            ax.annotate("config change", (event["t"], ax.get_ylim()[1] * 0.97), fontsize=8, color="grey",
                        rotation=90, va="top", ha="right")  # fmt: skip
    ax.set_xlabel("scenario time (s)")
    ax.set_ylabel(f"{rec.resource} in use ({unit})")
    ax.set_title(f"{rec.scenario.name}: queue usage against max")
    ax.grid(True, alpha=0.3)
    ax.set_xlim(left=0, right=max(times[-1] if times else 1.0, 1.0))
    ax.set_ylim(bottom=0)
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, frameon=False)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    plt.close(fig)


def plotted_queues(rec: Recording) -> list[str]:
    """The queues under root, and deeper ones with a max of their own: a line each, no line hidden
    under an identical one (a leaf that is its parent's only child would draw over it)."""
    with_max = {
        q for _, limits in rec.limits_timeline for q, lim in limits.items() if rec.resource in lim.max
    }
    return [q for q in rec.queues if q.count(".") == 1 or q in with_max]


def _under(task_queue: str, queue: str) -> bool:
    return task_queue == queue or task_queue.startswith(queue + ".")


def _max_series(rec: Recording, queue: str, divisor: float) -> tuple[list[float], list[float]]:
    """The queue's max over time; NaN while it has none (matplotlib leaves a gap there)."""
    end = rec.samples[-1][0] if rec.samples else rec.end_time
    times: list[float] = []
    values: list[float] = []
    for at, limits in rec.limits_timeline:
        limit = limits.get(queue)
        value = limit.max.get(rec.resource) if limit is not None else None
        times.append(at)
        values.append(value / divisor if value is not None else math.nan)
    times.append(end)
    values.append(values[-1])
    return times, values


def _usage_at(rec: Recording, queue: str, t: float) -> float:
    value = 0
    for at, usage in rec.samples:
        if at > t:
            break
        value = usage.get(queue, 0)
    return value
