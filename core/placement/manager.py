"""Runs the placement rules in order; the first queue that exists (or may be created), is a leaf,
lets the user submit and is not draining wins. With no rules configured, `provided` without create
applies; when no rule places the application, `root.default` takes it if it exists."""

from __future__ import annotations

from dataclasses import dataclass

from core.config.schema import PlacementRuleConfig, RuleName
from core.config.validation import RECOVERY_QUEUE
from core.objects.queue import Queue, QueueState
from core.objects.queue_tree import QueueTree
from core.placement.rules import PlacementError, PlacementRequest, make_rule
from si.v1.tags import TAG_CREATE_FORCE

DEFAULT_QUEUE = "root.default"
# An application tag (YuniKorn's, si's AppTagCreateForce): "true" on an application recovered with
# running allocations; placed in the recovery queue when no rule places it, never refused.
_TRUE = frozenset({"1", "t", "T", "TRUE", "true", "True"})  # Go's strconv.ParseBool

__all__ = ["Placement", "PlacementError", "PlacementManager", "PlacementRequest"]


@dataclass(slots=True)  # not frozen: a frozen dataclass's __init__ costs 3x, and one is made per change
class Placement:
    queue_name: str
    create: bool  # the queue does not exist yet and must be created


class PlacementRefused(ValueError):
    pass


class PlacementManager:
    def __init__(self, rules: tuple[PlacementRuleConfig, ...]) -> None:
        configs = rules or (PlacementRuleConfig(name=RuleName.PROVIDED, create=False),)
        self.rules = [make_rule(cfg) for cfg in configs]

    def place(self, req: PlacementRequest, tree: QueueTree) -> Placement:
        """The queue for the application; PlacementRefused says why there is none.

        As YuniKorn's PlaceApplication: the configured rules in order, then its implicit recovery rule
        (an application recovered with running allocations, TAG_CREATE_FORCE, that no rule placed goes
        to the recovery queue, so what runs stays counted), and only then `root.default`. A rule that
        fails outright (an invalid generated name, a parent rule naming a leaf) refuses the application
        whatever its tags, as YuniKorn's does."""
        notes: list[str] = []
        for rule in self.rules:
            try:
                name = rule.place(req, tree, notes)
            except PlacementError as exc:
                raise PlacementRefused(
                    f"application {req.app_id} rejected by placement rule {rule.name}: {exc}"
                ) from None
            if name:
                placement = self._check(rule.name, name, req, tree, notes)
                if placement is not None:
                    return placement
        if _create_forced(req):
            return Placement(RECOVERY_QUEUE, create=tree.find(RECOVERY_QUEUE) is None)
        default = tree.find(DEFAULT_QUEUE)
        if default is not None:
            placement = self._check("default queue", DEFAULT_QUEUE, req, tree, notes)
            if placement is not None:
                return placement
        raise PlacementRefused(f"no placement rule placed application {req.app_id}: " + "; ".join(notes))

    @staticmethod
    def _check(
        rule: str, name: str, req: PlacementRequest, tree: QueueTree, notes: list[str]
    ) -> Placement | None:
        queue = tree.find(name)
        if queue is not None:
            reason = _refusal(queue, req)
            if reason:
                notes.append(f"{rule}: {reason}")
                return None
            return Placement(queue.full_name, create=False)
        ancestor = tree.deepest_existing(name)
        if not ancestor.allows_submit(req.user, req.groups):
            notes.append(f"{rule}: user {req.user!r} may not submit under {ancestor.full_name}")
            return None
        if ancestor.is_leaf:
            raise PlacementRefused(f"cannot create queue {name}: {ancestor.full_name} is a leaf queue")
        if ancestor.state != QueueState.ACTIVE:
            raise PlacementRefused(
                f"cannot create queue {name}: {ancestor.full_name} is {ancestor.state.value}"
            )
        return Placement(name, create=True)


def _create_forced(req: PlacementRequest) -> bool:
    """TAG_CREATE_FORCE set true, its key in any case (YuniKorn's IsAppCreationForced)."""
    return req.tag(TAG_CREATE_FORCE) in _TRUE


def _refusal(queue: Queue, req: PlacementRequest) -> str:
    if not queue.is_leaf:
        return f"{queue.full_name} is a parent queue"
    if not queue.allows_submit(req.user, req.groups):
        return f"user {req.user!r} may not submit to {queue.full_name} (submitacl)"
    if not queue.accepts_new_applications():
        return f"{queue.full_name} is {queue.state.value} and takes no new applications"
    return ""
