"""The mistakes a newcomer makes in the first hour end in one line on stderr that names the problem and
the fix, with the exit status of its kind (docs/operations.md, Exit statuses), never a traceback.

Each runs the real `pykorn` command in its own process: a port held by a socket of ours, a core that
is running (for its gRPC port) or not, kubeconfig files that are missing or garbage, a pipe whose
reader is gone. The environment has no kubeconfig of its own: HOME is a temporary directory.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from pykorn_cli.errors import BROKEN_PIPE, FAILED, UNREACHABLE, USAGE

DEFAULT_QUEUES = Path(__file__).parents[2] / "core" / "config" / "default_queues.yaml"


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    """No kubeconfig anywhere a client would look, and not in a pod."""
    clean = {k: v for k, v in os.environ.items() if k not in ("KUBECONFIG", "KUBERNETES_SERVICE_HOST")}
    clean["HOME"] = str(tmp_path)
    return clean


@pytest.fixture
def held_port() -> Iterator[int]:
    """A port something else listens on."""
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        yield holder.getsockname()[1]


@pytest.fixture
def closed_port() -> int:
    """A port nothing listens on (bound and let go: the kernel hands it out again only much later)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def pykorn(env: dict[str, str], *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pykorn_cli", *args],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        cwd=cwd,
    )


def last_line(result: subprocess.CompletedProcess[str], command: str) -> str:
    """The line a daemon ended with: it logs (structlog, to stderr) until it stops, so the reason is
    its last line; checked to be the command's and no traceback."""
    assert "Traceback" not in result.stderr, result.stderr
    line = result.stderr.splitlines()[-1]
    assert line.startswith(f"pykorn {command}: "), line
    return line


def api_server_kubeconfig(tmp_path: Path, port: int) -> Path:
    """A usable kubeconfig for an API server at 127.0.0.1:`port` (where nothing need answer)."""
    kubeconfig = tmp_path / "k.yaml"
    kubeconfig.write_text(
        "apiVersion: v1\nkind: Config\ncurrent-context: c\n"
        f"clusters: [{{name: c, cluster: {{server: 'http://127.0.0.1:{port}'}}}}]\n"
        "users: [{name: u, user: {token: t}}]\ncontexts: [{name: c, context: {cluster: c, user: u}}]\n"
    )
    return kubeconfig


def one_line(result: subprocess.CompletedProcess[str], command: str) -> str:
    """The single line the command ended with, checked to be that and no traceback."""
    assert "Traceback" not in result.stderr, result.stderr
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith(f"pykorn {command}: "), lines[0]
    return lines[0]


# pykorn core -------------------------------------------------------------------------------------


def test_core_on_a_grpc_port_in_use_says_which_flag_and_why(env: dict[str, str], held_port: int) -> None:
    result = pykorn(env, "core", "--listen", f"127.0.0.1:{held_port}", "--rest-listen", "")
    line = one_line(result, "core")
    assert result.returncode == UNREACHABLE
    assert f"cannot listen on 127.0.0.1:{held_port} for gRPC (--listen): Address already in use" in line


def test_core_on_a_rest_port_in_use_says_which_flag(env: dict[str, str], held_port: int) -> None:
    result = pykorn(env, "core", "--listen", "127.0.0.1:0", "--rest-listen", f"127.0.0.1:{held_port}")
    line = one_line(result, "core")
    assert result.returncode == UNREACHABLE
    assert f"cannot listen on 127.0.0.1:{held_port} for the REST API (--rest-listen)" in line
    assert "address already in use" in line


@pytest.mark.parametrize(
    ("listen", "said"),
    [
        ("nonsense::::x", "an IPv6 host goes in brackets"),
        ("3333", "is not HOST:PORT (examples: 127.0.0.1:3333"),
        ("127.0.0.1:99999", "the port must be a number from 0 to 65535"),
        ("127.0.0.1:http", "the port must be a number from 0 to 65535"),
    ],
)
def test_core_with_a_malformed_listen_address_shows_the_form(
    env: dict[str, str], listen: str, said: str
) -> None:
    result = pykorn(env, "core", "--listen", listen)
    assert result.returncode == USAGE
    assert "Traceback" not in result.stderr
    assert said in result.stderr.splitlines()[-1]


def test_core_with_a_scheme_in_listen_says_to_drop_it(env: dict[str, str]) -> None:
    result = pykorn(env, "core", "--listen", "http://127.0.0.1:0")
    assert result.returncode == USAGE
    assert "without a scheme" in one_line(result, "core")


