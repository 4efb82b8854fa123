"""The names a configuration may use, checked with YuniKorn's patterns (pkg/common/configs/configvalidator.go
and pkg/common/security/acl.go).

Each pattern must match the whole text: Go's `$` ends the text, where Python's `$` would also match
before a final newline, so the checks here use fullmatch rather than `^...$`.
"""

from __future__ import annotations

import re

# A queue name (one level of a path): what a user name becomes with its dots replaced fits too.
_QUEUE = re.compile(r"[a-zA-Z0-9_:#/@-]{1,64}")
# Placement filter and limit names (configs.UserRegExp, GroupRegExp): lenient, so OIDC and service
# account names ("system:serviceaccount:ns:name") fit.
_USER = re.compile(r"[_a-zA-Z][a-zA-Z0-9:#/_.@-]*[$]?")
_GROUP = re.compile(r"[_a-zA-Z][a-zA-Z0-9:_.-]*")
# ACL entries (security's userNameRegExp, groupRegExp): stricter; an entry that does not fit is ignored.
_ACL_USER = re.compile(r"[_a-zA-Z][a-zA-Z0-9_.@-]*[$]?")
_ACL_GROUP = re.compile(r"[_a-zA-Z][a-zA-Z0-9_-]*")
# A character no user or group name has: a filter entry holding one is a regular expression.
_REGEXP_SPECIAL = re.compile(r"[\^$*+?()\[{}|]")
# A placement rule's name is a Go identifier (configs.RuleNameRegExp).
_RULE = re.compile(r"[_a-zA-Z][a-zA-Z0-9_]*")

QUEUE_NAME_RULE = "1 to 64 characters of a-z A-Z 0-9 _ : # / @ -"


def valid_queue_name(name: str) -> bool:
    return _QUEUE.fullmatch(name) is not None


def valid_queue_path(path: str) -> bool:
    """Every level of a dotted queue path is a valid queue name."""
    return all(_QUEUE.fullmatch(part) for part in path.split("."))


def valid_user(name: str) -> bool:
    return _USER.fullmatch(name) is not None


def valid_group(name: str) -> bool:
    return _GROUP.fullmatch(name) is not None


def valid_acl_user(name: str) -> bool:
    return _ACL_USER.fullmatch(name) is not None


def valid_acl_group(name: str) -> bool:
    return _ACL_GROUP.fullmatch(name) is not None


def has_regexp_special(text: str) -> bool:
    return _REGEXP_SPECIAL.search(text) is not None


def valid_rule_name(name: str) -> bool:
    return _RULE.fullmatch(name) is not None
