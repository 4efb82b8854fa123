"""The upstream sources the conformance suites are ported from, pinned to the commits read.

Each ported case is named after its upstream test and case (`TestCheckLimits/<case name>`) so a reader
can find the row it came from at this commit. When a suite is brought up to a newer upstream commit,
change the commit in pykorn_cli/versions.py (what `pykorn --version` says it tracks) and say in the
suite what changed.
"""

from __future__ import annotations

# apache/yunikorn-core, master at "[YUNIKORN-3310] Add Counter metric for terminal app states (#1097)".
from pykorn_cli.versions import YUNIKORN_CORE_COMMIT as YUNIKORN_CORE_COMMIT


def yunikorn_case(test: str, case: str = "") -> str:
    """The id of a case ported from yunikorn-core: `Test.../case`, as `go test -run` names it."""
    return f"{test}/{case}" if case else test


COMPATIBILITY_DOC = "docs/compatibility.md"
# Every anchor of docs/compatibility.md a ported case cites (test_compatibility_doc checks they exist).
DELIBERATE: set[str] = set()


def deliberate(anchor: str) -> str:
    """Mark a ported case where pykorn differs from upstream on purpose: its expectation is pykorn's, and
    `anchor` names the entry of docs/compatibility.md that gives upstream's behaviour and the reason."""
    DELIBERATE.add(anchor)
    return anchor