def test_core_with_a_port_file_that_is_a_directory(env: dict[str, str], tmp_path: Path) -> None:
    result = pykorn(env, "core", "--listen", "127.0.0.1:0", "--port-file", str(tmp_path))
    assert result.returncode == USAGE
    line = one_line(result, "core")
    assert f"--port-file {tmp_path}" in line and "is a directory" in line


def test_core_with_an_invalid_config_names_the_first_problem_and_the_validator(
    env: dict[str, str], tmp_path: Path
) -> None:
    bad = tmp_path / "queues.yaml"
    bad.write_text("partitions:\n  - name: default\n    queues: [{name: root, maxapplications: -1}]\n")
    result = pykorn(env, "core", "--listen", "127.0.0.1:0", "--config", str(bad))
    assert result.returncode == USAGE
    line = one_line(result, "core")
    assert f"--config {bad} is invalid (1 problem" in line
    assert f"`pykorn config validate {bad}` lists them" in line


def test_core_with_a_config_file_that_is_not_there(env: dict[str, str], tmp_path: Path) -> None:
    result = pykorn(env, "core", "--listen", "127.0.0.1:0", "--config", str(tmp_path / "queues.yaml"))
    assert result.returncode == USAGE
    assert one_line(result, "core").endswith(f"--config {tmp_path / 'queues.yaml'}: no such file")


# pykorn k8s and pykorn admission -----------------------------------------------------------------


@pytest.mark.parametrize("command", ["k8s", "admission"])
def test_no_kubeconfig_anywhere_says_where_it_looked(env: dict[str, str], command: str) -> None:
    result = pykorn(env, command)
    assert result.returncode == USAGE
    line = one_line(result, command)
    assert "not in a pod, no --kubeconfig, $KUBECONFIG unset and no ~/.kube/config" in line
    assert "give --kubeconfig FILE" in line


@pytest.mark.parametrize("command", ["k8s", "admission"])
def test_a_kubeconfig_that_is_not_there(env: dict[str, str], tmp_path: Path, command: str) -> None:
    missing = tmp_path / "cluster.kubeconfig"
    result = pykorn(env, command, "--kubeconfig", str(missing))
    assert result.returncode == USAGE
    assert one_line(result, command).endswith(f"--kubeconfig {missing}: no such file")


@pytest.mark.parametrize("command", ["k8s", "admission"])
@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("clusters: [\n", "expected the node content"),  # not YAML
        ("- a\n- b\n", "is not a usable kubeconfig"),  # YAML, not a kubeconfig's shape
        ("{}\n", "Expected key current-context"),
    ],
)
def test_a_garbage_kubeconfig_is_named_with_what_is_wrong(
    env: dict[str, str], tmp_path: Path, command: str, text: str, said: str
) -> None:
    garbage = tmp_path / "garbage.kubeconfig"
    garbage.write_text(text)
    result = pykorn(env, command, "--kubeconfig", str(garbage))
    assert result.returncode == USAGE
    line = one_line(result, command)
    assert f"--kubeconfig {garbage} is not a usable kubeconfig" in line and said in line


def test_kubeconfig_from_the_environment_is_used_and_named(env: dict[str, str], tmp_path: Path) -> None:
    garbage = tmp_path / "from-env.kubeconfig"
    garbage.write_text("clusters: [\n")
    result = pykorn({**env, "KUBECONFIG": str(garbage)}, "k8s")
    assert result.returncode == USAGE
    assert f"$KUBECONFIG={garbage} is not a usable kubeconfig" in one_line(result, "k8s")


def test_k8s_with_the_core_down_says_what_core_means(
    env: dict[str, str], tmp_path: Path, closed_port: int
) -> None:
    kubeconfig = api_server_kubeconfig(tmp_path, 9)
    result = pykorn(env, "k8s", "--kubeconfig", str(kubeconfig), "--core", f"127.0.0.1:{closed_port}")
    assert result.returncode == UNREACHABLE
    line = last_line(result, "k8s")
    assert f"the core at 127.0.0.1:{closed_port} cannot be reached: Connection refused" in line
    assert "--core is its gRPC address" in line


def test_k8s_with_its_metrics_port_in_use_says_which_flag(
    env: dict[str, str], tmp_path: Path, held_port: int
) -> None:
    kubeconfig = api_server_kubeconfig(tmp_path, 9)
    result = pykorn(env, "k8s", "--kubeconfig", str(kubeconfig), "--metrics-listen", f"127.0.0.1:{held_port}")
    assert result.returncode == UNREACHABLE
    assert "--metrics-listen" in last_line(result, "k8s")


