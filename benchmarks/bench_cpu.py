"""CPU seconds the core takes for the plain shape in-process (bench_scheduling's, setup included): for
comparing two commits on a host where wall-clock rates swing with the neighbours' load. Run it from
each checkout in turn and compare the minima.

    python -m benchmarks.bench_cpu                 # 500 and 5,000 nodes, 5 runs each
    python -m benchmarks.bench_cpu --nodes 500 --repeat 9
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import logging
import sys
import time

import structlog

from benchmarks.bench_scheduling import run_inprocess


async def cpu_seconds(nodes: int, asks: int) -> float:
    gc.collect()
    started = time.process_time()
    await run_inprocess(nodes, asks)
    return time.process_time() - started


async def main_async(args: argparse.Namespace) -> None:
    for nodes in args.nodes:
        runs = sorted([await cpu_seconds(nodes, args.asks) for _ in range(args.repeat)])
        median = runs[len(runs) // 2]
        sys.stdout.write(f"{nodes:>6} nodes {args.asks} asks: CPU s min {runs[0]:.3f} median {median:.3f}\n")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--nodes", type=int, nargs="+", default=[500, 5000])
    parser.add_argument("--asks", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=5)
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))
    asyncio.run(main_async(parser.parse_args()))


if __name__ == "__main__":
    main()
