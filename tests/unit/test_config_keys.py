"""Every key of YuniKorn's queues.yaml is honoured, refused with a reason, or accepted with a warning
that names it: nothing a user writes is dropped without a word."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from core.config import ConfigError, load_config
from core.config.report import validate_file
from core.ugm.limits import limit_table

# Every key YuniKorn's configuration accepts (pkg/common/configs/config.go), each written once.
EVERY_KEY = """
checksum: abc123
partitions:
  - name: default
    statedumpfilepath: /tmp/yunikorn-state.txt
    usergroupresolver:
      type: os
    preemption:
      enabled: true
      quotapreemptionenabled: true
    nodesortpolicy:
      type: binpacking
      resourceweights: {memory: 1.5, vcore: 2}
    placementrules:
      - name: tag
        value: namespace
        create: true
        parent:
          name: fixed
          value: tenants
        filter:
          type: allow
          users: [sue]
          groups: [dev]
      - name: provided
      - name: user
        create: false
    limits:
      - limit: everyone
        users: ['*']
        maxapplications: 10
    queues:
      - name: root
        submitacl: '*'
        adminacl: ops
        properties:
          application.sort.policy: fifo
        queues:
          - name: tenants
            parent: true
            maxapplications: 8
            resources:
              guaranteed: {memory: 1G}
              max: {memory: 10G, vcore: 10}
            childtemplate:
              maxapplications: 4
              properties: {application.sort.policy: fair}
              resources:
                guaranteed: {memory: 100M}
                max: {memory: 2G}
            properties:
              application.sort.priority: enabled
              priority.policy: fence
              priority.offset: "5"
              preemption.policy: default
              preemption.delay: 10s
              quota.preemption.delay: 30s
              application.unschedasks.backoff: "3"
              application.unschedasks.backoff.delay: 5s
              my.custom.property: x
            limits:
              - limit: sue
                users: [sue]
                groups: [dev, '*']
                maxresources: {memory: 5G}
                maxapplications: 2
"""


def test_every_key_yunikorn_knows_is_honoured_or_warned_about() -> None:
    loaded = load_config(EVERY_KEY)
    part = loaded.config.partitions[0]
    warnings = [str(w) for w in loaded.warnings]

    def warned(path: str, words: str) -> bool:
        return any(w.startswith(path) and words in w for w in warnings)

    # Accepted with a warning that names the key: pykorn does not act on these.
    assert warned("checksum", "checksum is ignored")
    assert warned("partitions[0].statedumpfilepath", "statedumpfilepath is ignored")
    tenants_props = "partitions[0].queues[0].queues[0].properties"
    assert warned(f"{tenants_props}.my.custom.property", "unknown property; it has no effect")
    assert len(warnings) == 3, warnings  # and nothing else is in doubt
    # Honoured: read into the configuration the scheduler runs on.
    assert part.user_group_resolver == "os"
    assert part.preemption.enabled and part.preemption.quota_preemption_enabled
    assert part.node_sort_policy.type == "binpacking"
    assert dict(part.node_sort_policy.resource_weights) == {"memory": 1.5, "vcore": 2.0}
    rule = part.placement_rules[0]
    assert (rule.name, rule.value, rule.create) == ("tag", "namespace", True)
    assert rule.parent is not None and (rule.parent.name, rule.parent.value) == ("fixed", "tenants")
    assert (rule.filter.type, rule.filter.users, rule.filter.groups) == ("allow", ("sue",), ("dev",))
    root = part.root
    assert (root.submit_acl, root.admin_acl) == ("*", "ops")
    tenants = root.queues[0]
    assert tenants.parent and tenants.max_applications == 8
    assert tenants.guaranteed == {"memory": 10**9} and tenants.max == {"memory": 10 * 10**9, "vcore": 10_000}
    template = tenants.child_template
    assert template is not None and template.max_applications == 4 and template.max == {"memory": 2 * 10**9}
    assert dict(tenants.properties)["priority.offset"] == "5"
    table = limit_table(root)
    assert table["root"].user_wildcard is not None  # the partition's limits are root's
    assert table["root.tenants"].users["sue"].max_applications == 2
    assert list(table["root.tenants"].groups) == ["dev"] and table["root.tenants"].group_wildcard is not None


def test_pykorn_config_validate_prints_each_warning_and_the_limits(tmp_path: Path) -> None:
    path = tmp_path / "queues.yaml"
    path.write_text(EVERY_KEY)
    out = io.StringIO()
    assert validate_file(path, out) == 0
    text = out.getvalue()
    assert text.count("warning: ") == 3
    assert "warning: checksum (line 2): checksum is ignored" in text
    assert "limits: users sue, groups dev, * -> maxresources {memory: 5.0G}, maxapplications 2" in text


@pytest.mark.parametrize(
    ("where", "text", "words"),
    [
        (
            "top level",
            "partitions: [{name: default, queues: [{name: root}]}]\nextra: 1\n",
            "unknown key 'extra'",
        ),
        (
            "partition",
            "partitions: [{name: default, nodes: 3, queues: [{name: root}]}]\n",
            "unknown key 'nodes'",
        ),
        (
            "queue",
            "partitions: [{name: default, queues: [{name: root, weight: 3}]}]\n",
            "unknown key 'weight'",
        ),
        (
            "limit",
            "partitions: [{name: default, queues: [{name: root, limits: [{users: [a], maxapps: 3}]}]}]\n",
            "unknown key 'maxapps'",
        ),
        (
            "parent: false with children",
            "partitions: [{name: default, queues: [{name: root, queues: [{name: p, parent: false, "
            "queues: [{name: c}]}]}]}]\n",
            "has child queues but says parent: false",
        ),
        (
            "a child's maxapplications above its parent's",
            "partitions: [{name: default, queues: [{name: root, queues: [{name: p, maxapplications: 2, "
            "queues: [{name: c, maxapplications: 3}]}]}]}]\n",
            "maxapplications 3 of queue 'c' is above its parent's 2",
        ),
        (
            "a fixed rule to a queue that does not exist",
            "partitions: [{name: default, placementrules: [{name: fixed, value: nowhere}], "
            "queues: [{name: root}]}]\n",
            "names root.nowhere, which does not exist, and create is false",
        ),
        (
            "a fixed rule to a parent queue",
            "partitions: [{name: default, placementrules: [{name: fixed, value: p}], "
            "queues: [{name: root, queues: [{name: p, parent: true, queues: [{name: c}]}]}]}]\n",
            "names root.p, a parent queue",
        ),
        (
            "a full path below a parent rule",
            "partitions: [{name: default, placementrules: [{name: fixed, value: root.p.c, "
            "parent: {name: fixed, value: p}}], "
            "queues: [{name: root, queues: [{name: p, queues: [{name: c}]}]}]}]\n",
            "is a full path, but a parent rule decides the queue above it",
        ),
        (
            "a fixed rule that cannot create below a leaf",
            "partitions: [{name: default, placementrules: [{name: fixed, value: leaf.x, create: true}], "
            "queues: [{name: root, queues: [{name: leaf}]}]}]\n",
            "which cannot be made: leaf on its path is a leaf",
        ),
    ],
)
def test_what_is_refused_says_what_and_where(where: str, text: str, words: str) -> None:
    with pytest.raises(ConfigError) as info:
        load_config(text)
    assert any(words in str(p) for p in info.value.problems), (where, [str(p) for p in info.value.problems])
