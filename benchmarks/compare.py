"""Benchmarks of the working tree against earlier revisions, interleaved in one run.

These machines vary twice over from one day to the next, so a figure means something only against
another measured beside it. Each revision is checked out in a scratch worktree with a virtualenv of its
own (kept under ~/.cache/pykorn-compare, keyed by commit, so a second run starts at once); then the
rounds go one target after the other (working tree, rev 1, rev 2, ..., working tree, ...), so a slow
stretch of the host falls on every target alike. It prints, per benchmark, each target's median and
range, and its ratio to the working tree.

    python -m benchmarks.compare 8d238d4 --bench core-e2e --nodes 500 5000 --rounds 5
    python -m benchmarks.compare 8d238d4 e64f160 --bench inprocess --nodes 500

Benchmarks:
- `core-e2e`: YuniKorn's BenchmarkScheduling shape over gRPC (benchmarks/bench_scheduling.py, e2e):
  each target's own core process (its `pykorn core`), driven by this tree's resource manager, so only
  the core differs;
- `inprocess`: the same shape with the engine driven in-process, by each target's own
  benchmarks/bench_scheduling.py (its median row is read);
- `k8s`: the Kubernetes burst of benchmarks/bench_k8s.py (`--pods` made at once on each `--nodes`, over
  each `--apps` count of applications): each target's own `pykorn k8s` and `pykorn core`, against this
  tree's API emulation and pod driver, so only the shim and the core differ. Besides pods/s it records
  the CPU µs per pod of the shim, the core and the emulation (the emulation's, the same code for every
  target, says how fast the host ran at the time).
Each round is one run of each shape per target (allocations or pods per second).

    python -m benchmarks.compare e64f160 --bench k8s --nodes 500 --apps 10 5000 --pods 5000 --rounds 3

`--history sqlite postgresql` (core-e2e) adds, for the working tree, a target per database with
`pykorn core --history` on: a new SQLite file or PostgreSQL database per run (PostgreSQL from Debian's
package in a cluster of the run's own, tests/integration/postgres.py). Their ratio is history off's
median over history on's; each one's share of off is printed after the table.

    python -m benchmarks.compare --bench core-e2e --nodes 500 --history sqlite postgresql --rounds 5
"""

from __future__ import annotations

import argparse
import asyncio
import atexit
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
CACHE = Path(os.environ.get("PYKORN_COMPARE_CACHE", Path.home() / ".cache" / "pykorn-compare"))
WORKING = "working tree"


@dataclass
class Target:
    name: str  # "working tree", or the revision as given
    tree: Path  # its sources
    python: Path  # its virtualenv's interpreter
    pykorn: Path  # its `pykorn` command
    history: str = ""  # core-e2e: the history database its core writes ("", "sqlite" or "postgresql")


@dataclass
class Figures:
    runs: dict[tuple[str, str], list[float]] = field(default_factory=dict)  # (shape, target) -> rates
    # (shape, target) -> what else each run measured, by name (the k8s shape's CPU µs per pod)
    extra: dict[tuple[str, str], list[dict[str, float]]] = field(default_factory=dict)


def _run(*args: str | Path, cwd: Path | None = None) -> str:
    done = subprocess.run([str(a) for a in args], cwd=cwd, check=True, capture_output=True, text=True)
    return done.stdout


def working_tree() -> Target:
    venv = ROOT / ".venv" / "bin"
    return Target(WORKING, ROOT, venv / "python", venv / "pykorn")


def prepared(rev: str) -> Target:
    """The revision checked out in its own worktree and installed in its own virtualenv (once)."""
    sha = _run("git", "rev-parse", "--verify", f"{rev}^{{commit}}", cwd=ROOT).strip()
    home = CACHE / sha[:12]
    tree, venv = home / "tree", home / "venv"
    if not (tree / "pyproject.toml").exists():
        home.mkdir(parents=True, exist_ok=True)
        _run("git", "worktree", "add", "--force", "--detach", tree, sha, cwd=ROOT)
    if not (venv / ".installed").exists():
        sys.stderr.write(f"compare: installing {rev} ({sha[:12]}) in {venv}\n")
        _run(sys.executable, "-m", "venv", venv)
        _run(venv / "bin" / "python", "-m", "pip", "install", "--quiet", tree)
        (venv / ".installed").touch()
    return Target(rev, tree, venv / "bin" / "python", venv / "bin" / "pykorn")


# One run of a shape -------------------------------------------------------------------------------


