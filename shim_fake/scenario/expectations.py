"""Check a scenario's expectations against what was recorded."""

from __future__ import annotations

from dataclasses import dataclass

from shim_fake.scenario.model import Expectation
from shim_fake.scenario.recording import Recording, percentile
from shim_fake.scenario.units import fmt_quantity


@dataclass(frozen=True)
class Outcome:
    expectation: Expectation
    met: bool
    detail: str

    def as_dict(self) -> dict[str, object]:
        return {"expect": self.expectation.describe(), "met": self.met, "detail": self.detail,
                "line": self.expectation.line}  # fmt: skip


def check(expectations: tuple[Expectation, ...], rec: Recording) -> list[Outcome]:
    return [_check(e, rec) for e in expectations]


def _check(e: Expectation, rec: Recording) -> Outcome:
    p = e.params
    if e.kind == "every_task_ran":
        missing = [t.ident for t in rec.tasks if not t.ran]
        if missing:
            return Outcome(e, False, f"{len(missing)} task(s) never ran: {', '.join(missing[:5])}")
        return Outcome(e, True, f"all {len(rec.tasks)} tasks ran")
    if e.kind == "every_task_finished":
        missing = [t.ident for t in rec.tasks if t.state != "done"]
        return Outcome(
            e, not missing, f"{len(missing)} task(s) did not finish" if missing else "all finished"
        )
    if e.kind in ("queue_usage_at_most", "queue_usage_at_least"):
        queue, limit = str(p["queue"]), int(p["value"])  # type: ignore[call-overload]
        resource = str(p.get("resource") or rec.resource)
        if resource != rec.resource:
            return Outcome(e, False, f"usage is recorded for {rec.resource}; set report.resource: {resource}")
        after = float(p.get("after") or 0.0)  # type: ignore[arg-type]
        before = float(p["before"]) if p.get("before") is not None else None  # type: ignore[arg-type]
        values = rec.usage_of(queue, after, before)
        window = f"after {after:g}s" + (f" and before {before:g}s" if before is not None else "")
        if not values:
            return Outcome(e, False, f"no samples of {queue} {window}")
        if e.kind == "queue_usage_at_most":
            peak = max(values)
            return Outcome(
                e,
                peak <= limit,
                f"{queue} peaked at {fmt_quantity(resource, peak)} {window} "
                f"(limit {fmt_quantity(resource, limit)})",
            )
        low = min(values)
        return Outcome(
            e,
            low >= limit,
            f"{queue} dropped to {fmt_quantity(resource, low)} {window} "
            f"(floor {fmt_quantity(resource, limit)})",
        )
    if e.kind == "preempted":
        tasks = _select(rec, p)
        count = sum(t.preemptions for t in tasks)
        at_least = p.get("at_least")
        wanted = int(at_least) if at_least is not None else 1  # type: ignore[call-overload]
        return Outcome(e, count >= wanted, f"{count} preemption(s) of {_what(p)}")
    if e.kind == "not_preempted":
        count = sum(t.preemptions for t in _select(rec, p))
        return Outcome(e, count == 0, f"{count} preemption(s) of {_what(p)}")
    if e.kind == "wait_p99_at_most":
        queue = str(p["queue"])
        p99 = percentile(rec.waits.get(queue, []), 0.99)
        limit = float(p["seconds"])  # type: ignore[arg-type]
        if p99 is None:
            return Outcome(e, False, f"no allocation in {queue}")
        return Outcome(e, p99 <= limit, f"wait p99 in {queue} was {p99:.2f}s (limit {limit:g}s)")
    if e.kind == "no_rejections":
        return Outcome(e, not rec.rejections, f"{len(rec.rejections)} rejection(s)")
    return Outcome(e, False, f"unknown expectation {e.kind}")


def _select(rec: Recording, p: dict[str, object]) -> list:  # type: ignore[type-arg]
    if "task" in p:
        return [t for t in rec.tasks if t.ident == p["task"]]
    if "app" in p:
        return [t for t in rec.tasks if t.app.app_id == p["app"]]
    return list(rec.tasks)


def _what(p: dict[str, object]) -> str:
    return str(p.get("task") or p.get("app") or "any task")
