"""The tree's layering, read from the imports of every module (as written, not by running them).

Imports under `if TYPE_CHECKING:` are for the type checker only and do not count as dependencies.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("core", "rmclient", "shim_fake", "shim_k8s", "pykorn_cli", "benchmarks")
DOMAIN = (
    "core/config", "core/constraints", "core/objects", "core/policies", "core/placement", "core/ugm",
    "core/scheduler",
)  # fmt: skip

# The floors (docs/architecture.md): each place, and the places it may import besides itself. A place is a
# package or module; a module belongs to the longest place its name starts with. Every module of the tree
# must belong to one, so a new place is added here, on its floor, before it is used.
GROUND = frozenset(
    {
        "core.resources",
        "core.quantity_text",
        "core.events",
        "core.log_digest",
        "core.off_loop",
        "core.go_regexp",
    }
)
CONFIG = GROUND | {"core.config"}
CONSTRAINTS = CONFIG | {"core.constraints"}
OBJECTS = CONSTRAINTS | {"core.objects"}
SERVICES = OBJECTS | {"core.placement", "core.policies", "core.ugm"}
# The scheduler's inner floors, bottom to top: its vocabulary (commands in, results out, refusals, the
# counters it keeps); the node checks (fit); a partition and what it owns; the search for a node; the
# preemptors; the cycle; at the top the cluster context and the engine (core.scheduler's own modules).
SCHEDULER_WORDS = SERVICES | {
    "core.scheduler.commands",
    "core.scheduler.results",
    "core.scheduler.rejection",
    "core.scheduler.metrics",
    "core.scheduler.history",
}
FIT = SCHEDULER_WORDS | {"core.scheduler.fit"}
PARTITION = FIT | {"core.scheduler.partition"}
SEARCH = PARTITION | {"core.scheduler.node_search"}
PREEMPTORS = SEARCH | {"core.scheduler.preemption"}
CYCLE = PREEMPTORS | {"core.scheduler.cycle"}
SCHEDULER = CYCLE | {"core.scheduler"}
ADAPTERS = SCHEDULER | {"core.rm", "core.views", "core.history"}
CORE = ADAPTERS | {"core.server"}
SHIM_API = frozenset({"rmclient", "shim_k8s.api"})
SHIM_READERS = SHIM_API | {"shim_k8s.readers"}
SHIM_VOLUMES = SHIM_READERS | {"shim_k8s.volumes"}
SHIM_PARTS = SHIM_VOLUMES | {"shim_k8s"}
SHIM_K8S = SHIM_PARTS | {"shim_k8s.shim", "shim_k8s.admission", "shim_k8s.metrics", "shim_k8s.main"}
FLOORS: dict[str, frozenset[str]] = {
    # the core, bottom to top
    "core.resources": frozenset(),
    "core.quantity_text": frozenset(),
    "core.events": frozenset(),
    "core.log_digest": frozenset(),
    "core.off_loop": frozenset(),
    "core.go_regexp": frozenset(),
    "core.config": GROUND,
    "core.constraints": CONFIG,
    "core.objects": CONSTRAINTS,
    "core.placement": OBJECTS,
    "core.policies": OBJECTS,
    "core.ugm": OBJECTS,
    **dict.fromkeys(SCHEDULER_WORDS - SERVICES, SCHEDULER_WORDS),  # one row: they name each other's types
    "core.scheduler.fit": SCHEDULER_WORDS,
    "core.scheduler.partition": FIT,
    "core.scheduler.node_search": PARTITION,
    "core.scheduler.preemption": SEARCH,
    "core.scheduler.cycle": PREEMPTORS,
    "core.scheduler": CYCLE,
    "core.rm": SCHEDULER,
    "core.views": SCHEDULER,
    # The history database beside them: it reads the cluster's state and event log, as the views do.
    "core.history": SCHEDULER,
    "core.server": ADAPTERS,
    "core": frozenset(),  # the package itself: nothing
    # the resource-manager side: the wire (si, outside this table) and the shared client only
    "rmclient": frozenset(),
    # The Kubernetes shim, bottom to top: the API's clients and objects; pure readers of objects; volumes;
    # the parts (pods in, decisions out, gangs, the outbox, reconciliation, registration, state); the
    # shim that composes them; the process (main, its metrics). The admission controller, a process of
    # its own, reads objects as the shim does.
    "shim_k8s.api": frozenset({"rmclient"}),
    "shim_k8s.readers": SHIM_API,
    "shim_k8s.volumes": SHIM_READERS,
    "shim_k8s": SHIM_VOLUMES,
    "shim_k8s.shim": SHIM_PARTS,
    "shim_k8s.admission": SHIM_READERS,
    "shim_k8s.metrics": SHIM_PARTS | {"shim_k8s.shim"},
    "shim_k8s.main": SHIM_PARTS | {"shim_k8s.shim", "shim_k8s.metrics"},
    # The fake shim is given the core's checks of a scenario's parts by its command (pykorn_cli).
    "shim_fake": frozenset({"rmclient"}),
    # the command and the benchmarks put everything together
    "pykorn_cli": CORE | SHIM_K8S | {"shim_fake"},
    # (the benchmarks also tune a process's garbage collector as the command does: pykorn_cli.gc_tuning)
    "benchmarks": CORE | SHIM_K8S | {"shim_fake", "pykorn_cli"},
}


def _modules() -> dict[str, Path]:
    found = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            parts = path.relative_to(ROOT).with_suffix("").parts
            name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
            found[name] = path
    return found


MODULES = _modules()


def _runtime_imports(path: Path) -> Iterator[str]:
    """Every module `path` imports when it runs (also inside functions), TYPE_CHECKING blocks left out."""
    tree = ast.parse(path.read_text())
    skipped: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            skipped.update(id(child) for stmt in node.body for child in ast.walk(stmt))
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            submodules = [f"{node.module}.{alias.name}" for alias in node.names]
            submodules = [m for m in submodules if m in MODULES]
            # `from package import module` needs the module; `from module import name`, the module.
            yield from submodules if len(submodules) == len(node.names) else [node.module, *submodules]


def _all_imports(path: Path) -> Iterator[str]:
    """Every module `path` names in an import, TYPE_CHECKING blocks included."""
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            yield node.module


def _project_imports(name: str) -> set[str]:
    return {imported for imported in _runtime_imports(MODULES[name]) if imported in MODULES} - {name}


GRAPH = {name: _project_imports(name) for name in MODULES}


def test_no_import_circles_at_runtime() -> None:
    circles: list[list[str]] = []
    state: dict[str, int] = {}  # 1: on the current path, 2: done

    def visit(name: str, path: list[str]) -> None:
        state[name] = 1
        for target in sorted(GRAPH[name]):
            if state.get(target) == 1:
                circles.append([*path[path.index(target) :], target])
            elif target not in state:
                visit(target, [*path, target])
        state[name] = 2

    for name in sorted(GRAPH):
        if name not in state:
            visit(name, [name])
    assert circles == []


def _importers_of(prefix: str) -> set[str]:
    return {
        name for name, imported in GRAPH.items()
        if any(i == prefix or i.startswith(prefix + ".") for i in imported)
    }  # fmt: skip


def _place(module: str) -> str | None:
    candidates = [p for p in FLOORS if module == p or module.startswith(p + ".")]
    return max(candidates, key=len) if candidates else None


def test_every_module_has_a_place_on_a_floor() -> None:
    assert sorted(name for name in MODULES if _place(name) is None) == []


def test_no_import_runs_up_a_floor_or_across_one() -> None:
    """Each module imports only its own place and the places below it, as FLOORS says."""
    wrong = sorted(
        f"{name} -> {imported}"
        for name, imports in GRAPH.items()
        for imported in imports
        if (home := _place(name)) is not None
        and (there := _place(imported)) is not None
        and there != home
        and there not in FLOORS[home]
    )
    assert wrong == []


def test_the_shims_take_only_the_tag_module_of_the_wire_vocabulary() -> None:
    """A shim reads the wire's names from si.v1 (stubs, tags, metadata), never from a core module, even
    for the type checker: renaming a core file must not break a shim."""
    offenders = {
        (name, imported)
        for name in MODULES
        if name.startswith(("shim_k8s", "shim_fake"))
        for imported in _all_imports(MODULES[name])
        if imported.split(".")[0] == "core"
    }
    assert offenders == set()


def test_only_the_fake_shim_itself_and_the_command_import_it() -> None:
    outside = {n for n in _importers_of("shim_fake") if not n.startswith("shim_fake")}
    assert outside <= {"pykorn_cli.main"}  # `pykorn fake run` dispatches to it


def test_the_rm_client_imports_nothing_of_the_core_or_the_shims() -> None:
    rmclient = {n for n in GRAPH if n.startswith("rmclient")}
    leaks = {
        (n, i) for n in rmclient for i in _runtime_imports(MODULES[n])
        if i.split(".")[0] in ("core", "shim_fake", "shim_k8s", "pykorn_cli")
    }  # fmt: skip
    assert leaks == set()


def test_the_core_imports_no_shim_and_not_the_command() -> None:
    core = {n for n in GRAPH if n.startswith("core")}
    leaks = {
        (n, i) for n in core for i in GRAPH[n] if i.split(".")[0] in ("shim_fake", "shim_k8s", "pykorn_cli")
    }
    assert leaks == set()


@pytest.mark.parametrize("place", DOMAIN)
def test_the_domain_is_free_of_transport(place: str) -> None:
    """grpc, asyncio and the generated stubs stay in core/server and core/rm; the tag module and the
    duration reading beside the stubs are plain vocabulary, which the domain reads. The one exception
    is the engine, whose run loop takes commands from an asyncio queue and yields to the event loop
    between slices of a cycle: what it calls is synchronous."""
    offenders = {
        (str(path.relative_to(ROOT)), imported)
        for path in (ROOT / place).rglob("*.py")
        for imported in _runtime_imports(path)
        if (imported == "grpc" or imported.startswith("grpc."))
        or (imported == "asyncio" and path != ROOT / "core" / "scheduler" / "engine.py")
        or (imported.startswith("si.") and imported not in ("si.v1.tags", "si.v1.durations"))
    }
    assert offenders == set()


def test_the_architecture_page_names_every_place_of_the_core() -> None:
    page = (ROOT / "docs" / "architecture.md").read_text()
    missing = []
    for place in FLOORS:
        if place.startswith("core."):
            path = place.replace(".", "/")
            if f"`{path}/`" not in page and f"`{path}.py`" not in page:
                missing.append(path)
    assert missing == []