def core_e2e(target: Target, nodes: int, asks: int) -> float:
    """Allocations per second of the target's core over gRPC, driven by this tree's RM."""
    from benchmarks.bench_scheduling import run_e2e

    with tempfile.TemporaryDirectory(prefix="pykorn-compare-") as scratch:
        port_file, log_path = Path(scratch, "port"), Path(scratch, "core.log")
        with open(log_path, "wb") as log:
            process = subprocess.Popen(
                [str(target.pykorn), "core", "--listen", "127.0.0.1:0", "--port-file", str(port_file),
                 "--rest-listen", "", "--log-level", "warning", *_history_args(target, scratch)],
                cwd=target.tree, stdout=log, stderr=log,
            )  # fmt: skip
            try:
                deadline = time.monotonic() + 60
                while not (port_file.exists() and port_file.read_text().strip()):
                    if process.poll() is not None or time.monotonic() > deadline:
                        raise RuntimeError(f"{target.name}'s core did not start: {log_path.read_text()}")
                    time.sleep(0.05)
                address = f"127.0.0.1:{port_file.read_text().strip()}"
                return asyncio.run(run_e2e(nodes, asks, address)).rate
            finally:
                process.terminate()
                process.wait(30)


_POSTGRES: list[Any] = []  # the run's PostgreSQL cluster, once a target needs one
_DATABASES = iter(range(1, 1 << 30))


def _history_args(target: Target, scratch: str) -> list[str]:
    """`pykorn core`'s history flags for the target: a new database per run."""
    if target.history == "sqlite":
        return ["--history", f"sqlite:///{scratch}/history.db"]
    if target.history == "postgresql":
        if not _POSTGRES:
            from tests.integration.postgres import PostgresServer

            server = PostgresServer()
            server.start()
            atexit.register(server.close)
            _POSTGRES.append(server)
        return ["--history", _POSTGRES[0].create_database(f"compare_{next(_DATABASES)}")]
    return []


def with_history(target: Target, database: str) -> Target:
    return replace(target, name=f"history {database}", history=database)


def history_shares(figures: Figures, targets: list[Target], write: Callable[[str], object]) -> None:
    """Each history target's median as a share of history off's (the working tree's)."""
    for shape in dict.fromkeys(shape for shape, _ in figures.runs):
        off = statistics.median(figures.runs[(shape, WORKING)])
        for target in targets:
            if target.history:
                on = statistics.median(figures.runs[(shape, target.name)])
                write(f"{shape}: history on {target.history}: {on / off:.2f}x of off\n")


_ROW = re.compile(r"^in-process\s+(\d+)\s+(\d+)\s+\d+\s+([\d,]+)")


def inprocess(target: Target, nodes: int, asks: int) -> float:
    """Allocations per second of the target's engine in-process, by its own benchmark script."""
    out = _run(
        target.python, "-m", "benchmarks.bench_scheduling", "--mode", "inprocess", "--nodes", str(nodes),
        "--asks", str(asks), "--repeat", "1", cwd=target.tree,
    )  # fmt: skip
    for line in out.splitlines():
        match = _ROW.match(line)
        if match and int(match.group(1)) == nodes:
            return float(match.group(3).replace(",", ""))
    raise RuntimeError(f"{target.name}: no in-process row for {nodes} nodes in:\n{out}")


def k8s_burst(target: Target, nodes: int, pods: int, apps: int) -> tuple[float, dict[str, float]]:
    """Pods/s of the target's shim and core on this tree's emulation, and each process's CPU µs per pod."""
    from benchmarks.bench_k8s import burst

    return asyncio.run(burst(nodes, pods, apps, pykorn=(str(target.pykorn),)))


# Rounds and the table -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Plan:
    bench: str
    nodes: list[int]
    asks: int  # core-e2e and inprocess
    pods: int  # k8s
    apps: list[int]  # k8s
    rounds: int


Run = Callable[[Target], tuple[float, dict[str, float]]]  # one run of a shape on a target


def _shapes(plan: Plan) -> list[tuple[str, Run]]:
    """Each shape's name and how one run of it is measured on a target."""
    shapes: list[tuple[str, Run]] = []
    for count in plan.nodes:
        if plan.bench == "k8s":
            for apps in plan.apps:
                shapes.append((f"k8s {count} nodes {apps} apps", _k8s_run(count, plan.pods, apps)))
        else:
            shapes.append((f"{plan.bench} {count} nodes", _rate_run(plan.bench, count, plan.asks)))
    return shapes


def _k8s_run(nodes: int, pods: int, apps: int) -> Run:
    return lambda target: k8s_burst(target, nodes, pods, apps)


