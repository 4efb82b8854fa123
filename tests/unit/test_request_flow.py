"""The shim's bound on requests in flight (shim_k8s.api.request_flow.InFlight): at most its size at
once, the others served in the order they came, and a waiter that gives up never keeps a slot."""

from __future__ import annotations

import asyncio

import pytest

from shim_k8s.api.request_flow import InFlight


async def test_at_most_its_size_at_once_and_the_rest_in_the_order_they_came() -> None:
    slots = InFlight(2)
    assert slots.take_now() and slots.take_now()
    assert not slots.take_now()  # both taken
    order: list[int] = []

    async def one(i: int) -> None:
        await slots.take()
        order.append(i)

    waiting = [asyncio.create_task(one(i)) for i in range(3)]
    await asyncio.sleep(0)
    assert order == []
    slots.give()
    await asyncio.sleep(0)
    assert order == [0]  # one slot back: the first waiter, and only it
    slots.give()
    slots.give()
    await asyncio.gather(*waiting)
    assert order == [0, 1, 2]
    assert slots.free == 0 and not slots.take_now()  # three taken of the three given back


async def test_a_newcomer_does_not_pass_those_waiting() -> None:
    slots = InFlight(1)
    assert slots.take_now()
    waiter = asyncio.create_task(slots.take())
    await asyncio.sleep(0)
    slots.give()  # handed to the waiter, not left free
    assert not slots.take_now()
    await waiter
    slots.give()
    assert slots.take_now()


async def test_a_waiter_cancelled_leaves_the_queue_and_keeps_no_slot() -> None:
    slots = InFlight(1)
    assert slots.take_now()
    gone = asyncio.create_task(slots.take())
    stays = asyncio.create_task(slots.take())
    await asyncio.sleep(0)
    gone.cancel()
    with pytest.raises(asyncio.CancelledError):
        await gone
    slots.give()
    await asyncio.wait_for(stays, 1.0)  # the slot went past the cancelled one
    slots.give()
    assert slots.free == 1


async def test_a_waiter_cancelled_just_as_it_was_handed_a_slot_passes_it_on() -> None:
    slots = InFlight(1)
    assert slots.take_now()
    first = asyncio.create_task(slots.take())
    second = asyncio.create_task(slots.take())
    await asyncio.sleep(0)
    slots.give()  # the first waiter's future holds the slot now...
    first.cancel()  # ...and it is cancelled before it runs
    with pytest.raises(asyncio.CancelledError):
        await first
    await asyncio.wait_for(second, 1.0)  # the slot it was given went on
    slots.give()
    assert slots.free == 1


async def test_a_waiter_closed_without_a_cancellation_keeps_no_slot() -> None:
    """A coroutine closed while it waits (GeneratorExit, as when its task is collected unfinished) leaves
    the queue too: a slot given back later is not handed to it for good."""
    slots = InFlight(1)
    assert slots.take_now()
    waiting = slots.take()
    waiting.send(None)  # it now waits for its slot
    waiting.close()
    slots.give()
    assert slots.free == 1 and slots.take_now()
