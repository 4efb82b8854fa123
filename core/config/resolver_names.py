"""The kinds of `usergroupresolver` a partition may name: which the configuration check accepts, and why it
refuses YuniKorn's others. The resolving itself is core/ugm/resolver.py's."""

from __future__ import annotations

DEFAULT = ""
OS = "os"
SUPPORTED = (DEFAULT, "default", OS)
# YuniKorn's other types, refused by the configuration check with why (LDAP needs a directory and
# credentials pykorn does not hold; "test" is YuniKorn's unit-test resolver).
UNSUPPORTED = {
    "ldap": "pykorn has no LDAP client: have the resource manager send each application's groups "
    "(the Kubernetes shim sends the pod's user info), or use type os",
    "test": "it is YuniKorn's resolver for its own unit tests",
}
