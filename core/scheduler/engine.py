"""The engine: the one writer of scheduler state.

Handlers never touch state; they put commands on the engine's queue. The engine applies them in
arrival order, runs scheduling in bounded slices (yielding to the event loop between slices so the
streams stay responsive), and hands each step's result batches to a sink, which rmproxy routes to
the RMs. A command that fails unexpectedly is logged and dropped; the engine keeps serving.

The queue is bounded by the readers, not by refusing: past MAX_QUEUED commands the gRPC streams stop
reading (`room`) until the engine has taken the queue down to half, so an RM that sends faster than the
core schedules is slowed by HTTP/2's flow control instead of growing the core's memory and every
command's wait.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

import structlog

from core.scheduler.cluster import ClusterContext
from core.scheduler.commands import Command, PreviewConfig, RegisterRM, UpdateConfig
from core.scheduler.results import ResultBatch

log = structlog.get_logger("pykorn.engine")

ResultSink = Callable[[list[ResultBatch]], None]

MAX_QUEUED = 2_000  # commands waiting (each one stream message's worth), past which readers wait


class Engine:
    def __init__(
        self,
        context: ClusterContext,
        sink: ResultSink,
        slice_size: int = 1000,
        max_commands_per_step: int = 1000,
        tick_interval: float = 0.5,
        max_queued: int = MAX_QUEUED,
    ) -> None:
        self.context = context
        context.skip_quiet_partitions = True  # its ticks bring the delays in (ClusterContext.tick)
        self._sink = sink
        self._slice_size = slice_size
        self._max_commands = max_commands_per_step
        self._tick_interval = tick_interval
        self._queue: asyncio.Queue[Command | None] = asyncio.Queue()  # None: stop
        self._max_queued = max_queued
        self._room = asyncio.Event()  # set while readers may go on (see `room`)
        self._room.set()
        self._dirty = False
        self._stopping = False
        self._last_tick = 0.0

    def submit(self, command: Command) -> None:
        self._queue.put_nowait(command)
        if self._queue.qsize() >= self._max_queued:
            self._room.clear()

    async def room(self) -> None:
        """Until the queue has room: a reader awaits it before it reads the next message."""
        if not self._room.is_set():
            await self._room.wait()

    def _taken(self) -> None:
        if not self._room.is_set() and self._queue.qsize() <= self._max_queued // 2:
            self._room.set()

    def stop(self) -> None:
        """Stop after the commands already queued, and between two slices of scheduling: nothing more
        is scheduled once told (the core is stopping; nobody would hear of it)."""
        self._stopping = True
        self._queue.put_nowait(None)

    async def run(self) -> None:
        log.info("engine started")
        loop = asyncio.get_running_loop()
        self._last_tick = loop.time()
        while True:
            # Scheduling left to do (the last step stopped for new commands or the timers, or ran out of
            # time): take only what waits, never wait for more. (Waiting here held the rest of a burst
            # until the next command or a tick, up to a second, whenever a tick fell due mid-burst.)
            if self._dirty:
                try:
                    item = self._queue.get_nowait()
                except asyncio.QueueEmpty:
                    stop = False
                else:
                    stop = self._apply_batch(item)
            else:
                try:
                    item = await asyncio.wait_for(self._queue.get(), self._tick_interval)
                except TimeoutError:
                    stop = False  # nothing arrived: timers and pending work only
                else:
                    stop = self._apply_batch(item)
            if self._tick_due():
                self._tick()
                self._last_tick = loop.time()
            self._emit()
            if stop:
                break
            await self._schedule()
        log.info("engine stopped")

    def _tick_due(self) -> bool:
        return asyncio.get_running_loop().time() - self._last_tick >= self._tick_interval

    def _tick(self) -> None:
        """Timers (application states) and another look at what is pending: reservations wait on time."""
        try:
            self.context.tick()
        except Exception:
            log.exception("timer step failed")
        if self.context.has_pending():
            self._dirty = True
        else:
            self._idle_cycle()

    def _idle_cycle(self) -> None:
        """A scheduling cycle with nothing to place, timed as any (YuniKorn's loop runs and times its
        cycles when idle too: its dashboards' latency quantiles would otherwise have nothing to show)."""
        started = time.perf_counter()
        try:
            self.context.schedule(self._slice_size)
        except Exception:
            log.exception("scheduling cycle failed")
            return
        self.context.metrics.timings.cycle.observe(time.perf_counter() - started)

    def _apply_batch(self, first: Command | None) -> bool:
        """Apply `first` and whatever else is already queued, up to a bound; True when told to stop."""
        item = first
        applied = 0
        try:
            while item is not None:
                self._apply(item)
                applied += 1
                if applied >= self._max_commands:
                    return False  # the rest next step, still first in the queue: order is kept
                try:
                    item = self._queue.get_nowait()
                except asyncio.QueueEmpty:
                    return False
            return True
        finally:
            self._taken()

    def _apply(self, command: Command) -> None:
        self._dirty = True
        try:
            self.context.apply(command)
        except Exception as exc:  # a bug must cost one command, not the daemon
            log.exception(
                "command failed", command=type(command).__name__, rmID=getattr(command, "rm_id", "")
            )
            if isinstance(command, RegisterRM | UpdateConfig | PreviewConfig) and command.reply:
                command.reply(exc)

    async def _schedule(self) -> None:
        while self._dirty and not self._stopping and self.context.has_pending():
            started = time.perf_counter()
            try:
                made = self.context.schedule(self._slice_size)
            except Exception:
                log.exception("scheduling cycle failed")
                self.context.metrics.count("error")
                made = 0
            elapsed = time.perf_counter() - started
            self.context.metrics.cycle_latency.observe(elapsed)
            self.context.metrics.timings.cycle.observe(elapsed)
            self._emit()
            if made < self._slice_size and not self.context.unfinished:
                self._dirty = False  # nothing more fits until something changes
                break
            await asyncio.sleep(0)  # let the streams breathe between slices
            if not self._queue.empty() or self._tick_due():
                break  # new commands (or the timers) first; the next step schedules again
        else:
            self._dirty = False

    def _emit(self) -> None:
        batches = self.context.drain_results()
        if not batches:
            return
        try:
            self._sink(batches)
        except Exception:
            log.exception("result delivery failed")
