"""deploy/kubernetes as `kubectl kustomize` renders it (kubectl has kustomize built in), read once a run.

The RBAC tests authorize the emulation with the rendered roles, and the render tests check the objects
against the official client's models and the CLI's flags. kubectl is required: a machine without it
fails here, loudly, rather than testing roles nobody rendered.
"""

from __future__ import annotations

import functools
import shutil
import subprocess
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parent.parent.parent
DEPLOY = ROOT / "deploy" / "kubernetes"
NAMESPACE = "yunikorn"
SCHEDULER_SA = "pykorn-scheduler"  # the ServiceAccounts the rendered Deployments run as
ADMISSION_SA = "pykorn-admission"

Obj = dict[str, Any]


@functools.cache
def _render(directory: str) -> tuple[str, ...]:
    kubectl = shutil.which("kubectl")
    assert kubectl, "kubectl (with kustomize built in) is needed to render deploy/kubernetes"
    done = subprocess.run([kubectl, "kustomize", directory], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, f"kubectl kustomize {directory} failed:\n{done.stderr}"
    return (done.stdout,)


def render(directory: Path = DEPLOY) -> list[Obj]:
    """The objects the kustomization renders (a fresh copy each call: tests may change theirs)."""
    return [doc for doc in yaml.safe_load_all(_render(str(directory))[0]) if doc]


def find(objects: list[Obj], kind: str, name: str) -> Obj:
    found = [o for o in objects if o["kind"] == kind and o["metadata"]["name"] == name]
    assert len(found) == 1, f"{kind} {name}: {len(found)} rendered"
    return found[0]
