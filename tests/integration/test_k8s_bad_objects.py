"""What a real cluster holds that is not what the shim expects: the whole shim (`run_shim`) against the
HTTP emulation of the API and a real core. One object's fault stays with that object (refused, or
YuniKorn's fallback, with a Warning event and a metric); every other pod is scheduled as before."""

from __future__ import annotations

import base64
import gzip
import json
from collections.abc import Callable
from typing import Any
from urllib.parse import quote

import aiohttp
import pytest

from shim_k8s import main as shim_main
from shim_k8s.api import startup
from tests.integration.core_helpers import free_port
from tests.integration.kube_api import FakeKubeAPI, condition
from tests.integration.rest_helpers import get_json, partition_url, rest_until
from tests.integration.test_k8s_api import _left_pending, _until, shim_running
from tests.integration.test_k8s_faults import _metrics
from tests.integration.test_k8s_shim import QUEUES, configmap, node, pod

USER_INFO = "yunikorn.apache.org/user.info"


def _events(api: FakeKubeAPI, name: str, reason: str) -> list[str]:
    return [
        e["message"] for e in api.events
        if e["involvedObject"]["name"] == name and e["reason"] == reason and e["type"] == "Warning"
    ]  # fmt: skip


def _event_says(api: FakeKubeAPI, name: str, reason: str, *words: str) -> Callable[[], bool]:
    return lambda: any(all(w in m for w in words) for m in _events(api, name, reason))


def _with(base: dict[str, Any], requests: dict[str, Any] | None = None, **meta: Any) -> dict[str, Any]:
    made = json.loads(json.dumps(base))
    if requests is not None:
        made["spec"]["containers"][0]["resources"]["requests"] = requests
    made["metadata"].update(meta)
    return made


async def test_one_bad_pod_is_refused_with_its_reason_and_every_other_pod_is_scheduled(
    api: FakeKubeAPI, core_address: str, rest_url: str, rm_id: str
) -> None:
    """The issue's cases: a user.info that is not an object, quantities the API server accepts that
    look odd, one it would not, another scheduler's pod whose size cannot be read. Before, the first
    of these stopped `pykorn k8s` (exit 1, and again at every restart)."""
    await api.put("nodes", node("n1", memory="16Gi", cpu="16"))
    port = free_port()
    async with shim_running(api, core_address, rm_id, metrics_listen=f"127.0.0.1:{port}"):
        first = pod("alice-first", labels={})
        first["metadata"]["labels"] = {"applicationId": "team"}
        first["metadata"]["annotations"] = {USER_INFO: "[1]"}
        await api.put("pods", first)
        await api.put("pods", _with(pod("bad-size"), {"memory": "4x"}))
        await api.put("pods", _with(pod("odd"), {"memory": "400m", "cpu": "1500u"}))
        foreign = _with(pod("dns", scheduler="default-scheduler", node_name="n1"), {"memory": "lots"})
        await api.put("pods", foreign)
        await api.put("pods", pod("after"))
        await _until(lambda: {("alice-first", "n1"), ("odd", "n1"), ("after", "n1")} <= set(api.bindings),
                     "every readable pod bound")  # fmt: skip
        # The user.info: YuniKorn's fallback, and the pod says why.
        await _until(_event_says(api, "alice-first", "UserInfoFallback", USER_INFO, "not a JSON object"), "")
        async with aiohttp.ClientSession() as session:
            app = await get_json(session, f"{partition_url(rest_url, rm_id)}/application/team")
        assert app["user"] == "nobody"
        # The unreadable quantity: refused, with the field named, on the pod's events and condition.
        await _until(_event_says(api, "bad-size", "Refused", "spec.containers[0].resources.requests.memory",
                                 "'4x' is not a quantity"), "the refusal of bad-size")  # fmt: skip
        await _until(lambda: (condition(api.get("pods", "bad-size"), "PodScheduled") or {}).get("reason")
                     == "SchedulerError", "bad-size's condition")  # fmt: skip
        await _until(_event_says(api, "dns", "Refused", "'lots'", "not counted on its node"), "dns refused")
        # Corrected, it is looked at again and scheduled.
        await api.put("pods", _with(api.get("pods", "bad-size") or {}, {"memory": "1Gi"}))
        await _until(lambda: ("bad-size", "n1") in api.bindings, "bad-size once corrected")
        found = await _metrics(f"http://127.0.0.1:{port}/metrics")
        assert found['pykorn_k8s_objects_refused_total{kind="pods",reason="invalid-quantity"}'] == 2
        assert found['pykorn_k8s_objects_fallback_total{kind="pods",reason="user-info"}'] == 1
        assert len(api.bindings) == len(set(api.bindings)) == 4


