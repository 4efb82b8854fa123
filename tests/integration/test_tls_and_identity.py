"""TLS and mutual TLS on the gRPC port of a real `pykorn core`, and RM isolation by certificate.

Two cores, each started once for the module: one serving TLS with a server certificate only, one
requiring client certificates (mutual TLS), where a certificate's common name is the only rmID its
holder may act as. Certificates are made fresh by tests/tls_certs.py.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path

import aiohttp
import grpc
import pytest

from rmclient.core_process import CoreProcess
from rmclient.tls import ClientTLS
from si.v1 import si_pb2, si_pb2_grpc
from tests.integration.core_helpers import running
from tests.integration.rest_helpers import CONFIG, get_json
from tests.recording_client import RecordingClient
from tests.tls_certs import PKI, make_pki

SECRET = "s3cr3t-extra-config-value"
NODE = {"memory": 8_000, "vcore": 8_000}


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> PKI:
    return make_pki(tmp_path_factory.mktemp("pki"))


@pytest.fixture(scope="module")
def tls_core(pki: PKI) -> Iterator[CoreProcess]:
    server = ["--tls-cert", str(pki.server.cert), "--tls-key", str(pki.server.key)]
    yield from running(CoreProcess(rest_listen="", extra_args=server, client_tls=ClientTLS(pki.ca)))


@pytest.fixture(scope="module")
def mtls_core(pki: PKI) -> Iterator[CoreProcess]:
    args = [
        "--tls-cert",
        str(pki.server.cert),
        "--tls-key",
        str(pki.server.key),
        "--tls-client-ca",
        str(pki.ca),
    ]
    args += ["--log-level", "debug"]  # the most the core ever logs: what the secret test needs
    yield from running(CoreProcess(extra_args=args, client_tls=_as(pki, "rm-a")))


def _as(pki: PKI, name: str) -> ClientTLS:
    """TLS settings of a client holding the certificate issued to `name` (CN = name)."""
    return ClientTLS(pki.ca, pki.clients[name].cert, pki.clients[name].key)


async def _register_raw(address: str, tls: ClientTLS | None, rm_id: str = "rm-x") -> None:
    """One registration call, with a short deadline so a refused handshake fails fast."""
    channel = (
        grpc.aio.insecure_channel(address)
        if tls is None
        else grpc.aio.secure_channel(address, tls.credentials(), options=tls.channel_options())
    )
    async with channel:
        stub = si_pb2_grpc.SchedulerStub(channel)
        await stub.RegisterResourceManager(si_pb2.RegisterResourceManagerRequest(rmID=rm_id), timeout=5)


async def _schedule_one(
    client: RecordingClient, node: str = "node-1", app: str = "app-1"
) -> si_pb2.Allocation:
    """Register, add a node and an application, ask once: the allocation the core answers with."""
    await client.register()
    await client.add_node(node, NODE)
    await client.wait_for(lambda: node in client.seen.accepted_nodes, what=f"{node} accepted")
    await client.add_application(app, "root.default")
    await client.wait_for(lambda: app in client.seen.accepted_apps, what=f"{app} accepted")
    await client.ask(app, f"{app}-task", {"memory": 1_000, "vcore": 1_000})
    await client.wait_for(lambda: f"{app}-task" in client.seen.allocations, what="the allocation")
    return client.seen.allocations[f"{app}-task"]


# Server-only TLS ------------------------------------------------------------------------------------
async def test_a_plaintext_client_is_refused_by_a_tls_core(tls_core: CoreProcess) -> None:
    with pytest.raises(grpc.aio.AioRpcError) as refused:
        await _register_raw(tls_core.address, None)
    assert refused.value.code() == grpc.StatusCode.UNAVAILABLE


async def test_a_client_that_does_not_trust_the_cores_ca_is_refused(tls_core: CoreProcess, pki: PKI) -> None:
    with pytest.raises(grpc.aio.AioRpcError) as refused:
        await _register_raw(tls_core.address, ClientTLS(pki.other_ca))
    assert refused.value.code() == grpc.StatusCode.UNAVAILABLE


async def test_scheduling_works_end_to_end_over_tls(tls_core: CoreProcess, pki: PKI) -> None:
    # Without client certificates any rmID may register, as on a plaintext core.
    async with RecordingClient(tls_core.address, "rm-tls", tls=ClientTLS(pki.ca)) as client:
        allocation = await _schedule_one(client)
        assert allocation.nodeID == "node-1"
        assert not client.seen.stream_errors


# Mutual TLS ------------------------------------------------------------------------------------------
async def test_mtls_refuses_a_client_without_a_certificate(mtls_core: CoreProcess, pki: PKI) -> None:
    with pytest.raises(grpc.aio.AioRpcError) as refused:
        await _register_raw(mtls_core.address, ClientTLS(pki.ca), rm_id="rm-a")
    assert refused.value.code() == grpc.StatusCode.UNAVAILABLE


async def test_mtls_refuses_a_certificate_from_another_ca(mtls_core: CoreProcess, pki: PKI) -> None:
    # The stranger's certificate even names rm-a: only the core's client CA makes a name count.
    stranger = ClientTLS(pki.ca, pki.stranger.cert, pki.stranger.key)
    with pytest.raises(grpc.aio.AioRpcError) as refused:
        await _register_raw(mtls_core.address, stranger, rm_id="rm-a")
    assert refused.value.code() == grpc.StatusCode.UNAVAILABLE


async def test_an_rm_acts_as_the_rm_its_certificate_names(mtls_core: CoreProcess, pki: PKI) -> None:
    async with RecordingClient(mtls_core.address, "rm-a", tls=_as(pki, "rm-a")) as client:
        allocation = await _schedule_one(client, node="own-node", app="own-app")
        assert allocation.nodeID == "own-node"
        update = await client.update_configuration(CONFIG)
        assert update.accepted, update.errors
        preview = await client.dry_run_configuration(CONFIG)
        assert preview.valid, preview.errors
        events = await client.stream_events(from_id=0)
        first = await events.read()
        assert isinstance(first, si_pb2.EventStreamResponse) and first.event.type  # its own events
        events.cancel()


async def test_registering_and_configuring_as_another_rm_is_permission_denied(
    mtls_core: CoreProcess, pki: PKI
) -> None:
    async with RecordingClient(mtls_core.address, "rm-b", tls=_as(pki, "rm-a")) as impostor:
        calls: dict[str, Callable[[], Awaitable[object]]] = {
            "RegisterResourceManager": impostor.register,
            "UpdateConfiguration": lambda: impostor.update_configuration(CONFIG),
            "DryRunConfiguration": lambda: impostor.dry_run_configuration(CONFIG),
            "StreamEvents": impostor.stream_events,
        }
        for name, call in calls.items():
            with pytest.raises(grpc.aio.AioRpcError) as denied:
                await call()
            assert denied.value.code() == grpc.StatusCode.PERMISSION_DENIED, name
            assert "'rm-a'" in (denied.value.details() or "") and "'rm-b'" in (
                denied.value.details() or ""
            ), name


async def test_stream_events_of_another_registered_rm_are_refused(mtls_core: CoreProcess, pki: PKI) -> None:
    async with RecordingClient(mtls_core.address, "rm-b", tls=_as(pki, "rm-b")) as owner:
        await owner.register()  # rm-b exists, so only the identity can be why rm-a is refused
        async with RecordingClient(mtls_core.address, "rm-b", tls=_as(pki, "rm-a")) as other:
            with pytest.raises(grpc.aio.AioRpcError) as denied:
                await other.stream_events(from_id=0)
            assert denied.value.code() == grpc.StatusCode.PERMISSION_DENIED


async def test_stream_messages_for_another_rm_are_rejected_while_the_stream_serves_its_own(
    mtls_core: CoreProcess, pki: PKI
) -> None:
    async with (
        RecordingClient(mtls_core.address, "rm-b", tls=_as(pki, "rm-b")) as victim,
        RecordingClient(mtls_core.address, "rm-a", tls=_as(pki, "rm-a")) as client,
    ):
        await victim.register()  # registered: the refusals below cannot be "rm-b is not registered"
        await client.register()
        await client.send_node_request(
            si_pb2.NodeRequest(
                rmID="rm-b", nodes=[si_pb2.NodeInfo(nodeID="planted", action=si_pb2.NodeInfo.CREATE)]
            )
        )
        await client.send_application_request(
            si_pb2.ApplicationRequest(
                rmID="rm-b",
                new=[si_pb2.AddApplicationRequest(applicationID="planted-app", queueName="root.default")],
            )
        )
        await client.send_allocation_request(
            si_pb2.AllocationRequest(
                rmID="rm-b", allocations=[si_pb2.Allocation(allocationKey="planted-ask", applicationID="x")]
            )
        )
        await client.wait_for(
            lambda: bool(
                client.seen.rejected_nodes and client.seen.rejected_apps and client.seen.rejected_allocations
            ),
            what="a rejection on each stream",
        )
        rejections = [
            (client.seen.rejected_nodes[0].nodeID, client.seen.rejected_nodes[0].reason),
            (client.seen.rejected_apps[0].applicationID, client.seen.rejected_apps[0].reason),
            (client.seen.rejected_allocations[0].allocationKey, client.seen.rejected_allocations[0].reason),
        ]
        assert [item for item, _ in rejections] == ["planted", "planted-app", "planted-ask"]
        for _, reason in rejections:
            assert "'rm-a'" in reason and "'rm-b'" in reason, reason
        # The same streams go on serving rm-a.
        allocation = await _schedule_one(client, node="a-node", app="a-app")
        assert allocation.nodeID == "a-node"
        assert not client.seen.stream_errors and not client.seen.stream_ends
        # And rm-b's partition holds nothing of what was planted.
        async with aiohttp.ClientSession() as session:
            nodes = await get_json(session, f"{mtls_core.rest_url}/ws/v1/partition/%5Brm-b%5Ddefault/nodes")
        assert nodes == []
        assert not victim.seen.accepted_nodes and not victim.seen.accepted_apps


async def test_secret_extra_config_never_reaches_the_core_log(mtls_core: CoreProcess, pki: PKI) -> None:
    async with RecordingClient(mtls_core.address, "rm-a", tls=_as(pki, "rm-a")) as client:
        await client.stub.RegisterResourceManager(
            si_pb2.RegisterResourceManagerRequest(rmID="rm-a", extraConfig={"db.password": SECRET})
        )
        update = await client.stub.UpdateConfiguration(
            si_pb2.UpdateConfigurationRequest(rmID="rm-a", config=CONFIG, extraConfig={"token": SECRET})
        )
        assert update.accepted, update.errors
    log = mtls_core.log_text()
    # Both requests were logged (the core runs at debug level), with the secret field redacted.
    assert log.count('"extraConfig": "<redacted>"') >= 2, log[-3000:]
    assert SECRET not in log


# Startup errors ------------------------------------------------------------------------------------
def _core_exits(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pykorn_cli", "core", "--listen", "127.0.0.1:0", "--rest-listen", "", *args],
        capture_output=True,
        text=True,
        timeout=30,
    )


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--tls-cert", "{server_cert}"], "--tls-cert needs --tls-key"),
        (["--tls-cert", "{server_cert}", "--tls-key", "{missing}"], "cannot read {missing}: No such file"),
        (
            ["--tls-cert", "{server_cert}", "--tls-key", "{client_key}"],
            "the key does not belong to the certificate",
        ),
        (["--tls-client-ca", "{ca}"], "a client CA needs TLS"),
        (
            ["--tls-cert", "{server_cert}", "--tls-key", "{server_key}", "--tls-client-ca", "{server_key}"],
            "{server_key} holds no PEM CA certificate",
        ),
        (["--rest-tls-key", "{server_key}"], "--rest-tls-key needs --rest-tls-cert"),
    ],
    ids=[
        "cert-without-key",
        "unreadable-key",
        "mismatched-key",
        "client-ca-without-tls",
        "not-pem",
        "rest-key",
    ],
)
def test_unusable_tls_settings_stop_the_core_with_a_readable_message(
    pki: PKI, tmp_path: Path, flags: list[str], message: str
) -> None:
    paths = {
        "server_cert": pki.server.cert,
        "server_key": pki.server.key,
        "client_key": pki.clients["rm-a"].key,
        "ca": pki.ca,
        "missing": tmp_path / "missing.pem",
    }
    result = _core_exits(*(flag.format(**paths) for flag in flags))
    assert result.returncode == 2, result.stderr
    assert message.format(**paths) in result.stderr
    assert result.stderr.startswith("pykorn core: ") and "Traceback" not in result.stderr
