"""Access control lists in YuniKorn's format: "user1,user2 group1,group2".

Users and groups are comma-separated lists split by a single space; "*" (as the whole ACL, or as the
user or group list) lets everyone in; an empty or unset ACL lets nobody in. Names that are not valid
user or group names are ignored, as YuniKorn ignores them.
"""

from __future__ import annotations

from dataclasses import dataclass

from core.config.names import valid_acl_group, valid_acl_user

WILDCARD = "*"


class ACLError(ValueError):
    pass


@dataclass(frozen=True)
class ACL:
    users: frozenset[str] = frozenset()
    groups: frozenset[str] = frozenset()
    all_allowed: bool = False

    @classmethod
    def parse(cls, text: str | None) -> ACL:
        if not text:
            return NOBODY
        fields = text.split(" ")
        if len(fields) > 2:
            raise ACLError(f"ACL {text!r} has more than one space: write 'user1,user2 group1,group2'")
        if text.strip() == WILDCARD:
            return EVERYONE
        user_list = fields[0].split(",")
        if user_list == [WILDCARD]:
            return EVERYONE
        group_list = fields[1].split(",") if len(fields) == 2 else []
        if group_list == [WILDCARD]:
            return EVERYONE
        return cls(
            users=frozenset(u for u in user_list if u and valid_acl_user(u)),
            groups=frozenset(g for g in group_list if g and valid_acl_group(g)),
        )

    def allows(self, user: str, groups: tuple[str, ...]) -> bool:
        if self.all_allowed:
            return True
        return user in self.users or (bool(groups) and not self.groups.isdisjoint(groups))


NOBODY = ACL()
EVERYONE = ACL(all_allowed=True)
