"""A namespace's annotations as application tags, as YuniKorn's shim reads them."""

from __future__ import annotations

import json
from typing import Any

from shim_k8s.readers import namespaces as ns
from si.v1 import tags as wire


def _namespace(**annotations: str) -> dict[str, Any]:
    return {
        "metadata": {
            "name": "team",
            "annotations": {f"yunikorn.apache.org/{k}": v for k, v in annotations.items()},
        }
    }


def _resources(tag: str) -> dict[str, int]:
    return {k: v["value"] for k, v in json.loads(tag)["resources"].items()}


def test_quota_guaranteed_max_apps_and_parent_queue_become_tags() -> None:
    out = ns.application_tags(_namespace(**{
        "namespace.quota": '{"cpu": "1500m", "memory": "4Gi", "nvidia.com/gpu": "2"}',
        "namespace.guaranteed": '{"memory": "1G"}',
        "namespace.maxApps": "12",
        "parentqueue": "root.tenants",
    }))  # fmt: skip
    assert _resources(out.tags[wire.TAG_QUOTA]) == {"vcore": 1500, "memory": 4 * 2**30, "nvidia.com/gpu": 2}
    assert _resources(out.tags[wire.TAG_GUARANTEED]) == {"memory": 10**9}
    assert out.tags[wire.TAG_MAX_APPS] == "12" and out.tags[wire.TAG_PARENT_QUEUE] == "root.tenants"
    assert not out.warnings


def test_the_deprecated_max_annotations_still_work_with_a_warning() -> None:
    out = ns.application_tags(_namespace(**{"namespace.max.cpu": "2", "namespace.max.memory": "1Gi"}))
    assert _resources(out.tags[wire.TAG_QUOTA]) == {"vcore": 2000, "memory": 2**30}
    assert out.warnings and "deprecated" in out.warnings[0]
    both = ns.application_tags(_namespace(**{"namespace.quota": '{"cpu": "1"}', "namespace.max.cpu": "2"}))
    assert _resources(both.tags[wire.TAG_QUOTA]) == {"vcore": 1000}  # namespace.quota wins, as upstream
    assert "namespace.quota is used" in both.warnings[0]


def test_values_that_cannot_be_read_are_left_out_and_named() -> None:
    out = ns.application_tags(_namespace(**{
        "namespace.quota": "{oops", "namespace.guaranteed": '{"memory": "0"}', "namespace.maxApps": "-3",
    }))  # fmt: skip
    assert out.tags == {}
    assert [w.split(":")[0] for w in out.warnings] == [
        "yunikorn.apache.org/namespace.quota", "yunikorn.apache.org/namespace.guaranteed",
        "yunikorn.apache.org/namespace.maxApps",
    ]  # fmt: skip


def test_enable_and_generate_flags_are_three_valued() -> None:
    assert ns.flag(_namespace(**{"namespace.enableYuniKorn": "TRUE"}), ns.ENABLE_YUNIKORN) is True
    assert ns.flag(_namespace(**{"namespace.generateAppId": "false"}), ns.GENERATE_APP_ID) is False
    assert ns.flag(_namespace(), ns.GENERATE_APP_ID) is None
    assert ns.flag(None, ns.ENABLE_YUNIKORN) is None
