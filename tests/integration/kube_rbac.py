"""Authentication and RBAC for the API emulation, as the API server's authorizer decides.

Bearer tokens name users (a ServiceAccount's user is `system:serviceaccount:NAMESPACE:NAME`, in the
groups `system:serviceaccounts`, `system:serviceaccounts:NAMESPACE` and `system:authenticated`); a
request without one is `system:anonymous`. A request is allowed when a rule of a ClusterRole bound by a
ClusterRoleBinding, or of a Role or ClusterRole bound by a RoleBinding in the request's namespace,
grants its verb on its API group, resource (with subresource: `pods/binding`) and, when the rule names
some, the object's name (`resourceNames` never match a create, a list or a watch). Otherwise the
answer is 403 with the API server's own message.

The request's attributes are read from its path here, on their own, not with the shim's code.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass, field
from typing import Any

Obj = dict[str, Any]


@dataclass(frozen=True)
class Attributes:
    verb: str
    group: str
    resource: str  # with the subresource: "pods/binding"
    namespace: str
    name: str

    def forbidden_message(self, user: str) -> str:
        what = f'{self.resource.split("/")[0]} "{self.name}"' if self.name else self.resource.split("/")[0]
        scope = f'in the namespace "{self.namespace}"' if self.namespace else "at the cluster scope"
        return (f'{what} is forbidden: User "{user}" cannot {self.verb} resource "{self.resource}" '
                f'in API group "{self.group}" {scope}')  # fmt: skip


_VERBS = {"POST": "create", "PUT": "update", "PATCH": "patch", "DELETE": "delete"}


def attributes(method: str, path: str, query: dict[str, str]) -> Attributes | None:
    """What a REST request asks to do, or None for a path outside the API (the emulator's own)."""
    parts = [p for p in path.split("/") if p]
    if parts[:2] == ["api", "v1"]:
        group, rest = "", parts[2:]
    elif parts[:1] == ["apis"] and len(parts) >= 3:
        group, rest = parts[1], parts[3:]
    else:
        return None
    namespace = ""
    if len(rest) >= 3 and rest[0] == "namespaces":
        namespace, rest = rest[1], rest[2:]
    resource = rest[0] if rest else ""
    name = rest[1] if len(rest) >= 2 else ""
    if len(rest) >= 3:
        resource = f"{resource}/{rest[2]}"
    if method == "GET":
        verb = "get" if name else ("watch" if query.get("watch") in ("true", "1") else "list")
    elif method == "DELETE" and not name:
        verb = "deletecollection"
    else:
        verb = _VERBS.get(method, method.lower())
    return Attributes(verb, group, resource, namespace, name)


@dataclass
class RBAC:
    """The roles and bindings of a rendered manifest, and the tokens of its ServiceAccounts."""

    cluster_roles: dict[str, Obj] = field(default_factory=dict)
    roles: dict[tuple[str, str], Obj] = field(default_factory=dict)  # (namespace, name)
    cluster_bindings: list[Obj] = field(default_factory=list)
    bindings: list[Obj] = field(default_factory=list)
    tokens: dict[str, str] = field(default_factory=dict)  # token -> user

    @classmethod
    def from_manifests(cls, documents: list[Obj]) -> RBAC:
        rbac = cls()
        for doc in documents:
            kind, meta = doc.get("kind"), doc.get("metadata") or {}
            if kind == "ClusterRole":
                rbac.cluster_roles[meta["name"]] = doc
            elif kind == "Role":
                rbac.roles[(meta.get("namespace", "default"), meta["name"])] = doc
            elif kind == "ClusterRoleBinding":
                rbac.cluster_bindings.append(doc)
            elif kind == "RoleBinding":
                rbac.bindings.append(doc)
        return rbac

    def token_for(self, namespace: str, service_account: str) -> str:
        token = secrets.token_hex(16)
        self.tokens[token] = f"system:serviceaccount:{namespace}:{service_account}"
        return token

    def user_of(self, authorization: str | None) -> str | None:
        """The user a request's Authorization header names; None for a token nobody was given (401)."""
        if not authorization:
            return "system:anonymous"
        scheme, _, token = authorization.partition(" ")
        return self.tokens.get(token) if scheme.lower() == "bearer" else None

    def allows(self, user: str, request: Attributes) -> bool:
        for binding in self.cluster_bindings:
            if _binds(binding, user, "") and self._grants(binding, "", request):
                return True
        for binding in self.bindings:
            namespace = (binding.get("metadata") or {}).get("namespace", "default")
            bound = request.namespace == namespace and _binds(binding, user, namespace)
            if bound and self._grants(binding, namespace, request):
                return True
        return False

    def _grants(self, binding: Obj, namespace: str, request: Attributes) -> bool:
        ref = binding.get("roleRef") or {}
        if ref.get("kind") == "ClusterRole":
            role = self.cluster_roles.get(ref.get("name", ""))
        else:
            role = self.roles.get((namespace, ref.get("name", "")))
        return role is not None and any(_rule_grants(rule, request) for rule in role.get("rules") or [])

    def without(self, role: str, resource: str, verb: str) -> RBAC:
        """A copy whose ClusterRole or Role `role` no longer grants `verb` on `resource` (for a test of
        what a role missing a rule does)."""
        import copy

        changed = copy.deepcopy(self)
        found = [r for r in changed.cluster_roles.values() if r["metadata"]["name"] == role]
        found += [r for (_, name), r in changed.roles.items() if name == role]
        for each in found:
            for rule in each.get("rules") or []:
                if resource in (rule.get("resources") or []) and verb in (rule.get("verbs") or []):
                    rule["verbs"] = [v for v in rule["verbs"] if v != verb]
        return changed


def _binds(binding: Obj, user: str, namespace: str) -> bool:
    groups = {"system:authenticated"} if user != "system:anonymous" else {"system:unauthenticated"}
    if user.startswith("system:serviceaccount:"):
        sa_namespace = user.split(":")[2]
        groups |= {"system:serviceaccounts", f"system:serviceaccounts:{sa_namespace}"}
    for subject in binding.get("subjects") or []:
        kind, name = subject.get("kind"), subject.get("name")
        if kind == "ServiceAccount":
            if user == f"system:serviceaccount:{subject.get('namespace') or namespace}:{name}":
                return True
        elif (kind == "User" and name == user) or (kind == "Group" and name in groups):
            return True
    return False


def _rule_grants(rule: Obj, request: Attributes) -> bool:
    verbs, groups = rule.get("verbs") or [], rule.get("apiGroups") or []
    resources, names = rule.get("resources") or [], rule.get("resourceNames") or []
    if not ("*" in verbs or request.verb in verbs):
        return False
    if not ("*" in groups or request.group in groups):
        return False
    if not ("*" in resources or request.resource in resources):
        return False
    return not names or (bool(request.name) and request.name in names)
