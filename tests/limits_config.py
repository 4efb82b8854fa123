"""queues.yaml text for the user and group limit tests: root > {parent} > leaves a and b, with limits
(YAML list text) on the parent queue and on leaf a, and any other entries written there."""

from __future__ import annotations


def _block(text: str, indent: int) -> str:
    return "".join(" " * indent + line + "\n" for line in text.strip().splitlines()) if text.strip() else ""


def _limits(text: str, indent: int) -> str:
    return " " * indent + "limits:\n" + _block(text, indent + 2) if text.strip() else ""


def limits_config(
    leaf_limits: str = "",
    parent_limits: str = "",
    leaf_extra: str = "",
    parent_extra: str = "",
    parent: str = "parent",
) -> str:
    parent_block = _block(parent_extra, 12) + (
        f"            limits:\n{_block(parent_limits, 14)}" if parent_limits else ""
    )
    leaf_block = _block(leaf_extra, 16) + (
        f"                limits:\n{_block(leaf_limits, 18)}" if leaf_limits else ""
    )
    return (
        "partitions:\n"
        "  - name: default\n"
        "    queues:\n"
        "      - name: root\n"
        '        submitacl: "*"\n'
        "        queues:\n"
        f"          - name: {parent}\n"
        f"{parent_block}"
        "            queues:\n"
        "              - name: a\n"
        f"{leaf_block}"
        "              - name: b\n"
    )
