"""/ws/v1/metrics exposes every metric of YuniKorn's pkg/metrics (tests/data/yunikorn_metrics_facts.json)
under its name, type and label names, with the label values upstream uses, and prints values exactly."""

from __future__ import annotations

import json
import re
from collections import defaultdict
from pathlib import Path

import aiohttp

from rmclient import messages
from tests.integration.rest_helpers import load_cluster
from tests.recording_client import RecordingClient

FACTS = json.loads((Path(__file__).parent.parent / "data" / "yunikorn_metrics_facts.json").read_text())
SAMPLE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? (\S+)$")
LABEL = re.compile(r'([a-zA-Z_]+)="((?:[^"\\]|\\.)*)"')
# Every value of these labels is always exposed (counts that may be 0); others only once they occur.
ALWAYS_ALL_VALUES = {
    "yunikorn_scheduler_container_allocation_attempt_total",
    "yunikorn_scheduler_application_submission_total",
    "yunikorn_scheduler_application_total",
    "yunikorn_scheduler_node",
    "yunikorn_scheduler_node_sorting_latency_milliseconds",
    "yunikorn_scheduler_<resource>_node_usage_total",
    "yunikorn_<queue>_queue_container",
}


async def _scrape(rest_url: str) -> tuple[dict[str, str], dict[str, list[dict[str, str]]], str]:
    async with aiohttp.ClientSession() as session, session.get(f"{rest_url}/ws/v1/metrics") as response:
        text = await response.text()
    types: dict[str, str] = {}
    samples: dict[str, list[dict[str, str]]] = defaultdict(list)
    for line in text.splitlines():
        if line.startswith("# TYPE "):
            _, _, name, kind = line.split(" ")
            types[name] = kind
        elif line and not line.startswith("#"):
            match = SAMPLE.match(line)
            assert match, f"not a sample: {line!r}"
            labels = dict(LABEL.findall(match.group(3) or ""))
            samples[match.group(1)].append(labels)
    return types, samples, text


def _families(pattern: str, types: dict[str, str]) -> list[str]:
    regex = re.compile(
        "^"
        + re.escape(pattern).replace("<resource>", "[a-z0-9_]+").replace("<queue>", "root[a-z0-9_]*")
        + "$"
    )
    return [name for name in types if regex.match(name)]


async def test_every_upstream_metric_is_exposed_with_its_labels(
    client: RecordingClient, rest_url: str
) -> None:
    await load_cluster(client)  # nodes, an application running in root.tenants.a, an ask pending
    await client.add_applications(
        messages.application("refused", "root.missing"), messages.application("short", "root.tenants.a")
    )
    await client.wait_apps_answered(3)
    await client.ask("short", "s0", {"memory": 100})
    await client.wait_allocations(3)  # load_cluster's two, and this one: short runs
    await client.remove_application("short")  # completed in root.tenants.a
    await client.barrier()
    types, samples, _ = await _scrape(rest_url)
    for fact in FACTS["metrics"]:
        names = _families(fact["name"], types)
        assert names, f"{fact['name']} is not exposed"
        for name in names:
            assert types[name] == fact["type"], (name, types[name])
            series = samples[name + "_bucket"] if fact["type"] == "histogram" else samples[name]
            assert series, f"{name} has no samples"
            for labels in series:
                assert set(labels) - {"le"} == set(fact["labels"]), (name, labels)
            if fact["type"] == "histogram":
                bounds = sorted(
                    float(s["le"]) for s in series if s["le"] != "+Inf" and len(s) == 1 + len(fact["labels"])
                )
                assert sorted(set(bounds)) == fact["buckets"], (name, bounds)
            if fact["name"] in ALWAYS_ALL_VALUES:
                for label, values in fact.get("label_values", {}).items():
                    seen = {s[label] for s in series}
                    assert set(values) <= seen, (name, label, set(values) - seen)


async def test_values_are_printed_exactly(client: RecordingClient, rest_url: str) -> None:
    await client.register(config="")
    await client.add_node("big-node", {"memory": 25_769_803_776, "vcore": 64_000})
    await client.wait_nodes_answered(1)
    _, _, text = await _scrape(rest_url)
    assert "25769803776" in text and "2.57698e+10" not in text
