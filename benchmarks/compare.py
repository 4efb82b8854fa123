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
  benchmarks/bench_scheduling.py (its median row is read).
Each round is one run of each shape per target (allocations per second).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CACHE = Path(os.environ.get("PYKORN_COMPARE_CACHE", Path.home() / ".cache" / "pykorn-compare"))
WORKING = "working tree"


@dataclass
class Target:
    name: str  # "working tree", or the revision as given
    tree: Path  # its sources
    python: Path  # its virtualenv's interpreter
    pykorn: Path  # its `pykorn` command


@dataclass
class Figures:
    runs: dict[tuple[str, str], list[float]] = field(default_factory=dict)  # (shape, target) -> rates


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
                 "--rest-listen", "", "--log-level", "warning"],
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


# Rounds and the table -----------------------------------------------------------------------------


def measure(targets: list[Target], bench: str, nodes: list[int], asks: int, rounds: int) -> Figures:
    figures = Figures()
    for round_number in range(1, rounds + 1):
        for count in nodes:
            shape = f"{bench} {count} nodes"
            # Alternate the order round by round, so no target always runs first (or after another).
            order = targets if round_number % 2 else list(reversed(targets))
            for target in order:
                run = core_e2e if bench == "core-e2e" else inprocess
                rate = run(target, count, asks)
                figures.runs.setdefault((shape, target.name), []).append(rate)
                sys.stderr.write(f"round {round_number}: {shape}, {target.name}: {rate:,.0f}/s\n")
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


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("revs", nargs="+", help="revisions to compare the working tree with")
    parser.add_argument("--bench", choices=["core-e2e", "inprocess"], default="core-e2e")
    parser.add_argument("--nodes", type=int, nargs="+", default=[500, 5000])
    parser.add_argument("--asks", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    from rmclient.logging_setup import configure_logging

    configure_logging("warning")
    targets = [working_tree(), *(prepared(rev) for rev in args.revs)]
    figures = measure(targets, args.bench, args.nodes, args.asks, args.rounds)
    sys.stdout.write(f"$ python -m benchmarks.compare {' '.join(sys.argv[1:])}\n")
    table(figures, targets)


if __name__ == "__main__":
    main()
