"""The history database's cost and scale (`pykorn core --history`, docs/history.md).

- throughput: the core over gRPC (bench_scheduling's e2e shape: 10,000 asks on 500 nodes) with
  history off, on SQLite and on PostgreSQL, alternating round by round through benchmarks.compare
  (`--history sqlite postgresql`); each one's median and its share of off (the goal: at least 0.95x);
- scale: 1,000,000 allocations (10,000 applications of 100) written through the store in the
  recorder's batches, the database's size, and the application list's latency (100 per page, by
  queue, user or nothing, newest first): p50 and p99 over 500 reads (the goal: p99 at most 100 ms).

PostgreSQL is a cluster of the benchmark's own (tests/integration/postgres.py: Debian's package,
initdb in a temporary directory).

    python -m benchmarks.bench_history                      # both
    python -m benchmarks.bench_history --rounds 5 --skip-scale
    python -m benchmarks.bench_history --skip-throughput --allocations 200000
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from pathlib import Path

from benchmarks import compare
from core.history.store import HistoryStore, Op
from pykorn_cli.arg_types import history_url
from tests.integration.postgres import PostgresServer


def throughput(rounds: int, nodes: int, asks: int) -> None:
    """History off, on SQLite and on PostgreSQL, round by round (benchmarks.compare's core-e2e)."""
    working = compare.working_tree()
    targets = [working, compare.with_history(working, "sqlite"), compare.with_history(working, "postgresql")]
    plan = compare.Plan("core-e2e", [nodes], asks, 0, [], rounds)
    figures = compare.measure(targets, plan)
    sys.stdout.write(f"$ python -m benchmarks.compare --bench core-e2e --nodes {nodes} --asks {asks} "
                     f"--history sqlite postgresql --rounds {rounds}\n")  # fmt: skip
    compare.table(figures, targets)
    compare.history_shares(figures, targets, sys.stdout.write)


def scale(url: str, allocations: int, per_app: int = 100) -> dict[str, float]:
    store = HistoryStore(history_url(url))
    store.migrate()
    apps = allocations // per_app
    rng = random.Random(7)
    started = time.perf_counter()
    now = 1_764_000_000.0
    ops: list[Op] = []
    for a in range(apps):
        key = {"rm_id": "rm", "partition": "default", "app_id": f"app-{a}"}
        queue, user = f"root.q{a % 20}", f"user-{a % 50}"
        at = now + a * 10
        ops.append(Op("app_new", {**key, "queue": queue, "user": user, "groups": [], "tags": {}, "at": at}))
        ops.append(Op("app_running", {**key, "at": at + 1}))
        for k in range(per_app):
            ops.append(Op("alloc_start", {
                **key, "allocation_key": f"a-{a}-{k}", "at": at + 1 + k * 0.01, "queue": queue, "user": user,
                "node": f"node-{rng.randrange(500)}", "instance_type": "m5.large",
                "resources": {"memory": 1 << 30, "vcore": 1000},
            }))  # fmt: skip
            ops.append(
                Op(
                    "alloc_end",
                    {**key, "allocation_key": f"a-{a}-{k}", "at": at + 60, "termination": "STOPPED"},
                )
            )
        ops.append(Op("app_finished", {**key, "state": "Completed", "at": at + 61, "reason": None}))
        if len(ops) >= 2_000:
            store.write(ops)
            ops = []
    if ops:
        store.write(ops)
    wrote = time.perf_counter() - started
    latencies = []
    for i in range(500):
        kind = i % 3
        queue = f"root.q{rng.randrange(20)}" if kind == 0 else ""
        user = f"user-{rng.randrange(50)}" if kind == 1 else ""
        began = time.perf_counter()
        store.applications(
            queue=queue, user=user, limit=100, offset=rng.randrange(0, 50) * 100 if kind == 2 else 0
        )
        latencies.append((time.perf_counter() - began) * 1000)
    latencies.sort()
    size = _size(store, url)
    store.close()
    return {
        "seconds": wrote, "rows_per_s": allocations / wrote, "size_mib": size / 2**20,
        "p50_ms": latencies[len(latencies) // 2], "p99_ms": latencies[int(len(latencies) * 0.99) - 1],
    }  # fmt: skip


def _size(store: HistoryStore, url: str) -> float:
    if url.startswith("sqlite:///"):
        path = Path(url.removeprefix("sqlite:///"))
        return sum(p.stat().st_size for p in path.parent.glob(path.name + "*"))
    with store.engine.connect() as connection:
        from sqlalchemy import text

        return float(connection.execute(text("SELECT pg_database_size(current_database())")).scalar_one())


def run(args: argparse.Namespace) -> None:
    if not args.skip_throughput:
        throughput(args.rounds, args.nodes, args.asks)
    if args.skip_scale:
        return
    postgres = PostgresServer()
    postgres.start()
    try:
        with tempfile.TemporaryDirectory(prefix="pykorn-history-scale-") as tmp:
            for name, url in (("sqlite", f"sqlite:///{tmp}/scale.db"),
                              ("postgresql", postgres.create_database("scale"))):  # fmt: skip
                found = scale(url, args.allocations)
                sys.stdout.write(
                    f"{args.allocations:,} allocations in {name}: written in {found['seconds']:.0f} s "
                    f"({found['rows_per_s']:,.0f}/s), {found['size_mib']:,.0f} MiB; application list "
                    f"p50 {found['p50_ms']:.1f} ms, p99 {found['p99_ms']:.1f} ms\n"
                )
                sys.stdout.flush()
    finally:
        postgres.close()


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--nodes", type=int, default=500)
    parser.add_argument("--asks", type=int, default=10_000)
    parser.add_argument("--allocations", type=int, default=1_000_000)
    parser.add_argument("--skip-throughput", action="store_true")
    parser.add_argument("--skip-scale", action="store_true")
    run(parser.parse_args())


if __name__ == "__main__":
    main()
