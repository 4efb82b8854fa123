"""Fail when the committed si stubs differ from what grpc_tools generates from proto/si/v1/si.proto."""

from __future__ import annotations

import filecmp
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
STUBS = ("si_pb2.py", "si_pb2.pyi", "si_pb2_grpc.py", "si_pb2_grpc.pyi")
BIN = Path(sys.executable).parent


def main() -> int:
    with tempfile.TemporaryDirectory() as out:
        subprocess.run(
            [
                sys.executable,
                "-m",
                "grpc_tools.protoc",
                "-Iproto",
                f"--python_out={out}",
                f"--pyi_out={out}",
                f"--grpc_python_out={out}",
                f"--plugin=protoc-gen-mypy_grpc={BIN / 'protoc-gen-mypy_grpc'}",
                f"--mypy_grpc_out={out}",
                "proto/si/v1/si.proto",
            ],
            cwd=ROOT,
            check=True,
        )
        drifted = [
            name
            for name in STUBS
            if not filecmp.cmp(Path(out, "si/v1", name), ROOT / "proto/si/v1" / name, shallow=False)
        ]
    if drifted:
        sys.stderr.write(f"stubs drifted from proto/si/v1/si.proto: {', '.join(drifted)}; run `make proto`\n")
        return 1
    sys.stdout.write("proto stubs match proto/si/v1/si.proto\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