def test_k8s_stopped_while_the_api_server_does_not_answer_exits_cleanly(
    env: dict[str, str], tmp_path: Path, core_address: str, closed_port: int
) -> None:
    """SIGTERM during start-up (a rollout that replaces a pod still waiting for its API server) is a
    clean stop: status 0 at once, not the start-up failure some seconds later."""
    kubeconfig = api_server_kubeconfig(tmp_path, closed_port)
    process = subprocess.Popen(
        [sys.executable, "-m", "pykorn_cli", "k8s", "--kubeconfig", str(kubeconfig),
         "--core", core_address, "--rm-id", "rm-stopped-at-start", "--log-format", "json"],
        stderr=subprocess.PIPE, text=True, env=env,
    )  # fmt: skip
    assert process.stderr is not None
    try:
        seen = []
        for line in process.stderr:  # until it says it is trying again
            seen.append(line)
            if "listing failed at start" in line:
                break
        assert any("listing failed at start" in line for line in seen), "".join(seen)
        process.send_signal(signal.SIGTERM)
        rest = process.stderr.read()
        assert process.wait(timeout=30) == 0, rest
    finally:
        process.kill()
        process.wait()
    assert "Traceback" not in rest
    assert "did not answer the lists" not in rest


@pytest.mark.parametrize("command", [("k8s",), ("fake", "run", "examples/demo.yaml")])
def test_a_core_ca_that_is_not_a_certificate_is_refused_before_connecting(
    env: dict[str, str], tmp_path: Path, command: tuple[str, ...]
) -> None:
    not_pem = tmp_path / "ca.pem"
    not_pem.write_text("this is not a certificate\n")
    result = pykorn(
        env, *command, "--core", "127.0.0.1:9", "--core-ca", str(not_pem),
        cwd=Path(__file__).parents[2],
    )  # fmt: skip
    assert result.returncode == USAGE
    line = one_line(result, " ".join(command[:2]))
    assert f"the CA certificate {not_pem}" in line and "PEM expected" in line


# pykorn fake run ---------------------------------------------------------------------------------


def test_fake_run_of_a_scenario_that_is_not_there(env: dict[str, str], tmp_path: Path) -> None:
    result = pykorn(env, "fake", "run", str(tmp_path / "nowhere.yaml"))
    assert result.returncode == USAGE
    assert one_line(result, "fake run").endswith(
        f"cannot read {tmp_path / 'nowhere.yaml'}: No such file or directory"
    )


def test_fake_run_into_a_reader_that_went_away_leaves_no_core_behind(
    env: dict[str, str], tmp_path: Path
) -> None:
    # The core it starts keeps its port files under $TMPDIR: a core still running afterwards is a
    # process whose command line names this test's temporary directory.
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        result = subprocess.run(
            [sys.executable, "-m", "pykorn_cli", "fake", "run", "examples/demo.yaml"],
            stdout=write_end, stderr=subprocess.PIPE, text=True, timeout=120,
            env={**env, "TMPDIR": str(scratch)}, cwd=Path(__file__).parents[2],
        )  # fmt: skip
    finally:
        os.close(write_end)
    assert result.returncode == BROKEN_PIPE, result.stderr
    assert "Traceback" not in result.stderr
    assert _processes_naming(str(scratch)) == []


