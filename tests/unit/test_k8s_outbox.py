"""The shim's outbox (shim_k8s.outbox) against a client that records what it sends: a batch's new
applications go in one request and its asks right after, without waiting for the core's answer; each
answer is acted on as it arrives (a rejected application remembered, so its asks' refusals are
expected); a release goes after the asks gathered before it."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine, Iterable
from typing import Any

from shim_k8s.outbox import REFUSED_KEPT, Answered, Outbox
from si.v1 import si_pb2


class Client:
    """Records ("apps", ids), ("asks", keys) and ("release", key)."""

    def __init__(self) -> None:
        self.sent: list[tuple[str, list[str]]] = []
        self.lost: str | None = None

    async def add_applications(self, *apps: si_pb2.AddApplicationRequest) -> None:
        self.sent.append(("apps", [a.applicationID for a in apps]))

    async def asks(self, items: Iterable[si_pb2.Allocation]) -> None:
        self.sent.append(("asks", [a.allocationKey for a in items]))

    async def release(self, app_id: str, key: str = "", partition: str = "", message: str = "") -> None:
        self.sent.append(("release", [key]))


def _response(accepted: Iterable[str] = (), rejected: Iterable[str] = ()) -> si_pb2.ApplicationResponse:
    return si_pb2.ApplicationResponse(
        accepted=[si_pb2.AcceptedApplication(applicationID=a) for a in accepted],
        rejected=[si_pb2.RejectedApplication(applicationID=a, reason="no queue") for a in rejected],
    )


def _setup() -> tuple[Outbox, Client, list[Coroutine[Any, Any, None]]]:
    client = Client()
    spawned: list[Coroutine[Any, Any, None]] = []
    outbox = Outbox(client, spawned.append)  # type: ignore[arg-type]
    return outbox, client, spawned


def _app(app_id: str) -> si_pb2.AddApplicationRequest:
    return si_pb2.AddApplicationRequest(applicationID=app_id)


def _ask(app_id: str, key: str) -> si_pb2.Allocation:
    return si_pb2.Allocation(applicationID=app_id, allocationKey=key)


def _noting(answers: list[tuple[str, str | None]], app_id: str) -> Answered:
    """Notes the answer when it comes; has nothing to run after it."""

    def answered(refused: str | None) -> None:
        answers.append((app_id, refused))

    return answered


async def test_a_batchs_applications_and_then_its_asks_go_at_once_and_answers_are_acted_on_as_they_come() -> (
    None
):
    outbox, client, spawned = _setup()
    answers: list[tuple[str, str | None]] = []
    async with outbox.batch():
        for app_id in ("a", "b", "lost"):
            await outbox.application(_app(app_id), _noting(answers, app_id))
            await outbox.ask(_ask(app_id, f"{app_id}-1"))
        assert client.sent == []  # gathered until the batch ends
    assert client.sent == [("apps", ["a", "b", "lost"]), ("asks", ["a-1", "b-1", "lost-1"])]
    outbox.applications_answered(_response(accepted=["b"]))
    outbox.applications_answered(_response(accepted=["a"], rejected=["lost"]))
    outbox.applications_answered(_response(accepted=["a"]))  # answered twice: acted on once
    assert answers == [("b", None), ("a", None), ("lost", "no queue")]  # as each answer came
    assert outbox.refused == {"lost": "no queue"} and spawned == []  # nothing to run after them


async def test_a_new_submission_of_a_rejected_id_is_no_longer_counted_refused() -> None:
    outbox, client, _ = _setup()
    answers: list[tuple[str, str | None]] = []
    await outbox.application(_app("x"), _noting(answers, "x"))
    outbox.applications_answered(_response(rejected=["x"]))
    assert "x" in outbox.refused
    await outbox.application(_app("x"), _noting(answers, "x"))
    assert "x" not in outbox.refused and client.sent == [("apps", ["x"]), ("apps", ["x"])]
    assert answers == [("x", "no queue")]  # the second is not answered yet


async def test_the_rejected_applications_remembered_are_bounded_oldest_first() -> None:
    outbox, _, spawned = _setup()
    ids = [f"r-{i}" for i in range(REFUSED_KEPT + 5)]
    async with outbox.batch():
        for app_id in ids:
            await outbox.application(_app(app_id), lambda refused: None)
    outbox.applications_answered(_response(rejected=[*ids, "never-sent"]))
    assert len(outbox.refused) == REFUSED_KEPT and "never-sent" not in outbox.refused
    assert "r-4" not in outbox.refused and "r-5" in outbox.refused and ids[-1] in outbox.refused
    assert spawned == [] and outbox.waiting == 0
    outbox.clear()  # a new core: it rejected none of them
    assert outbox.refused == {}


async def test_a_release_goes_after_the_asks_gathered_before_it() -> None:
    outbox, client, _ = _setup()

    def nothing(refused: str | None) -> None:
        return None

    async with outbox.batch():
        await outbox.application(_app("a"), nothing)
        await outbox.ask(_ask("a", "a-1"))
        await outbox.release("a", "a-1")  # the pod went at once: its ask goes first, then the release
    assert client.sent == [("apps", ["a"]), ("asks", ["a-1"]), ("release", ["a-1"])]


async def test_clear_forgets_the_answers_awaited() -> None:
    outbox, _, spawned = _setup()
    answers: list[tuple[str, str | None]] = []
    await outbox.application(_app("a"), _noting(answers, "a"))
    outbox.clear()  # the core went away: the re-sync sends the application again
    outbox.applications_answered(_response(accepted=["a"]))
    assert spawned == [] and answers == []


async def test_what_an_answer_returns_runs_beside_the_loop_not_in_the_reader() -> None:
    # The client calls applications_answered from its reader: what follows an answer (a gang's
    # placeholders, failing a rejected application's pods) must not block it.
    outbox, _, spawned = _setup()
    gate = asyncio.Event()
    ran: list[str] = []

    async def placeholders() -> None:
        await gate.wait()
        ran.append("placeholders")

    await outbox.application(_app("a"), lambda refused: placeholders())
    outbox.applications_answered(_response(accepted=["a"]))
    assert len(spawned) == 1 and ran == []
    gate.set()
    await spawned[0]
    assert ran == ["placeholders"]
