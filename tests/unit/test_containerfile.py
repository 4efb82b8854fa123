"""The image recipe and the distribution: what the Containerfile installs is the wheel `make dist` builds
and `make wheel-check` tests (the recipe cannot be built here: no container engine), its final stage
keeps to the rules the manifests rely on, and no document installs someone else's `pykorn`."""

from __future__ import annotations

import fnmatch
import re
import shutil
import subprocess
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
BUILD_TOOLS = re.compile(
    r"\b(gcc|g\+\+|cc|make|build-essential|apt-get|apk|pip3? install|python -m pip install)\b"
)


def _stages() -> list[list[str]]:
    """The Containerfile's instructions, by stage (continuation lines joined, comments left out)."""
    text = re.sub(r"\\\n\s*", " ", (ROOT / "Containerfile").read_text())
    stages: list[list[str]] = []
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        if line.upper().startswith("FROM "):
            stages.append([])
        if stages:
            stages[-1].append(line)
    return stages


def _wheel_pattern() -> str:
    """The Makefile's wheel, with its version as a wildcard."""
    found = re.search(r"^WHEEL := (\S+)$", (ROOT / "Makefile").read_text(), re.M)
    assert found is not None
    return found.group(1).replace("$(VERSION)", "*")


def test_the_distribution_is_ours_and_the_wheel_is_named_after_it() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["name"] == "pykorn-scheduler"  # `pykorn` on the package index is an unrelated project
    assert project["scripts"]["pykorn"] == "pykorn_cli.main:main"
    normalized = re.sub(r"[-_.]+", "_", project["name"])
    assert _wheel_pattern() == f"dist/{normalized}-*-py3-none-any.whl"
    assert fnmatch.fnmatch(f"dist/{normalized}-{project['version']}-py3-none-any.whl", _wheel_pattern())


def test_the_recipe_installs_the_wheel_ci_tested() -> None:
    build = _stages()[0]
    assert len(_stages()) >= 2, "multi-stage"
    copies = [line.split()[1] for line in build if line.upper().startswith("COPY ") and ".whl" in line]
    assert copies == [_wheel_pattern().replace("$(VERSION)", "*")]
    # CI's check: `make wheel-check` depends on `dist`, which builds that very file.
    makefile = (ROOT / "Makefile").read_text()
    assert re.search(r"^wheel-check: dist$", makefile, re.M)
    assert "make wheel-check" in (ROOT / ".ci" / "run").read_text()
    assert any("install" in line and "/tmp/wheels/*.whl" in line for line in build)


def test_the_final_stage_has_no_build_tools_and_runs_pykorn_as_a_numeric_non_root_user() -> None:
    final = _stages()[-1]
    runs = [line for line in final if line.upper().startswith("RUN ")]
    for line in runs:
        assert not BUILD_TOOLS.search(line.removeprefix("RUN ").replace("pip uninstall", "")), line
    assert any("pip uninstall" in line for line in runs), "the base image's installer is taken out"
    [user] = [line for line in final if line.upper().startswith("USER ")]
    uid, gid = user.split()[1].split(":")
    assert int(uid) > 0 and int(gid) > 0
    assert 'ENTRYPOINT ["pykorn"]' in final
    copies = [line for line in final if line.upper().startswith("COPY ")]
    assert copies == ["COPY --from=build /opt/pykorn /opt/pykorn"]  # nothing but the built virtualenv
    env = " ".join(line for line in final if line.upper().startswith("ENV "))
    assert "PYTHONDONTWRITEBYTECODE=1" in env and "HOME=/tmp" in env  # a read-only root filesystem


def test_no_document_installs_someone_elses_pykorn() -> None:
    pattern = re.compile(r"pip install\s+['\"]?pykorn(?![-\w])")
    documents = [ROOT / "README.md", ROOT / "Containerfile", *(ROOT / "docs").rglob("*.md")]
    documents += list((ROOT / "deploy").rglob("*.yaml"))
    documents += [*(ROOT / "shim_fake").rglob("*.py"), *(ROOT / "pykorn_cli").rglob("*.py")]  # hints
    offending = [str(p.relative_to(ROOT)) for p in documents if pattern.search(p.read_text())]
    assert offending == []


def test_the_build_context_is_the_wheel_alone() -> None:
    """Podman reads .containerignore, docker .dockerignore: both let in the wheel and nothing else, so a
    build never sends the virtualenv, the caches or the tree as its context."""
    for name in (".containerignore", ".dockerignore"):
        rules = [
            li.strip()
            for li in (ROOT / name).read_text().splitlines()
            if li.strip() and not li.startswith("#")
        ]
        assert rules == ["*", "!dist/pykorn_scheduler-*-py3-none-any.whl"], name


def test_make_image_without_an_engine_says_where_to_build_it(tmp_path: Path) -> None:
    # A PATH with make and what its recipes call, and no container engine whatever the machine has.
    tools = tmp_path / "bin"
    tools.mkdir()
    for tool in ("make", "sh", "sed"):
        found = shutil.which(tool)
        assert found is not None
        (tools / tool).symlink_to(found)
    result = subprocess.run(
        ["make", "--no-print-directory", "image", "IMAGE=registry.example.com/pykorn:test"],
        cwd=ROOT, env={"PATH": str(tools), "HOME": str(tmp_path)}, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert result.returncode == 2, result.stderr
    assert result.stderr.splitlines()[0] == (
        "make image: neither podman nor docker is installed here; build the wheel with 'make dist' and the "
        "image where an engine is: podman build -t registry.example.com/pykorn:test -f Containerfile ."
    )
    assert "pip wheel" not in result.stdout  # nothing built first
