"""The applications of a partition: adding one (its queue from the placement rules, its user's
limits, its events), recording a refusal, and letting one go (retired when it ended, forgotten when it
is removed), with every count and event that follows. Functions of the partition they work on: it
holds the applications, these say how one comes and goes."""

from __future__ import annotations

from typing import TYPE_CHECKING

from core.events import ChangeType
from core.objects import app_usage, change_events, priority
from core.objects.application import Application
from core.objects.gang import Gang
from core.objects.rejected_apps import RejectedApplication
from core.placement.rules import PlacementRequest
from core.scheduler.partition.placement import leaf_for
from core.scheduler.rejection import Rejection, unknown_application
from core.ugm.resolver import resolve_groups

if TYPE_CHECKING:
    from core.scheduler.partition.partition import Partition


def add_application(
    part: Partition,
    app_id: str,
    queue_name: str,
    user: str,
    groups: tuple[str, ...],
    tags: dict[str, str],
    now: float,
    gang: Gang | None = None,
) -> Application:
    if not app_id:
        raise Rejection("application ID is empty")
    if app_id in part.applications:
        raise Rejection(f"application {app_id} already exists in partition {part.name}")
    if part.draining:
        raise Rejection(f"partition {part.name} was removed from the configuration; no new applications")
    groups = resolve_groups(part.config.user_group_resolver, user, groups)  # none sent: look them up
    queue = leaf_for(part, PlacementRequest(app_id, queue_name, user, groups, tags), now)
    app = Application(app_id, part.key, queue, user=user, groups=groups, tags=tags, now=now)
    part.applications[app_id] = app
    if gang is not None:
        app.gang = gang
        part.gangs.apps[app_id] = app
    queue.applications[app_id] = app
    part.lifecycle.counts.entered_state(queue.full_name, "new", counted=False)
    part.events.append(change_events.app_added(part.rm_id, app_id, queue.full_name, now))
    part.events.append(change_events.queue_app(part.rm_id, queue.full_name, app_id, ChangeType.ADD, now))
    for path in part.user_groups.arrived(app):  # a new user: YuniKorn sets the wildcard limits on it
        part.events.append(change_events.limit_changed(part.rm_id, False, user, path, ChangeType.SET, now))
    return app


def record_rejection(part: Partition, rejected: RejectedApplication, keep: bool = True) -> None:
    """Record APP_NEW and APP_REJECT (as YuniKorn, for any refusal, a duplicate ID's too), and keep
    why it was refused (the newest ones) unless `keep` is False."""
    if keep:
        part.rejected.add(rejected)
    part.events.append(
        change_events.app_added(part.rm_id, rejected.app_id, rejected.queue_name, rejected.time)
    )
    part.events.append(change_events.app_rejected(part.rm_id, rejected))


def application(part: Partition, app_id: str) -> Application:
    app = part.applications.get(app_id)
    if app is None:
        raise Rejection(unknown_application(app_id, part.name))
    return app


def retire(part: Partition, app: Application) -> None:
    """An application that ended: out of its queue, listed as completed until it expires (as upstream),
    and, if it ever ran, its usage logged as YuniKorn's YK_APP_SUMMARY."""
    forget_app(part, app)
    part.lifecycle.completed.append(app)
    if app.start_time is not None:
        when = {"submissionTime": app.submission_time, "startTime": app.start_time,
                "finishTime": app.finished_time, "user": app.user, "queue": app.queue.full_name,
                "state": app.state.value}  # fmt: skip
        text, fields = app_usage.summary(part.rm_id, app.app_id, when, app.usage)
        part.log.info(text, **fields)
    app.usage = None  # logged: a completed application keeps no usage, as YuniKorn cleans it up


def forget_app(part: Partition, app: Application) -> None:
    part.gangs.apps.pop(app.app_id, None)
    priority.remove_application(app)
    part.user_groups.forget(app)
    part.applications.pop(app.app_id, None)
    part.unlink_group(app, app.state_time)
    if app.queue.applications.pop(app.app_id, None) is not None:
        now = app.state_time
        queue = app.queue.full_name
        part.events.append(change_events.queue_app(part.rm_id, queue, app.app_id, ChangeType.REMOVE, now))
        part.events.append(change_events.app_removed(part.rm_id, app.app_id, now))
    app.queue.pending_apps.pop(app.app_id, None)
    removed = part.tree.remove_empty()
    for gone in removed:
        part.events.append(
            change_events.queue_removed(part.rm_id, gone.full_name, gone.managed, app.state_time)
        )
    if removed:
        part.usage_totals.forget_queues({q.full_name for q in part.tree})
