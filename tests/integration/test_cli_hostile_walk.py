"""Every `pykorn` subcommand with every flag and argument given hostile values (empty, negative, not a
number, not an address, a path that is not there, a directory, a binary file, a YAML list, odd
Unicode): each ends with a status of its kind and says why, and none ends in a traceback.

The walk (tests/integration/cli_hostile_walk.py) runs in a process of its own, with no kubeconfig to
find and a port held by this test for `pykorn core` to fail on.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from collections import Counter
from pathlib import Path

from pykorn_cli.errors import FAILED, UNREACHABLE, USAGE

ROOT = Path(__file__).parents[2]


def test_every_subcommand_refuses_hostile_arguments_in_words(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("KUBECONFIG", "KUBERNETES_SERVICE_HOST")}
    env["HOME"] = str(tmp_path)
    results = tmp_path / "walk.jsonl"
    with socket.socket() as held, socket.socket() as released:
        held.bind(("127.0.0.1", 0))
        held.listen()
        released.bind(("127.0.0.1", 0))
        closed_port = released.getsockname()[1]
        released.close()
        walk = subprocess.run(
            [sys.executable, "-m", "tests.integration.cli_hostile_walk", str(held.getsockname()[1]),
             str(closed_port), str(results)],
            cwd=ROOT, env=env, capture_output=True, text=True, timeout=600,
        )  # fmt: skip
    assert walk.returncode == 0, walk.stderr
    rows = [json.loads(line) for line in results.read_text().splitlines()]
    commands = Counter(" ".join(w for w in row["argv"][:2] if not w.startswith(("-", "/"))) for row in rows)
    assert set(commands) == {
        "core",
        "config validate",
        "config diff",
        "k8s",
        "admission",
        "status",
        "fake run",
        "history",
    }
    assert len(rows) > 700  # every flag of every subcommand, with each hostile value

    wrong = []
    for row in rows:
        said = row["stderr"] + row["stdout"]
        if "Traceback" in said or row["status"] not in (0, FAILED, USAGE, UNREACHABLE):
            wrong.append(row)
        elif row["status"] != 0 and not said.strip():
            wrong.append(row)  # refused without a word
    assert not wrong, json.dumps(wrong[:5], indent=1)
    # What ends with 0 is the diff of two good files with a harmless flag (--debug, an empty --rm-id).
    accepted = [row["argv"][4:] for row in rows if row["status"] == 0]
    assert sorted(accepted) == sorted([["--rm-id", ""], ["--debug"]])  # in whatever order the walk ran them