async def test_bad_objects_present_at_start_are_refused_and_the_shim_schedules_the_rest(
    api: FakeKubeAPI, core_address: str, rm_id: str
) -> None:
    """What the initial list holds: a crash there was a crash loop. Each kind refuses its own."""
    await api.put("nodes", node("n1", memory="8Gi"))
    await api.put("nodes", {"metadata": {"name": "broken"}, "status": {"allocatable": {"memory": "x"}}})
    await api.put("priorityclasses", {"metadata": {"name": "odd-class"}, "value": "high"})
    await api.put("configmaps", {"metadata": {"name": "yunikorn-configs", "namespace": "yunikorn"},
                                 "data": {"queues.yaml": 5}})  # fmt: skip
    await api.put("namespaces", {"metadata": {"name": "shop", "labels": ["not", "a", "map"]}})
    await api.put("persistentvolumeclaims", {"metadata": {"name": "c", "namespace": "shop"}, "spec": "x"})
    bad = pod("bad-meta")
    bad["metadata"]["labels"] = {"applicationId": 7}
    await api.put("pods", bad)
    await api.put("pods", _with(pod("bad-spec"), None) | {"spec": ["not", "a", "spec"]})
    await api.put("pods", pod("good"))
    async with shim_running(api, core_address, rm_id):
        await _until(lambda: ("good", "n1") in api.bindings, "the good pod bound")
        refused = {e["involvedObject"]["name"]: e["message"] for e in api.events if e["reason"] == "Refused"}
        await _until(lambda: {"broken", "odd-class", "yunikorn-configs", "shop", "c", "bad-meta", "bad-spec"}
                     <= {e["involvedObject"]["name"] for e in api.events if e["reason"] == "Refused"},
                     "every bad object refused")  # fmt: skip
        refused = {e["involvedObject"]["name"]: e["message"] for e in api.events if e["reason"] == "Refused"}
        assert "status.allocatable.memory" in refused["broken"]
        assert "value: expected a whole number" in refused["odd-class"]
        assert "data: expected an object of strings" in refused["yunikorn-configs"]
        assert "metadata.labels: expected an object of strings" in refused["shop"]
        assert "metadata.labels[applicationId]: expected a string, got 7" in refused["bad-meta"]
        assert "spec: expected an object" in refused["bad-spec"]
        assert [n for n, _ in api.bindings] == ["good"]


async def test_the_deprecated_username_label_names_the_user_and_says_it_is_deprecated(
    api: FakeKubeAPI, core_address: str, rest_url: str, rm_id: str
) -> None:
    await api.put("nodes", node("n1"))
    labelled = pod("carols")
    labelled["metadata"]["labels"] = {"applicationId": "carols-app", "yunikorn.apache.org/username": "carol"}
    await api.put("pods", labelled)
    async with shim_running(api, core_address, rm_id):
        await _until(lambda: ("carols", "n1") in api.bindings, "bound")
        await _until(
            _event_says(api, "carols", "UsernameLabelFallback", "deprecated", USER_INFO), "the event"
        )
        async with aiohttp.ClientSession() as session:
            app = await get_json(session, f"{partition_url(rest_url, rm_id)}/application/carols-app")
        assert app["user"] == "carol"


def _gzipped(text: str) -> str:
    return base64.b64encode(gzip.compress(text.encode())).decode()


async def test_a_gzipped_queue_configuration_in_binary_data_is_the_one_used(
    api: FakeKubeAPI, core_address: str, rest_url: str, rm_id: str
) -> None:
    """YuniKorn's way past the 1 MiB ConfigMap limit: binaryData `queues.yaml.gz`. Before, it was
    ignored without a word and the core ran its default queues."""
    cm = configmap("1Gi")
    cm["binaryData"] = {"queues.yaml.gz": _gzipped(QUEUES % {"max": "3Gi"}), "extra.bin": _gzipped("x")}
    await api.put("configmaps", cm)  # data's queues.yaml says 1Gi; binaryData's wins, as in YuniKorn
    await api.put("nodes", node("n1"))
    async with shim_running(api, core_address, rm_id), aiohttp.ClientSession() as session:
        queue = f"{partition_url(rest_url, rm_id)}/queue/{quote('root.capped', safe='')}"
        body = await rest_until(session, queue, lambda q: q.get("maxResource"), "the capped queue")
        assert body["maxResource"]["memory"] == 3 * 2**30
        await _until(_event_says(api, "yunikorn-configs", "ConfigKeyIgnored", "binaryData.extra.bin"), "")


