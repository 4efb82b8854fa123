"""Regular expressions as YuniKorn reads them: Go's regexp package, whose syntax is RE2's.

A placement filter's expression is written for Go, so it is compiled by RE2 (google-re2), not by
Python's `re`: what Go refuses (a lookahead, a back reference, `a++`, a repeat over 1,000) is refused
here too, and what Go accepts (`[[:alpha:]]`, `\\pL`, `\\z`) works as it does there. Matching is Go's
MatchString: anywhere in the text unless the expression is anchored.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import re2  # type: ignore[import-untyped]  # google-re2 ships no type information

_OPTIONS = re2.Options()
_OPTIONS.log_errors = False  # RE2 would write each refused expression to stderr, outside the log


class GoRegexpError(ValueError):
    """An expression Go's regexp.Compile refuses; the message is RE2's reason."""


@dataclass(frozen=True)
class GoRegexp:
    pattern: str
    _compiled: Any

    def matches(self, text: str) -> bool:
        """Go's MatchString: whether the expression matches anywhere in `text`."""
        return self._compiled.search(text) is not None


def compile_go(pattern: str) -> GoRegexp:
    """The expression compiled as Go would; GoRegexpError when Go would refuse it."""
    try:
        return GoRegexp(pattern, re2.compile(pattern, options=_OPTIONS))
    except UnicodeEncodeError:
        raise GoRegexpError("not valid UTF-8 text (a lone surrogate)") from None
    except re2.error as exc:
        reason = exc.args[0] if exc.args else exc
        if isinstance(reason, bytes):
            reason = reason.decode("utf-8", "replace")
        raise GoRegexpError(str(reason)) from None
