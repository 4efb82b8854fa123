"""CPU instructions per allocation of the in-process scheduling benchmark, counted by `perf stat`.

Wall-clock rates swing by tens of percent on a shared 2-core machine; instruction counts do not (the
same code and inputs give the same count to a fraction of a percent), so a change on the scheduling
path is measured here as a difference in instructions per ask. Two runs of
`benchmarks.bench_scheduling --mode inprocess` (500 nodes) with different numbers of asks are counted,
and the difference divided by the difference in asks: start-up and set-up cancel out.

    python -m benchmarks.instructions            # the benchmark's configuration
    python -m benchmarks.instructions --limits   # with user limits on every level (never binding)
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys

SMALL, LARGE = 2_000, 22_000


def count(asks: int, limits: bool) -> int:
    command = [
        "perf", "stat", "-x", ",", "-e", "instructions",
        sys.executable, "-m", "benchmarks.bench_scheduling", "--mode", "inprocess", "--nodes", "500",
        "--asks", str(asks), "--repeat", "1", *(["--limits"] if limits else []),
    ]  # fmt: skip
    env = {**os.environ, "PYTHONHASHSEED": "0"}  # the same dict orders every run
    done = subprocess.run(command, capture_output=True, text=True, env=env, check=True)
    for line in done.stderr.splitlines():
        fields = line.split(",")
        if len(fields) > 2 and fields[2].startswith("instructions"):
            return int(fields[0])
    raise SystemExit(f"perf stat gave no instruction count:\n{done.stderr}")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--limits", action="store_true", help="user limits on every level of the path")
    args = parser.parse_args()
    if shutil.which("perf") is None:
        raise SystemExit("needs perf (Debian: apt-get install linux-perf), with hardware counters readable")
    small, large = count(SMALL, args.limits), count(LARGE, args.limits)
    sys.stdout.write(f"instructions per ask: {(large - small) // (LARGE - SMALL):,}\n")


if __name__ == "__main__":
    main()
