"""The Kubernetes client's token bucket: the rate client-go's gives, waiters served in order, each
woken once."""

from __future__ import annotations

import asyncio
import time

import pytest

from shim_k8s.api.request_flow import RateLimiter


class _Clock:
    """time.monotonic and asyncio.sleep for the limiter: sleeping moves the clock, nothing waits."""

    def __init__(self) -> None:
        self.now = 1000.0
        self.sleeps: list[float] = []

    def monotonic(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> _Clock:
    fake = _Clock()
    monkeypatch.setattr(time, "monotonic", fake.monotonic)
    monkeypatch.setattr(asyncio, "sleep", fake.sleep)
    return fake


async def test_the_burst_goes_at_once_and_the_rest_at_the_rate(clock: _Clock) -> None:
    limiter = RateLimiter(qps=10.0, burst=3)
    for _ in range(3):
        await limiter.acquire()
    assert clock.sleeps == []  # the saved tokens
    for _ in range(4):
        await limiter.acquire()
    # Each waiter sleeps once, until its own turn: the 4th token 0.1 s on, the 7th 0.4 s on.
    assert clock.sleeps == pytest.approx([0.1, 0.2, 0.3, 0.4])


async def test_time_passing_refills_up_to_the_burst(clock: _Clock) -> None:
    limiter = RateLimiter(qps=10.0, burst=2)
    await limiter.acquire()
    await limiter.acquire()
    clock.now += 60.0  # far more than the burst's worth: only 2 saved
    for _ in range(3):
        await limiter.acquire()
    assert clock.sleeps == pytest.approx([0.1])


async def test_tokens_owed_are_paid_back_before_new_ones_are_saved(clock: _Clock) -> None:
    limiter = RateLimiter(qps=10.0, burst=1)
    await limiter.acquire()
    for _ in range(5):
        await limiter.acquire()  # owed: 0.5 s worth
    clock.now += 0.3  # three paid back, two still owed
    await limiter.acquire()
    assert clock.sleeps[-1] == pytest.approx(0.3)


async def test_concurrent_waiters_each_sleep_once_in_arrival_order() -> None:
    limiter = RateLimiter(qps=1000.0, burst=1)
    order: list[int] = []

    async def one(i: int) -> None:
        await limiter.acquire()
        order.append(i)

    await asyncio.wait_for(asyncio.gather(*(one(i) for i in range(50))), 5.0)
    assert order == list(range(50))


async def test_a_waiter_cancelled_gives_its_token_back(monkeypatch: pytest.MonkeyPatch) -> None:
    """As Go's reservation Cancel: requests given up (a stop, a lost lease) do not make those after
    them wait for tokens nobody used."""
    now = 1000.0
    slept: list[float] = []

    async def sleep_until_cancelled(seconds: float) -> None:
        slept.append(seconds)
        await asyncio.Event().wait()

    monkeypatch.setattr(time, "monotonic", lambda: now)
    monkeypatch.setattr(asyncio, "sleep", sleep_until_cancelled)
    limiter = RateLimiter(qps=10.0, burst=1)
    await limiter.acquire()  # the saved token
    waiters = [asyncio.create_task(limiter.acquire()) for _ in range(50)]  # 5 s of tokens on credit
    while len(slept) < 50:
        await asyncio.wait(waiters, timeout=0)  # (a turn of the loop for each to start sleeping)
    for waiter in waiters:
        waiter.cancel()
    await asyncio.gather(*waiters, return_exceptions=True)
    slept.clear()
    next_one = asyncio.create_task(limiter.acquire())
    await asyncio.wait([next_one], timeout=0)
    assert slept == pytest.approx([0.1])  # one token's wait, not 5.1 s
    next_one.cancel()
    await asyncio.gather(next_one, return_exceptions=True)


async def test_take_says_the_wait_and_a_pay_cancelled_gives_the_token_back(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The shim's requests take a token without a coroutine (take), and sleep only when it is owed (pay):
    the same bucket as acquire's, and the same refund when the wait is given up."""
    monkeypatch.setattr(time, "monotonic", lambda: 1000.0)
    limiter = RateLimiter(qps=10.0, burst=2)
    assert limiter.take() == 0.0 and limiter.take() == 0.0  # the burst: no wait
    assert limiter.take() == pytest.approx(0.1)
    assert limiter.take() == pytest.approx(0.2)  # each waits behind the one owed before it

    async def sleep_until_cancelled(seconds: float) -> None:
        await asyncio.Event().wait()

    monkeypatch.setattr(asyncio, "sleep", sleep_until_cancelled)
    paying = asyncio.create_task(limiter.pay(0.2))
    await asyncio.wait([paying], timeout=0)
    paying.cancel()
    await asyncio.gather(paying, return_exceptions=True)
    assert limiter.take() == pytest.approx(0.2)  # the cancelled one's token went back: 0.2, not 0.3
