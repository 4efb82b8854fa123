"""Every `pykorn` subcommand, every flag and argument, given hostile values: run in one process of its
own (`python -m tests.integration.cli_hostile_walk HELD_PORT CLOSED_PORT RESULTS`) by
test_cli_hostile_walk, which reads one JSON line per invocation from RESULTS: the arguments, the exit
status and what it printed. (A file: the commands' own logging writes to the process's stdout.)

Each subcommand starts from arguments that make it end on its own (a gRPC port in use for the core,
no kubeconfig for the shims, a REST port where nothing listens for status, a scenario that is not
there), so whatever a hostile value lets through, the command still ends and says how.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import signal
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from types import FrameType

from pykorn_cli.main import build_parser, main

SECONDS_EACH = 30


def hostile_values(scratch: Path) -> list[str]:
    binary = scratch / "binary"
    binary.write_bytes(bytes(range(256)) * 4)
    listed = scratch / "list.yaml"
    listed.write_text("- 1\n- 2\n")
    return [
        "",
        "-1",
        "0",
        "nan",
        "nonsense::::x",
        "/nonexistent/x",
        "9" * 40,
        "é\u2028\ufeff",
        str(scratch),  # a directory
        str(binary),
        str(listed),  # YAML, but a list
    ]


def base_arguments(held_port: int, closed_port: int, scratch: Path) -> dict[str, list[str]]:
    missing = str(scratch / "missing.yaml")
    queues = str(Path(__file__).parents[2] / "core" / "config" / "default_queues.yaml")
    return {
        "core": ["core", "--listen", f"127.0.0.1:{held_port}", "--rest-listen", ""],
        "config validate": ["config", "validate", missing],
        "config diff": ["config", "diff", queues, queues],
        "k8s": ["k8s"],
        "admission": ["admission"],
        "status": ["status", "--core-rest", f"http://127.0.0.1:{closed_port}"],
        "fake run": ["fake", "run", missing],
        **{
            f"history {leaf}": ["history", "--core-rest", f"http://127.0.0.1:{closed_port}", leaf, *args]
            for leaf, args in (
                ("apps", []),
                ("app", ["job"]),
                ("queue", ["root"]),
                ("usage", []),
                ("config", []),
            )
        },
    }


def leaf_parsers(
    parser: argparse.ArgumentParser, prefix: str = ""
) -> Iterator[tuple[str, argparse.ArgumentParser]]:
    subparsers = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if not subparsers:
        yield prefix.strip(), parser
        return
    for name, child in subparsers[0].choices.items():
        yield from leaf_parsers(child, f"{prefix} {name}")


def invocations(base: list[str], parser: argparse.ArgumentParser, values: list[str]) -> Iterator[list[str]]:
    positionals = [a for a in parser._actions if not a.option_strings]
    # The words of the command itself, then its positional arguments as the base gives them.
    words = len(base) - sum(1 for a in positionals) if positionals else len(base)
    for action in parser._actions:
        if isinstance(action, argparse._HelpAction | argparse._VersionAction):
            continue
        if not action.option_strings:  # a positional: each hostile value in its place
            index = words + positionals.index(action)
            for value in values:
                yield [*base[:index], value, *base[index + 1 :]]
        elif action.nargs == 0:  # a switch: on, with the base
            yield [*base, action.option_strings[0]]
        else:
            for value in values:
                yield [*base, action.option_strings[0], value]


def _hung(signum: int, frame: FrameType | None) -> None:
    raise TimeoutError(f"no end after {SECONDS_EACH}s")


def run_one(argv: list[str]) -> dict[str, object]:
    err, out = io.StringIO(), io.StringIO()
    signal.signal(signal.SIGALRM, _hung)
    signal.alarm(SECONDS_EACH)
    try:
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(out):
            try:
                status: object = main(argv)
            except SystemExit as exc:  # argparse's refusals
                status = exc.code
    except TimeoutError as exc:
        status = f"hung: {exc}"
    finally:
        signal.alarm(0)
    return {"argv": argv, "status": status, "stderr": err.getvalue(), "stdout": out.getvalue()}


def walk(held_port: int, closed_port: int, results: Path) -> None:
    with tempfile.TemporaryDirectory() as scratch_dir, results.open("w") as sink:
        scratch = Path(scratch_dir)
        values = hostile_values(scratch)
        bases = base_arguments(held_port, closed_port, scratch)
        for name, parser in leaf_parsers(build_parser()):
            for argv in invocations(bases[name], parser, values):
                sink.write(json.dumps(run_one(argv)) + "\n")
                sink.flush()


if __name__ == "__main__":
    walk(int(sys.argv[1]), int(sys.argv[2]), Path(sys.argv[3]))
