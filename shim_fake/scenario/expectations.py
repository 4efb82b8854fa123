"""Check a scenario's expectations against what was recorded."""

from __future__ import annotations

from dataclasses import dataclass
from typing import assert_never

from shim_fake.scenario.model import Expectation, ExpectKind, Task, TaskState
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
    kind = e.kind
    if kind == ExpectKind.EVERY_TASK_RAN:
        missing = [t.ident for t in rec.tasks if not t.ran]
        if missing:
            return Outcome(e, False, f"{len(missing)} task(s) never ran: {', '.join(missing[:5])}")
        return Outcome(e, True, f"all {len(rec.tasks)} tasks ran")
    if kind == ExpectKind.EVERY_TASK_FINISHED:
        missing = [t.ident for t in rec.tasks if t.state != TaskState.DONE]
        return Outcome(
            e, not missing, f"{len(missing)} task(s) did not finish" if missing else "all finished"
        )
    if kind in (ExpectKind.QUEUE_USAGE_AT_MOST, ExpectKind.QUEUE_USAGE_AT_LEAST):
        return _usage(e, rec)
    if kind == ExpectKind.PREEMPTED:
        count = sum(t.preemptions for t in _select(rec, e))
        wanted = e.whole("at_least")
        wanted = 1 if wanted is None else wanted
        return Outcome(e, count >= wanted, f"{count} preemption(s) of {_what(e)}")
    if kind == ExpectKind.NOT_PREEMPTED:
        count = sum(t.preemptions for t in _select(rec, e))
        return Outcome(e, count == 0, f"{count} preemption(s) of {_what(e)}")
    if kind == ExpectKind.WAIT_P99_AT_MOST:
        queue = e.text("queue")
        p99 = percentile(rec.waits.get(queue, []), 0.99)
        limit = e.seconds("seconds") or 0.0
        if p99 is None:
            return Outcome(e, False, f"no allocation in {queue}")
        return Outcome(e, p99 <= limit, f"wait p99 in {queue} was {p99:.2f}s (limit {limit:g}s)")
    if kind == ExpectKind.NO_REJECTIONS:
        return Outcome(e, not rec.rejections, f"{len(rec.rejections)} rejection(s)")
    if kind == ExpectKind.GANG_RAN_WHOLE:
        return _gang_ran_whole(e, rec)
    assert_never(kind)  # every kind is checked above (mypy holds it so)


def _usage(e: Expectation, rec: Recording) -> Outcome:
    queue, limit = e.text("queue"), e.whole("value") or 0
    resource = e.text("resource", rec.resource)
    if resource != rec.resource:
        return Outcome(e, False, f"usage is recorded for {rec.resource}; set report.resource: {resource}")
    after = e.seconds("after") or 0.0
    before = e.seconds("before")
    values = rec.usage_of(queue, after, before)
    window = f"after {after:g}s" + (f" and before {before:g}s" if before is not None else "")
    if not values:
        return Outcome(e, False, f"no samples of {queue} {window}")
    if e.kind == ExpectKind.QUEUE_USAGE_AT_MOST:
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
        f"{queue} dropped to {fmt_quantity(resource, low)} {window} (floor {fmt_quantity(resource, limit)})",
    )


def _gang_ran_whole(e: Expectation, rec: Recording) -> Outcome:
    """Every placeholder of the gang was replaced by a real task (none timed out or was preempted),
    and every real task of the application ran."""
    app = e.text("app")
    placeholders = [t for t in rec.placeholders if t.app.app_id == app]
    real = [t for t in rec.tasks if t.app.app_id == app]
    if not placeholders:
        return Outcome(e, False, f"application {app} had no placeholders")
    not_replaced = [t.name for t in placeholders if not t.replaced]
    never_ran = [t.name for t in real if not t.ran]
    met = not not_replaced and not never_ran
    detail = (
        f"{len(placeholders) - len(not_replaced)} of {len(placeholders)} placeholders replaced, "
        f"{len(real) - len(never_ran)} of {len(real)} real tasks ran"
    )
    return Outcome(e, met, detail)


def _select(rec: Recording, e: Expectation) -> list[Task]:
    if "task" in e.params:
        return [t for t in rec.tasks if t.ident == e.params["task"]]
    if "app" in e.params:
        return [t for t in rec.tasks if t.app.app_id == e.params["app"]]
    return list(rec.tasks)


def _what(e: Expectation) -> str:
    return e.text("task") or e.text("app") or "any task"
