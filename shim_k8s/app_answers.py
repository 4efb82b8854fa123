"""What the shim does when the core answers a new application (shim_k8s.outbox calls it as the answer
arrives): a rejection forgets the application at once (its asks' refusals may follow) and fails its
pending pods, as YuniKorn's shim does; an acceptance creates a gang's placeholders and asks again for
the pods whose ask the core refused before it knew the application."""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from typing import Any, Protocol

import structlog

from shim_k8s.api.objects import Obj
from shim_k8s.gangs import Gangs
from shim_k8s.outbox import Answered
from shim_k8s.shim_state import AppGang, ShimBase

log = structlog.get_logger("pykorn.k8s")


class ShimForAppAnswers(ShimBase, Protocol):
    """What of the shim an answer's handling uses."""

    @property
    def gangs(self) -> Gangs: ...
    async def fail_application(self, app_id: str, reason: str, message: str) -> None: ...


def on_answer(
    shim: ShimForAppAnswers,
    pod: Obj,
    app_id: str,
    gang: AppGang | None,
    ask_again: Callable[[set[str]], Coroutine[Any, Any, None]],
) -> Answered:
    """The handler of the core's answer to `app_id`, sent for its first pod `pod`."""

    def answered(refused: str | None) -> Coroutine[Any, Any, None] | None:
        reask = shim.state.ledger.answered(app_id)  # asks it refused before it knew the application
        if refused is not None:
            # The application is forgotten, so that a later pod of the same ID is a new submission.
            shim.state.apps.discard(app_id)
            shim.state.gangs.pop(app_id, None)
            log.warning("application rejected", applicationID=app_id, reason=refused)
            return shim.fail_application(app_id, "ApplicationRejected", refused)
        placeholders = gang if gang is not None and not gang.placeholders_exist else None
        if not reask and placeholders is None:
            return None  # accepted, nothing to do: no task for it (one per pod, for batch users)

        async def after() -> None:
            if placeholders is not None:
                await shim.gangs.create_placeholders(pod, app_id, placeholders)
            if reask:
                await ask_again(reask)

        return after()

    return answered