async def test_a_yunikorn_placeholder_from_before_a_switch_is_a_placeholder(
    api: FakeKubeAPI, core_address: str, rest_url: str, rm_id: str
) -> None:
    """YuniKorn 1.6+ marks its placeholders with internal.yunikorn.apache.org/placeholder. One running
    when pykorn takes over is a placeholder of the gang, not a pod of its own: no new placeholders are
    made for the gang, and the core holds it as a placeholder."""
    groups = json.dumps(
        [{"name": "workers", "minMember": 1, "minResource": {"cpu": "100m", "memory": "1Gi"}}]
    )
    await api.put("nodes", node("n1", memory="8Gi"))
    driver = pod("driver")
    driver["metadata"]["labels"] = {"yunikorn.apache.org/app-id": "spark-1"}
    driver["metadata"]["annotations"] = {"yunikorn.apache.org/task-groups": groups}
    holder = pod("tg-spark-1-workers-abc", node_name="n1")
    holder["metadata"]["labels"] = {"yunikorn.apache.org/app-id": "spark-1"}
    holder["metadata"]["annotations"] = {
        "internal.yunikorn.apache.org/placeholder": "true", "yunikorn.apache.org/task-group-name": "workers",
        "yunikorn.apache.org/task-groups": groups,
    }  # fmt: skip
    await api.put("pods", holder)
    await api.put("pods", driver)
    async with shim_running(api, core_address, rm_id), aiohttp.ClientSession() as session:
        url = f"{partition_url(rest_url, rm_id)}/application/spark-1"

        def holds_the_placeholder(app: dict[str, Any]) -> bool:
            return any(a["allocationKey"] == "uid-tg-spark-1-workers-abc" and a.get("placeholder")
                       for a in app.get("allocations", []))  # fmt: skip

        await rest_until(session, url, holds_the_placeholder, "the placeholder held as one")
        assert api.created == []  # the gang has its placeholder already


async def test_a_pod_resized_in_place_is_counted_at_its_new_size_even_past_its_queues_max(
    api: FakeKubeAPI, core_address: str, rest_url: str, rm_id: str
) -> None:
    """The kubelet resized a running pod (its containers' statuses say so): the core counts the new
    size on the node, the queue, the application and the user, as kube-scheduler would; the queue is
    then over its max, so the next pod of that queue waits."""
    await api.put("configmaps", configmap("2Gi"))
    await api.put("nodes", node("n1", memory="8Gi"))
    web = pod("web")
    web["metadata"]["labels"] = {"queue": "root.capped", "applicationId": "shop-app"}
    await api.put("pods", web)
    async with shim_running(api, core_address, rm_id), aiohttp.ClientSession() as session:
        await _until(lambda: ("web", "n1") in api.bindings, "web bound")
        running = json.loads(json.dumps(api.get("pods", "web")))
        running["spec"]["containers"][0]["resources"]["requests"]["memory"] = "3Gi"
        running["status"] = {"phase": "Running", "containerStatuses": [{
            "name": "c", "allocatedResources": {"cpu": "100m", "memory": "3Gi"},
            "resources": {"requests": {"cpu": "100m", "memory": "3Gi"}},
        }]}  # fmt: skip
        await api.put("pods", running)
        base = partition_url(rest_url, rm_id)
        queue = await rest_until(
            session, f"{base}/queue/{quote('root.capped', safe='')}",
            lambda q: (q.get("allocatedResource") or {}).get("memory") == 3 * 2**30, "the queue at 3Gi",
        )  # fmt: skip
        assert queue["maxResource"]["memory"] == 2 * 2**30
        n1 = await get_json(session, f"{base}/node/n1")
        assert n1["allocated"]["memory"] == 3 * 2**30
        app = await get_json(session, f"{base}/application/shop-app")
        assert app["usedResource"]["memory"] == 3 * 2**30
        user = await get_json(session, f"{base}/usage/user/nobody")
        assert user["queues"]["resourceUsage"]["memory"] == 3 * 2**30
        more = pod("more", memory="100Mi")
        more["metadata"]["labels"] = {"queue": "root.capped", "applicationId": "shop-app"}
        await api.put("pods", more)
        await _left_pending(rest_url, rm_id, ["more"], running=["web"])


