"""`pykorn config validate` and `config diff` given the ConfigMap dump a migration starts with
(`kubectl get configmap yunikorn-configs yunikorn-defaults -o yaml`): the queues.yaml inside is read
as the shim reads it, and said so (pykorn_cli/configmap_dump.py)."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from core.config.report import validate_file
from pykorn_cli.configmap_dump import DumpError, queues_text

QUEUES = "partitions:\n  - name: default\n    queues:\n      - name: root\n        submitacl: '*'\n"


def config_map(name: str, data: dict[str, str]) -> str:
    lines = [
        f"  {key}: |\n" + "".join(f"    {line}\n" for line in value.splitlines())
        for key, value in data.items()
    ]
    head = f"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\n  namespace: yunikorn\n"
    return f"{head}data:\n{''.join(lines)}"


def as_list(*maps: str) -> str:
    items = "".join("- " + m.replace("\n", "\n  ").rstrip() + "\n" for m in maps)
    return f"apiVersion: v1\nkind: List\nitems:\n{items}"


def test_one_config_map_is_read_for_its_queues(tmp_path: Path) -> None:
    dump = tmp_path / "yunikorn-configs.yaml"
    dump.write_text(config_map("yunikorn-configs", {"queues.yaml": QUEUES, "log.level": "INFO"}))
    out = io.StringIO()
    assert validate_file(dump, out, unwrap=queues_text) == 0
    assert out.getvalue().splitlines()[:3] == [
        f"{dump}: read queues.yaml from the ConfigMap yunikorn-configs",
        "partition default (nodesortpolicy fair)",
        "  root: parent",
    ]


def test_in_a_list_yunikorn_configs_wins_over_yunikorn_defaults() -> None:
    other = QUEUES.replace("default", "gpu")
    text, note = queues_text(
        as_list(
            config_map("yunikorn-defaults", {"queues.yaml": other}),
            config_map("yunikorn-configs", {"queues.yaml": QUEUES}),
        )
    )
    assert (text, note) == (QUEUES, "read queues.yaml from the ConfigMap yunikorn-configs")
    text, note = queues_text(
        as_list(
            config_map("yunikorn-configs", {"log.level": "INFO"}),
            config_map("yunikorn-defaults", {"queues.yaml": other}),
        )
    )
    assert (text, note) == (other, "read queues.yaml from the ConfigMap yunikorn-defaults")


def test_a_dump_without_queues_says_what_that_means(tmp_path: Path) -> None:
    dump = tmp_path / "dump.yaml"
    dump.write_text(as_list(config_map("yunikorn-configs", {"log.level": "INFO"})))
    out = io.StringIO()
    assert validate_file(dump, out, unwrap=queues_text) == 1
    assert out.getvalue() == (
        f"{dump}: a ConfigMap dump (yunikorn-configs) with no queues.yaml in its data: without one the "
        "scheduler uses its default configuration; put the queues under data.queues.yaml of "
        "yunikorn-configs\n"
    )
    with pytest.raises(DumpError):
        queues_text(dump.read_text())


@pytest.mark.parametrize("text", [QUEUES, "partitions: [\n", "- a\n", "kind: Deployment\n"])
def test_anything_else_is_read_as_queues_yaml(text: str) -> None:
    assert queues_text(text) == (text, None)
