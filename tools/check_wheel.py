"""`make wheel-check`: the wheel in dist/ installed alone, and the core started from it.

What a user (or the Containerfile) gets is the wheel, not this tree, so a file the code reads at run
time but the wheel leaves out breaks only them. This check:
1. compares the wheel with the tree: every file under the import packages that is not Python source
   (the bundled queues.yaml, the .proto and the stub types) must be in the wheel;
2. makes a fresh virtualenv with nothing in it, installs the wheel (and what it depends on, from the
   package index), and from a directory outside this tree (so nothing here can be imported)
3. imports every entry point's modules (the core, the Kubernetes shim, the admission controller, the
   fake RM) from it, so a dependency left out of the wheel's requirements fails here;
4. starts `pykorn core` from it, reads its REST health check and its gRPC health service, registers a
   resource manager without a configuration (the core then reads its bundled default queues.yaml) and
   reads the partition that made, then stops it with SIGTERM;
5. checks that nothing was written into the virtualenv meanwhile (run with the image's environment:
   the image's root filesystem may be read-only, and only /tmp is writable there).
Any step that fails ends the check with status 1 and says which.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
import venv
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE_DIRS = {  # import package -> where it lives in the tree
    "core": ROOT / "core",
    "rmclient": ROOT / "rmclient",
    "shim_fake": ROOT / "shim_fake",
    "shim_k8s": ROOT / "shim_k8s",
    "pykorn_cli": ROOT / "pykorn_cli",
    "si": ROOT / "proto" / "si",
}
SKIPPED = {"__pycache__"}
START_TIMEOUT = 60.0

# Run by the installed wheel's Python: gRPC health, then a registration with no configuration.
# Every module a `pykorn` command starts from (pykorn_cli imports them lazily, per command).
ENTRY_MODULES = "core.server.daemon shim_k8s.main shim_k8s.admission.server shim_fake.scenario.command"
IMPORTS = f"import importlib; [importlib.import_module(m) for m in {ENTRY_MODULES.split()!r}]"
PROBE = """
import asyncio, sys
import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc
from rmclient.client import SchedulerClient

async def main(address):
    async with grpc.aio.insecure_channel(address) as channel:
        answer = await health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(), timeout=10)
        assert answer.status == health_pb2.HealthCheckResponse.SERVING, answer
    client = SchedulerClient(address, "wheel-check")
    await client.connect()
    await client.register()  # no configuration: the core's bundled default queues.yaml
    await client.close()

asyncio.run(main(sys.argv[1]))
"""


def runtime_files() -> set[str]:
    """Every non-Python file of the import packages, as its path inside the wheel."""
    found: set[str] = set()
    for package, directory in PACKAGE_DIRS.items():
        for path in directory.rglob("*"):
            if path.is_dir() or SKIPPED & set(path.parts) or path.suffix in (".py", ".pyc"):
                continue
            found.add(f"{package}/{path.relative_to(directory).as_posix()}")
    return found


def check_contents(wheel: Path) -> list[str]:
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
    missing = sorted(runtime_files() - names)
    return [f"{name}: in the tree, not in the wheel (package data?)" for name in missing]


def install(wheel: Path, where: Path) -> Path:
    venv.EnvBuilder(with_pip=True, clear=True).create(where)
    python = where / "bin" / "python"
    subprocess.run([python, "-m", "pip", "install", "--quiet", str(wheel)], check=True)
    return where / "bin"


def snapshot(where: Path) -> dict[str, tuple[int, int]]:
    """Every file of the install with its size and modification time."""
    return {str(p): (p.lstat().st_size, p.lstat().st_mtime_ns) for p in where.rglob("*")}


def written(before: dict[str, tuple[int, int]], after: dict[str, tuple[int, int]]) -> list[str]:
    return sorted(path for path in after if before.get(path) != after[path])


def wait_for_file(path: Path, process: subprocess.Popen[bytes]) -> str:
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        if path.exists() and path.read_text().strip():
            return path.read_text().strip()
        if process.poll() is not None:
            raise RuntimeError(f"pykorn core exited with status {process.returncode} before it listened")
        time.sleep(0.1)
    raise RuntimeError(f"pykorn core did not write {path.name} within {START_TIMEOUT:.0f} s")


def run_core(bin_dir: Path, work: Path) -> None:
    port_file, rest_file = work / "port", work / "rest-port"
    command = [str(bin_dir / "pykorn"), "core", "--listen", "127.0.0.1:0", "--port-file", str(port_file),
               "--rest-listen", "127.0.0.1:0", "--rest-port-file", str(rest_file)]  # fmt: skip
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    (work / "tmp").mkdir()
    env.update(PYTHONDONTWRITEBYTECODE="1", HOME=str(work / "tmp"), TMPDIR=str(work / "tmp"))  # the image's
    subprocess.run([str(bin_dir / "python"), "-c", IMPORTS], check=True, cwd=work, env=env)
    core = subprocess.Popen(command, cwd=work, env=env)
    try:
        address = f"127.0.0.1:{wait_for_file(port_file, core)}"
        rest = f"http://127.0.0.1:{wait_for_file(rest_file, core)}"
        with urllib.request.urlopen(f"{rest}/ws/v1/scheduler/healthcheck", timeout=10) as answer:
            health = json.load(answer)
        if not health.get("Healthy"):
            raise RuntimeError(f"the core's health check says it is not healthy: {health}")
        subprocess.run([str(bin_dir / "python"), "-c", PROBE, address], check=True, cwd=work, env=env)
        with urllib.request.urlopen(f"{rest}/ws/v1/partitions", timeout=10) as answer:
            partitions = [p.get("name") for p in json.load(answer)]
        if "default" not in partitions:
            raise RuntimeError(f"no default partition from the bundled queues.yaml: {partitions}")
    finally:
        core.send_signal(signal.SIGTERM)
        core.wait(timeout=30)
    if core.returncode != 0:
        raise RuntimeError(f"pykorn core stopped with status {core.returncode} on SIGTERM")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("wheel", type=Path)
    wheel = parser.parse_args().wheel.resolve()
    problems = check_contents(wheel)
    if problems:
        listed = "\n  ".join(problems)
        sys.stderr.write(f"wheel-check: the wheel lacks files the code reads:\n  {listed}\n")
        return 1
    with tempfile.TemporaryDirectory(prefix="pykorn-wheel-") as temp:
        work = Path(temp)
        try:
            bin_dir = install(wheel, work / "venv")
            before = snapshot(work / "venv")
            run_core(bin_dir, work)
            changed = written(before, snapshot(work / "venv"))
            if changed:
                raise RuntimeError(f"files written into the install at run time: {changed[:10]}")
        except (RuntimeError, subprocess.CalledProcessError, OSError) as exc:
            sys.stderr.write(f"wheel-check: {wheel.name}: {exc}\n")
            return 1
    sys.stdout.write(f"wheel-check: {wheel.name} installs alone, every command's modules import, its "
                     "core starts, is healthy and serves the bundled default "
                     "configuration, and nothing is written into the install\n")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