async def test_an_api_server_that_never_answers_stops_the_start_with_one_reason(
    core_address: str, rm_id: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A cause of the cluster's, not one object's: the lists are tried again, then the shim stops
    saying why (`pykorn k8s` prints it and exits 3) instead of a traceback."""
    monkeypatch.setattr(startup, "START_ATTEMPTS", 2)
    closed = free_port()
    with pytest.raises(startup.StartupError, match=f"API server at http://127.0.0.1:{closed} did not answer"):
        await shim_main.run_shim(core_address, host=f"http://127.0.0.1:{closed}", rm_id=rm_id)


async def test_a_refused_pod_that_finishes_is_released_and_a_waiting_pod_that_fails_is_refused_alone(
    api: FakeKubeAPI, core_address: str, rm_id: str
) -> None:
    await api.put("nodes", node("n1", memory="8Gi"))
    async with shim_running(api, core_address, rm_id):
        # Waiting for a class that does not exist yet: one of them cannot be read when it is looked at.
        await api.put("pods", pod("waits-good", priorityClassName="late"))
        await api.put("pods", _with(pod("waits-bad", priorityClassName="late"), {"memory": "4x"}))
        await _until(lambda: len(_events(api, "waits-bad", "PriorityClassNotFound")) == 1, "both waiting")
        await api.put("priorityclasses", {"metadata": {"name": "late"}, "value": 5})
        await _until(lambda: ("waits-good", "n1") in api.bindings, "the readable one bound")
        await _until(_event_says(api, "waits-bad", "Refused", "'4x'"), "the unreadable one refused")
        assert not _events(api, "late", "Refused")  # the class itself is fine, and kept
        # A refused pod that runs to its end (its status changes only) is gone for the shim too.
        done = json.loads(json.dumps(api.get("pods", "waits-bad")))
        done["status"] = {"phase": "Failed"}
        await api.put("pods", done)
        await api.put("pods", pod("after"))
        await _until(lambda: ("after", "n1") in api.bindings, "the next pod")


async def test_pods_on_a_node_the_core_did_not_know_yet_are_sent_again_once_it_does(
    api: FakeKubeAPI, core_address: str, rest_url: str, rm_id: str
) -> None:
    """A pod's event may come before its node's (two watches), or its node was refused until
    corrected: the core refuses the running pod then, and gets it again once the node is added."""
    await api.put("nodes", node("n1", memory="8Gi"))
    await api.put("nodes", {"metadata": {"name": "n2", "uid": "node-n2"}, "status": {"allocatable": "x"}})
    await api.put("pods", pod("dns", scheduler="default-scheduler", node_name="n2", memory="3Gi"))
    await api.put("pods", pod("web", node_name="n2", memory="2Gi"))  # ours, from before a restart
    async with shim_running(api, core_address, rm_id), aiohttp.ClientSession() as session:
        await _until(lambda: _events(api, "n2", "Refused"), "the unreadable node refused")
        await api.put("nodes", node("n2", memory="8Gi"))  # corrected

        def holds_both(body: dict[str, Any]) -> bool:
            return body.get("occupied", {}).get("memory") == 3 * 2**30 and (
                body.get("allocated", {}).get("memory") == 2 * 2**30
            )

        await rest_until(session, f"{partition_url(rest_url, rm_id)}/node/n2", holds_both, "both on n2")


async def test_events_on_cluster_scoped_objects_are_where_kubectl_describe_looks(
    api: FakeKubeAPI, core_address: str, rm_id: str
) -> None:
    await api.put("nodes", {"metadata": {"name": "odd", "uid": "node-odd"}, "status": {"allocatable": 5}})
    async with shim_running(api, core_address, rm_id):
        await _until(lambda: _events(api, "odd", "Refused"), "the node refused")
    (event,) = [e for e in api.events if e["involvedObject"]["name"] == "odd"]
    assert event["involvedObject"] == {"kind": "Node", "name": "odd", "namespace": "", "uid": "node-odd"}
    assert event["metadata"]["namespace"] == "default"  # as the kubelet's events on nodes


async def test_a_queue_configuration_the_core_refuses_at_start_is_refused_not_fatal(
    api: FakeKubeAPI, core_address: str, rest_url: str, rm_id: str
) -> None:
    """Before, the core's refusal of the registration ended `pykorn k8s`, at every restart, while the
    ConfigMap stayed. Now the ConfigMap is refused with the core's reasons, the shim registers with the
    last configuration the core took (at a first start, none: the core's default) and schedules; once
    the ConfigMap is corrected, its configuration is taken."""
    broken = configmap("1Gi")
    broken["data"]["queues.yaml"] = "0"
    await api.put("configmaps", broken)
    await api.put("nodes", node("n1"))
    await api.put("pods", pod("first"))
    async with shim_running(api, core_address, rm_id), aiohttp.ClientSession() as session:
        await _until(lambda: ("first", "n1") in api.bindings, "a pod bound under the core's default")
        await _until(_event_says(api, "yunikorn-configs", "ConfigRejected", "expected a mapping"), "")
        await api.put("configmaps", configmap("3Gi"))
        queue = f"{partition_url(rest_url, rm_id)}/queue/{quote('root.capped', safe='')}"
        await rest_until(session, queue, lambda q: q.get("maxResource"), "the corrected configuration")
