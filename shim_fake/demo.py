"""`pykorn fake demo`: a short session against a core, printing what the core decided.

Two nodes, one application with more tasks than fit, then: some tasks finish and the pending ones
take their room; one node is decommissioned and its tasks come back as released; the application
is removed. Without --core it starts a core process on the bundled default config and stops it.
"""

from __future__ import annotations

from contextlib import AsyncExitStack
from typing import TextIO

from shim_fake.client import SchedulerClient
from shim_fake.core_process import CoreProcess
from shim_fake.messages import ask
from si.v1 import si_pb2

GiB = 1024**3
NODE = {"memory": 16 * GiB, "vcore": 8000}
TASK = {"memory": 4 * GiB, "vcore": 2000}
QUEUE = "root.default"
APP = "demo-app-1"
TASKS = 10
WAIT = 15.0


class DemoFailed(RuntimeError):
    pass


async def run_demo(core_address: str | None, out: TextIO) -> int:
    async with AsyncExitStack() as stack:
        core: CoreProcess | None = None
        if core_address is None:
            core = CoreProcess()
            await core.start()
            core_address = core.address
            out.write(f"started pykorn core on {core_address} (bundled default config)\n")
        try:
            client = SchedulerClient(core_address, "pykorn-demo")
            await stack.enter_async_context(client)
            await _session(client, out)
        except (DemoFailed, TimeoutError) as exc:
            out.write(f"demo failed: {exc}\n")
            if core is not None:
                await core.stop()
            return 1
        finally:
            await stack.aclose()
        if core is not None:
            code = await core.stop()
            out.write(f"core stopped with exit code {code}\n")
            if code != 0:
                return 1
    return 0


async def _session(client: SchedulerClient, out: TextIO) -> None:
    await client.register()  # empty config: the core's bundled default
    out.write(f"registered RM {client.rm_id}\n")

    await client.add_node("node-1", NODE)
    await client.add_node("node-2", NODE)
    await client.wait_nodes_answered(2, WAIT)
    out.write(f"nodes accepted: {', '.join(client.seen.accepted_nodes)} (each 8 vcore, 16Gi)\n")

    await client.add_application(APP, QUEUE)
    await client.wait_apps_answered(1, WAIT)
    if client.seen.rejected_apps:
        raise DemoFailed(f"application rejected: {client.seen.rejected_apps[0].reason}")
    out.write(f"application {APP} accepted into {QUEUE}\n")

    await client.asks(_task(i) for i in range(TASKS))
    fit = 8  # 4 tasks of 2 vcore / 4Gi per node
    await client.wait_allocations(fit, WAIT)
    out.write(f"\nasked for {TASKS} tasks of 2 vcore / 4Gi; the core allocated {fit}:\n")
    _write_allocations(client, out)
    out.write(f"pending: {TASKS - fit} tasks (no room left)\n")

    finished = sorted(client.seen.allocations)[:2]
    for key in finished:
        await client.release(APP, key)
    await client.wait_allocations(TASKS, WAIT)
    out.write(f"\n{', '.join(finished)} finished; the pending tasks took their room:\n")
    _write_allocations(client, out)

    await client.node_action("node-2", si_pb2.NodeInfo.DECOMISSION)
    on_node_2 = sum(1 for a in client.seen.allocations.values() if a.nodeID == "node-2")
    await client.wait_for(
        lambda: not any(a.nodeID == "node-2" for a in client.seen.allocations.values()),
        WAIT,
        "node-2's allocations to be released",
    )
    out.write(f"\nnode-2 decommissioned: the core released its {on_node_2} allocations:\n")
    for rel in client.seen.released[-on_node_2:]:
        out.write(
            f"  {rel.allocationKey}: {si_pb2.TerminationType.Name(rel.terminationType)} ({rel.message})\n"
        )

    await client.remove_application(APP)
    await client.wait_for(lambda: not client.seen.allocations, WAIT, "the application's allocations to go")
    states = " -> ".join(client.seen.app_states.get(APP, []))
    out.write(f"\napplication removed; its states were: {states}\n")


def _task(i: int) -> si_pb2.Allocation:
    return ask(APP, f"task-{i:02d}", TASK, tags={"creationTime": str(1_700_000_000 + i)})


def _write_allocations(client: SchedulerClient, out: TextIO) -> None:
    by_node: dict[str, list[str]] = {}
    for key, alloc in sorted(client.seen.allocations.items()):
        by_node.setdefault(alloc.nodeID, []).append(key)
    for node_id in sorted(by_node):
        out.write(f"  {node_id}: {', '.join(by_node[node_id])}\n")
