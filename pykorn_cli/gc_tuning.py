"""The garbage collector as both daemons run it (`pykorn core` and `pykorn k8s`)."""

from __future__ import annotations

import gc


def tune_garbage_collector() -> None:
    """Collect young objects less often, and leave everything made at startup out of collections.

    Both processes make many small, short-lived containers (the core its per-ask dicts, the shim the
    decoded watch events), and hold many long-lived ones (the core its objects, the shim a copy of
    every pod). With the default threshold the collector runs every 700 allocations, and its passes
    over the older generations grow with what is held: in the core they cost more than the scheduling
    itself, in the shim about a tenth of its CPU per pod (benchmarks/RESULTS.md has the figures).
    Cycles are still collected, only less often.
    """
    gc.collect()
    gc.freeze()
    gc.set_threshold(100_000, 50, 100)