def _processes_naming(text: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:  # gone meanwhile, or not ours to read
            continue
        if text.encode() in cmdline:
            found.append(int(entry.name))
    return found


# pykorn config diff ------------------------------------------------------------------------------


def test_config_diff_against_a_core_that_is_down_says_so_at_once(
    env: dict[str, str], closed_port: int
) -> None:
    queues = str(DEFAULT_QUEUES)
    result = pykorn(env, "config", "diff", queues, queues, "--core", f"127.0.0.1:{closed_port}")
    assert result.returncode == UNREACHABLE
    line = one_line(result, "config diff")
    assert f"cannot connect to 127.0.0.1:{closed_port}: Connection refused" in line
    assert "is `pykorn core` running there?" in line
    assert result.stdout.startswith("0 change(s)")  # the diff itself was still shown


def test_config_diff_of_a_file_that_is_not_there(env: dict[str, str], tmp_path: Path) -> None:
    result = pykorn(env, "config", "diff", str(DEFAULT_QUEUES), str(tmp_path / "new.yaml"))
    assert result.returncode == USAGE
    assert one_line(result, "config diff").endswith(
        f"cannot read {tmp_path / 'new.yaml'}: No such file or directory"
    )


def test_config_diff_of_an_invalid_file_fails_with_the_reason(env: dict[str, str], tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("partitions:\n  - name: default\n    queues: [{name: root, maxapplications: -1}]\n")
    result = pykorn(env, "config", "diff", str(DEFAULT_QUEUES), str(bad))
    assert result.returncode == FAILED
    assert f"{bad} is not a valid configuration" in one_line(result, "config diff")


def test_config_diff_against_something_that_is_not_a_core(env: dict[str, str], rest_url: str) -> None:
    queues = str(DEFAULT_QUEUES)
    rest_address = rest_url.removeprefix("http://")
    result = pykorn(env, "config", "diff", queues, queues, "--core", rest_address)
    assert result.returncode == UNREACHABLE
    line = one_line(result, "config diff")
    assert f"no pykorn core answered at {rest_address}" in line or "does not answer as a pykorn core" in line
    assert "--core is its gRPC address" in line


def test_config_validate_of_a_file_that_is_not_there(env: dict[str, str], tmp_path: Path) -> None:
    result = pykorn(env, "config", "validate", str(tmp_path / "q.yaml"))
    assert result.returncode == USAGE
    assert one_line(result, "config validate").endswith(
        f"cannot read {tmp_path / 'q.yaml'}: No such file or directory"
    )
    assert result.stdout == ""


# pykorn status -----------------------------------------------------------------------------------


def test_status_pointed_at_the_grpc_port_names_the_rest_flag(env: dict[str, str], core_address: str) -> None:
    result = pykorn(env, "status", "--core-rest", core_address)
    assert result.returncode == UNREACHABLE
    line = one_line(result, "status")
    assert "does not answer as the core's REST API" in line
    assert "is it the gRPC port? give the REST address with --core-rest" in line


def test_status_takes_the_old_core_flag_with_a_warning(env: dict[str, str], rest_url: str) -> None:
    result = pykorn(env, "status", "--core", rest_url)
    assert result.returncode == 0, result.stderr
    assert result.stderr == (
        "pykorn status: --core is renamed --core-rest here (elsewhere --core is the gRPC address); "
        f"taken as --core-rest {rest_url}\n"
    )
    assert "partition" in result.stdout or "no partitions" in result.stdout


def test_status_refuses_both_core_flags_at_once(env: dict[str, str], rest_url: str) -> None:
    result = pykorn(env, "status", "--core", rest_url, "--core-rest", rest_url)
    assert result.returncode == USAGE
    assert "--core-rest" in one_line(result, "status")


@pytest.mark.parametrize("url", ["ftp://127.0.0.1:1", "grpc://127.0.0.1:1"])
def test_status_refuses_a_scheme_it_does_not_speak(env: dict[str, str], url: str) -> None:
    result = pykorn(env, "status", "--core-rest", url)
    assert result.returncode == USAGE
    assert "http" in one_line(result, "status")


def test_status_over_https_to_a_plain_http_api_says_so(env: dict[str, str], rest_url: str) -> None:
    https = rest_url.replace("http://", "https://")
    result = pykorn(env, "status", "--core-rest", https)
    assert result.returncode == UNREACHABLE
    line = one_line(result, "status")
    assert "http://" in line, line  # the hint: this API serves plain HTTP


def test_a_mistyped_argument_is_one_line_with_the_usage_hint(env: dict[str, str]) -> None:
    result = pykorn(env, "status", "--no-such-flag")
    assert result.returncode == USAGE
    line = one_line(result, "status")
    assert "--no-such-flag" in line and "--help" in line


def test_status_into_a_reader_that_went_away_ends_quietly(env: dict[str, str], rest_url: str) -> None:
    # As `pykorn status | head -1` once head has its line: the pipe's reading end is closed before
    # the command writes, so its first write fails.
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        result = subprocess.run(
            [sys.executable, "-m", "pykorn_cli", "status", "--core-rest", rest_url],
            stdout=write_end, stderr=subprocess.PIPE, text=True, timeout=60, env=env,
        )  # fmt: skip
    finally:
        os.close(write_end)
    assert result.returncode == BROKEN_PIPE
    assert result.stderr == ""


# the version -------------------------------------------------------------------------------------


def test_version_names_the_release_and_the_yunikorn_it_tracks(env: dict[str, str]) -> None:
    from pykorn_cli.versions import PYKORN_VERSION, YUNIKORN_CORE_COMMIT

    result = pykorn(env, "--version")
    assert result.returncode == 0
    assert (
        result.stdout
        == f"pykorn {PYKORN_VERSION} (tracks Apache YuniKorn 1.9, yunikorn-core {YUNIKORN_CORE_COMMIT[:8]})\n"
    )
    assert PYKORN_VERSION[0].isdigit()  # installed: the wheel's version, not "unknown"
