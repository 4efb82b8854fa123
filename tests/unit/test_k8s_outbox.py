"""The shim's outbox (shim_k8s.outbox) against a client that records what it sends and answers when the
test says: a batch's new applications go in one request and are answered before any ask; a rejected
application's asks never go; and a release made while applications are on their way waits for them,
so no ask overtakes its application."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable

from shim_k8s.outbox import Answered, Outbox
from si.v1 import si_pb2


class Client:
    """Records ("apps", ids), ("asks", keys) and ("release", key); answers applications on `answer`."""

    def __init__(self) -> None:
        self.sent: list[tuple[str, list[str]]] = []
        self.lost: str | None = None
        self.outbox: Outbox | None = None
        self._changed = asyncio.Event()

    async def add_applications(self, *apps: si_pb2.AddApplicationRequest) -> None:
        self.sent.append(("apps", [a.applicationID for a in apps]))

    async def asks(self, items: Iterable[si_pb2.Allocation]) -> None:
        self.sent.append(("asks", [a.allocationKey for a in items]))

    async def release(self, app_id: str, key: str = "", partition: str = "", message: str = "") -> None:
        self.sent.append(("release", [key]))

    async def wait_for(self, check: Callable[[], bool], timeout: float | None = None, what: str = "") -> None:
        while not check():
            self._changed.clear()
            await self._changed.wait()

    def answer(self, accepted: Iterable[str] = (), rejected: Iterable[str] = ()) -> None:
        assert self.outbox is not None
        response = si_pb2.ApplicationResponse(
            accepted=[si_pb2.AcceptedApplication(applicationID=a) for a in accepted],
            rejected=[si_pb2.RejectedApplication(applicationID=a, reason="no queue") for a in rejected],
        )
        self.outbox.applications_answered(response)
        self._changed.set()


def _setup() -> tuple[Outbox, Client, list[tuple[str, str | None]]]:
    client = Client()
    outbox = Outbox(client)  # type: ignore[arg-type]
    client.outbox = outbox
    return outbox, client, []


def _app(app_id: str) -> si_pb2.AddApplicationRequest:
    return si_pb2.AddApplicationRequest(applicationID=app_id)


def _ask(app_id: str, key: str) -> si_pb2.Allocation:
    return si_pb2.Allocation(applicationID=app_id, allocationKey=key)


async def _until_sent(client: Client, count: int) -> None:
    while len(client.sent) < count:  # noqa: ASYNC110 - the outbox's steps, in this loop
        await asyncio.sleep(0)


async def test_a_batchs_applications_go_in_one_request_and_a_rejected_ones_asks_never_go() -> None:
    outbox, client, answers = _setup()

    def noting(app_id: str) -> Answered:
        async def answered(refused: str | None) -> None:
            answers.append((app_id, refused))

        return answered

    async def burst() -> None:
        async with outbox.batch():
            for app_id in ("a", "b", "lost"):
                await outbox.application(_app(app_id), noting(app_id))
                await outbox.ask(_ask(app_id, f"{app_id}-1"))

    sending = asyncio.create_task(burst())
    await _until_sent(client, 1)
    assert client.sent == [("apps", ["a", "b", "lost"])]  # and nothing else until they are answered
    client.answer(accepted=["a", "b"])
    await asyncio.sleep(0)
    assert len(client.sent) == 1  # "lost" not answered yet
    client.answer(rejected=["lost"])
    await sending
    assert client.sent == [("apps", ["a", "b", "lost"]), ("asks", ["a-1", "b-1"])]
    assert answers == [("a", None), ("b", None), ("lost", "no queue")]


async def test_a_release_made_while_applications_are_on_their_way_waits_for_them() -> None:
    outbox, client, _ = _setup()

    async def nothing(refused: str | None) -> None:
        return None

    async def burst() -> None:
        async with outbox.batch():
            await outbox.application(_app("a"), nothing)
            await outbox.ask(_ask("a", "a-1"))

    sending = asyncio.create_task(burst())
    await _until_sent(client, 1)
    releasing = asyncio.create_task(outbox.release("old", "old-1"))  # a decision's, meanwhile
    for _ in range(5):
        await asyncio.sleep(0)
    assert client.sent == [("apps", ["a"])]  # a-1 did not go ahead of its application's answer
    client.answer(accepted=["a"])
    await asyncio.gather(sending, releasing)
    assert client.sent == [("apps", ["a"]), ("asks", ["a-1"]), ("release", ["old-1"])]