def _rate_run(bench: str, nodes: int, asks: int) -> Run:
    run = core_e2e if bench == "core-e2e" else inprocess
    return lambda target: (run(target, nodes, asks), {})


def measure(targets: list[Target], plan: Plan) -> Figures:
    figures = Figures()
    for round_number in range(1, plan.rounds + 1):
        for shape, run in _shapes(plan):
            # Alternate the order round by round, so no target always runs first (or after another).
            order = targets if round_number % 2 else list(reversed(targets))
            for target in order:
                rate, extra = run(target)
                figures.runs.setdefault((shape, target.name), []).append(rate)
                figures.extra.setdefault((shape, target.name), []).append(extra)
                said = "".join(f", {name} {value:,.0f} µs" for name, value in extra.items())
                sys.stderr.write(f"round {round_number}: {shape}, {target.name}: {rate:,.0f}/s{said}\n")
    return figures


def table(figures: Figures, targets: list[Target], write: Callable[[str], object] = sys.stdout.write) -> None:
    shapes = list(dict.fromkeys(shape for shape, _ in figures.runs))
    header = ("shape", "target", "runs", "median/s", "min/s", "max/s", "ratio")
    write("{:<24} {:<16} {:>4} {:>10} {:>10} {:>10} {:>7}\n".format(*header))
    for shape in shapes:
        base = statistics.median(figures.runs[(shape, WORKING)])
        for target in targets:
            rates = sorted(figures.runs[(shape, target.name)])
            median = statistics.median(rates)
            write(
                f"{shape:<24} {target.name:<16} {len(rates):>4} {median:>10,.0f} {rates[0]:>10,.0f} "
                f"{rates[-1]:>10,.0f} {base / median:>6.2f}x\n"
            )
    write("ratio: the working tree's median over the target's (above 1: the working tree is faster)\n")
    cpu_table(figures, targets, write)


def cpu_table(figures: Figures, targets: list[Target], write: Callable[[str], object]) -> None:
    """The k8s shape's CPU µs per pod, per process: medians, and the working tree's over the target's
    (below 1: the working tree spends less)."""
    shapes = [shape for shape, name in figures.extra if name == WORKING and any(figures.extra[shape, name])]
    if not shapes:
        return
    write(
        "\n{:<24} {:<16} {:>12} {:>12} {:>12}\n".format(
            "shape", "target", "shim µs", "core µs", "emulation µs"
        )
    )
    for shape in shapes:
        base = {k: statistics.median(run[k] for run in figures.extra[shape, WORKING]) for k in _CPU}
        for target in targets:
            runs = figures.extra[shape, target.name]
            cells = []
            for k in _CPU:
                median = statistics.median(run[k] for run in runs)
                cells.append(f"{median:,.0f} ({base[k] / median:.2f}x)")
            write(f"{shape:<24} {target.name:<16} {cells[0]:>12} {cells[1]:>12} {cells[2]:>12}\n")
    write(
        "CPU: median µs per pod; in brackets the working tree's over the target's (below 1: it spends less)\n"
    )


_CPU = ("shim", "core", "emulation")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("revs", nargs="*", help="revisions to compare the working tree with")
    parser.add_argument("--bench", choices=["core-e2e", "inprocess", "k8s"], default="core-e2e")
    parser.add_argument("--nodes", type=int, nargs="+", default=[500, 5000])
    parser.add_argument("--asks", type=int, default=10_000, help="core-e2e and inprocess")
    parser.add_argument("--pods", type=int, default=5_000, help="k8s: pods made at once")
    parser.add_argument("--apps", type=int, nargs="+", default=[10], help="k8s: the applications they are in")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument(
        "--history", nargs="+", default=[], choices=["sqlite", "postgresql"],
        help="core-e2e: the working tree again with `pykorn core --history` on each database",
    )  # fmt: skip
    args = parser.parse_args()
    if not args.revs and not args.history:
        parser.error("name a revision to compare with, or --history")
    if args.history and args.bench != "core-e2e":
        parser.error("--history goes with --bench core-e2e")
    from rmclient.logging_setup import configure_logging

    configure_logging("warning")
    working = working_tree()
    history = [with_history(working, database) for database in args.history]
    targets = [working, *history, *(prepared(rev) for rev in args.revs)]
    plan = Plan(args.bench, args.nodes, args.asks, args.pods, args.apps, args.rounds)
    figures = measure(targets, plan)
    sys.stdout.write(f"$ python -m benchmarks.compare {' '.join(sys.argv[1:])}\n")
    table(figures, targets)
    history_shares(figures, targets, sys.stdout.write)


if __name__ == "__main__":
    main()
