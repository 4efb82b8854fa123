"""The `pykorn` command: `pykorn core`, `pykorn config validate|diff`, `pykorn k8s`, `pykorn admission`,
`pykorn status`, `pykorn fake run`. Each subcommand imports what it runs only when chosen, so
`pykorn core` loads no shim."""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys
from collections.abc import Callable, Mapping
from pathlib import Path

from core.server.rest_connections import ConnectionBounds
from pykorn_cli.options import client_tls, json_flag
from rmclient.logging_setup import configure_logging, level_number, set_live_levels


def _add_logging_flags(parser: argparse.ArgumentParser, level: str = "info") -> None:
    parser.add_argument("--log-level", default=level, choices=["debug", "info", "warning", "error"])
    parser.add_argument(
        "--log-format",
        choices=["json", "console"],
        default=None,
        help="default: console on a terminal, JSON otherwise",
    )


def _non_negative_seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not value >= 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"{text!r} must be a finite number of seconds, 0 or more")
    return value


def _positive_seconds(text: str) -> float:
    value = _non_negative_seconds(text)
    if value == 0:
        raise argparse.ArgumentTypeError(f"{text!r} must be more than 0 seconds")
    return value


def _add_rest_bound_flags(core: argparse.ArgumentParser) -> None:
    bounds = ConnectionBounds()
    rest = core.add_argument_group("REST connections (docs/reliability.md)")
    rest.add_argument(
        "--rest-header-timeout",
        type=_positive_seconds,
        default=bounds.header_timeout,
        help="seconds a new connection has to send its request header, and validate-conf its body "
        f"({bounds.header_timeout:g})",
    )
    rest.add_argument(
        "--rest-idle-timeout",
        type=_positive_seconds,
        default=bounds.idle_timeout,
        help=f"seconds a kept-alive connection may wait for its next request ({bounds.idle_timeout:g})",
    )
    rest.add_argument(
        "--rest-max-connections",
        type=_positive_int,
        default=bounds.max_connections,
        help="connections open at once; past it a new one pushes out the oldest that has not sent a "
        f"whole header, or gets 503 ({bounds.max_connections})",
    )
    rest.add_argument(
        "--rest-max-event-streams",
        type=_positive_int,
        default=None,
        help="of those, event streams open at once (below --rest-max-connections: the rest stay free for "
        f"the healthcheck and other short requests; default {bounds.max_event_streams}, at most half "
        "of --rest-max-connections)",
    )


def _add_server_tls_flags(core: argparse.ArgumentParser) -> None:
    tls = core.add_argument_group("security (docs/security.md)")
    tls.add_argument(
        "--tls-cert", type=Path, default=None, help="gRPC server certificate (PEM); turns on TLS"
    )
    tls.add_argument("--tls-key", type=Path, default=None, help="private key of --tls-cert (PEM)")
    tls.add_argument(
        "--tls-client-ca",
        type=Path,
        default=None,
        help="CA for client certificates: mutual TLS; each RM may only act as its certificate's CN",
    )
    tls.add_argument("--rest-tls-cert", type=Path, default=None, help="REST API certificate (PEM): https")
    tls.add_argument("--rest-tls-key", type=Path, default=None, help="private key of --rest-tls-cert (PEM)")
    tls.add_argument(
        "--rest-token-file",
        type=Path,
        default=None,
        help="file holding a bearer token every REST request but the health check must carry",
    )


def _add_client_tls_flags(parser: argparse.ArgumentParser) -> None:
    tls = parser.add_argument_group("TLS to the core (docs/security.md)")
    tls.add_argument("--core-ca", type=Path, default=None, help="CA of the core's certificate: use TLS")
    tls.add_argument(
        "--core-cert", type=Path, default=None, help="client certificate for mutual TLS (CN = rmID)"
    )
    tls.add_argument("--core-key", type=Path, default=None, help="private key of --core-cert")


def _duration(text: str) -> float:
    """A duration as kube-scheduler's flags take it ("15s", "500ms", "1m"), or plain seconds."""
    units = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}
    number, unit = text, "s"
    for suffix in sorted(units, key=len, reverse=True):
        if text.endswith(suffix):
            number, unit = text[: -len(suffix)], suffix
            break
    try:
        seconds = float(number) * units[unit]
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a duration (examples: 15s, 500ms, 1m)") from None
    if seconds <= 0:
        raise argparse.ArgumentTypeError(f"{text!r} must be more than zero")
    return seconds


def _add_leader_election_flags(parser: argparse.ArgumentParser) -> None:
    """kube-scheduler's --leader-elect flags (a coordination.k8s.io Lease), with its defaults."""
    group = parser.add_argument_group("leader election (several replicas, one active)")
    group.add_argument("--leader-elect", action="store_true", help="schedule only while holding the Lease")
    group.add_argument(
        "--leader-elect-lease-duration",
        type=_duration,
        default=15.0,
        help="how long a standby waits after the last renewal before taking over (15s)",
    )
    group.add_argument(
        "--leader-elect-renew-deadline",
        type=_duration,
        default=10.0,
        help="how long the leader tries to renew before it stops (10s)",
    )
    group.add_argument(
        "--leader-elect-retry-period",
        type=_duration,
        default=2.0,
        help="between attempts to take or renew the Lease (2s)",
    )
    group.add_argument("--leader-elect-resource-name", default="pykorn", help="the Lease's name (pykorn)")
    group.add_argument(
        "--leader-elect-resource-namespace", default=None, help="the Lease's namespace (default: --namespace)"
    )
    group.add_argument("--leader-elect-identity", default=None,
                       help="its name in the Lease (default: host name, unique suffix)")  # fmt: skip


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} must be 1 or more")
    return value


def _live_levels(flag_level: str) -> Callable[[int | None, Mapping[str, int]], None]:
    """The core's log levels while running: an RM's default (else --log-level) and by logger prefix."""
    start = level_number(flag_level) or logging.INFO

    def apply(default: int | None, by_prefix: Mapping[str, int]) -> None:
        set_live_levels(default if default is not None else start, by_prefix)

    return apply


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="pykorn", description="A YuniKorn-style scheduler core.")
    commands = parser.add_subparsers(dest="command", required=True)

    core = commands.add_parser("core", help="run the scheduler core daemon (gRPC si.v1.Scheduler)")
    core.add_argument("--listen", default="127.0.0.1:3333", help="gRPC address (default 127.0.0.1:3333)")
    core.add_argument(
        "--config",
        type=Path,
        default=None,
        help="queues.yaml used when an RM registers without a config (default: bundled)",
    )
    core.add_argument("--port-file", type=Path, default=None, help="write the bound port here once listening")
    core.add_argument(
        "--rest-listen",
        default="127.0.0.1:9080",
        help="REST state API (ws/v1) address (default 127.0.0.1:9080; empty to turn it off)",
    )
    core.add_argument(
        "--rest-port-file", type=Path, default=None, help="write the REST port here once listening"
    )
    core.add_argument(
        "--rm-grace-period",
        type=_non_negative_seconds,
        default=60.0,
        help="seconds a resource manager with no stream open keeps its state before it is removed (60)",
    )
    core.add_argument(
        "--event-log-size",
        type=_positive_int,
        default=10_000,
        help="events the core holds for REST and StreamEvents readers; a reader further behind is cut off",
    )
    core.add_argument(
        "--limit",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="change a limit on what resource managers may send, e.g. max_tags=512 (repeatable; "
        "names and defaults in docs/interface.md, Limits)",
    )
    _add_rest_bound_flags(core)
    _add_server_tls_flags(core)
    _add_logging_flags(core)

    config = commands.add_parser("config", help="work with queues.yaml files")
    config_commands = config.add_subparsers(dest="config_command", required=True)
    validate = config_commands.add_parser("validate", help="check a queues.yaml; print errors or the tree")
    validate.add_argument("file", type=Path)
    diff = config_commands.add_parser(
        "diff", help="what changes between two configurations, and what a core would preempt for it"
    )
    diff.add_argument("old", type=Path)
    diff.add_argument("new", type=Path)
    diff.add_argument(
        "--core", default=None, help="HOST:PORT of a running core to ask for the preemption preview"
    )
    diff.add_argument("--rm-id", default="", help="the resource manager whose configuration it is")
    _add_client_tls_flags(diff)

    k8s = commands.add_parser("k8s", help="the Kubernetes resource manager")
    k8s.add_argument("--core", default="127.0.0.1:3333", help="HOST:PORT of the core")
    k8s.add_argument("--kubeconfig", default=None, help="kubeconfig file; in-cluster config without it")
    k8s.add_argument(
        "--scheduler-name", default="yunikorn", help="pods with this spec.schedulerName are ours"
    )
    k8s.add_argument("--namespace", default="yunikorn", help="where the yunikorn-configs ConfigMap lives")
    k8s.add_argument("--rm-id", default="mycluster", help="the resource manager ID registered with the core")
    k8s.add_argument(
        "--placeholder-image", default="registry.k8s.io/pause:3.7",
        help="the image of gang placeholder pods (default registry.k8s.io/pause:3.7, as YuniKorn)",
    )  # fmt: skip
    k8s.add_argument(
        "--kube-qps",
        type=float,
        default=5000.0,
        help="requests a second to the API server (events apart), as YuniKorn's kubernetes.qps "
        "(default 5000; YuniKorn's is 1000)",
    )
    k8s.add_argument(
        "--kube-burst",
        type=int,
        default=10000,
        help="requests above the rate allowed at once, as YuniKorn's kubernetes.burst "
        "(default 10000; YuniKorn's is 1000)",
    )
    k8s.add_argument("--kube-in-flight", type=int, default=64,
                     help="requests to the API server in flight at once (default 64)")  # fmt: skip
    k8s.add_argument("--reconcile-period", type=_duration, default=60.0,
                     help="how often the core's view is checked against the API's (60s)")  # fmt: skip
    k8s.add_argument("--metrics-listen", default="",
                     help="HOST:PORT for the Prometheus metrics (/metrics); off by default")  # fmt: skip
    _add_leader_election_flags(k8s)
    _add_client_tls_flags(k8s)
    _add_logging_flags(k8s)

    hook = commands.add_parser(
        "admission", help="the admission controller: mutating webhook for pods, validating for the configmaps"
    )
    hook.add_argument("--port", type=int, default=9089, help="HTTPS port (default 9089, as YuniKorn's)")
    hook.add_argument("--bind", default="0.0.0.0", help="address to listen on (default all)")
    hook.add_argument(
        "--tls-cert", default=None,
        help="PEM certificate to serve (made by hand or by cert-manager); the webhook configurations are "
        "then not managed. Without it the controller makes its own and registers its webhooks",
    )  # fmt: skip
    hook.add_argument("--tls-key", default=None, help="PEM key of --tls-cert")
    hook.add_argument(
        "--secret-name", default="pykorn-admission-certs",
        help="the Secret (in --namespace) that holds the controller's CAs (default pykorn-admission-certs)",
    )  # fmt: skip
    hook.add_argument("--kubeconfig", default=None, help="kubeconfig file; in-cluster config without it")
    hook.add_argument("--namespace", default="yunikorn", help="where the yunikorn-configs ConfigMap lives")
    hook.add_argument(
        "--core-rest", default=None,
        help="HOST:PORT or URL (https://... when the core's REST API uses TLS) of the core's REST API, to "
        "check queue configurations (default: admissionController.webHook.schedulerServiceAddress, "
        "yunikorn-service:9080)",
    )  # fmt: skip
    hook.add_argument("--core-rest-ca", default=None, help="CA (PEM) to trust for an https --core-rest")
    _add_logging_flags(hook)

    status = commands.add_parser("status", help="show a running core's queues, nodes and pending asks")
    status.add_argument(
        "--core", default="http://127.0.0.1:9080", help="the core's REST API (default http://127.0.0.1:9080)"
    )
    status.add_argument("--token-file", type=Path, default=None, help="file holding the REST bearer token")
    status.add_argument(
        "--ca-cert", type=Path, default=None, help="CA of the core's REST certificate (https)"
    )

    fake = commands.add_parser("fake", help="the fake resource manager")
    fake_commands = fake.add_subparsers(dest="fake_command", required=True)
    run = fake_commands.add_parser("run", help="run a scenario file against a core and report")
    run.add_argument("scenario", type=Path)
    run.add_argument(
        "--core",
        default=None,
        help="HOST:PORT of a running core; without it a core process is started and stopped",
    )
    run.add_argument("--speed", type=float, default=None, help="scenario seconds per real second")
    run.add_argument("--report", type=Path, default=None, help="write the full report as JSON here")
    run.add_argument("--plot", type=Path, default=None, help="write a PNG timeline here (needs matplotlib)")
    _add_client_tls_flags(run)
    _add_logging_flags(run, level="warning")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.command == "core":
        return _run_core(args)
    if args.command == "config":
        if args.config_command == "diff":
            from pykorn_cli.config_diff import diff_files

            return diff_files(args.old, args.new, args.core, args.rm_id, sys.stdout, tls=client_tls(args))
        from core.config.report import validate_file

        return validate_file(args.file, sys.stdout)
    if args.command == "k8s":
        from pykorn_cli.k8s_commands import run_k8s

        return run_k8s(args)
    if args.command == "admission":
        from pykorn_cli.k8s_commands import run_admission_controller

        return run_admission_controller(args)
    if args.command == "status":
        from pykorn_cli.status import show_status

        return show_status(
            args.core, sys.stdout, sys.stderr, token_file=args.token_file, ca_cert=args.ca_cert
        )
    if args.command == "fake":
        configure_logging(args.log_level, json_flag(args.log_format))
        from pykorn_cli.core_formats import CoreFormatReader
        from shim_fake.scenario.command import run_scenario

        progress = sys.stdout.isatty()
        tls = client_tls(args)
        if tls is not None and args.core is None:
            raise SystemExit(
                "pykorn fake: --core-ca/--core-cert/--core-key are for a running core given with --core"
            )
        return asyncio.run(
            run_scenario(
                args.scenario,
                CoreFormatReader(),
                args.core,
                args.speed,
                args.report,
                args.plot,
                sys.stdout,
                progress,
                tls=tls,
            )
        )
    return 2


def _run_core(args: argparse.Namespace) -> int:
    from core.config import ConfigError
    from core.config.input_limits import Limits
    from core.server.daemon import CoreOptions, run_core
    from core.server.tls import SecurityConfigError
    from pykorn_cli.gc_tuning import tune_garbage_collector

    # Checked before logging is set up: a refusal here is one line on stderr, nothing else.
    if args.rest_max_event_streams is None:
        # Half the cap at most (none with a cap of 1: every connection is kept for short requests).
        args.rest_max_event_streams = min(ConnectionBounds.max_event_streams, args.rest_max_connections // 2)
    if args.rest_max_event_streams >= args.rest_max_connections:
        sys.stderr.write(
            f"pykorn core: --rest-max-event-streams ({args.rest_max_event_streams}) must be below "
            f"--rest-max-connections ({args.rest_max_connections}): short requests need room\n"
        )
        return 2
    # Live levels: an RM's extraConfig may set log.level and log.core.*.level while running.
    configure_logging(args.log_level, json_flag(args.log_format), live=True)
    try:
        limits = Limits.from_overrides(args.limit)
    except ValueError as exc:
        sys.stderr.write(f"pykorn core: --limit: {exc}\n")
        return 2
    options = CoreOptions(
        listen=args.listen,
        config_path=args.config,
        port_file=args.port_file,
        rest_listen=args.rest_listen,
        rm_grace_period=args.rm_grace_period,
        event_log_size=args.event_log_size,
        rest_port_file=args.rest_port_file,
        tls_cert=args.tls_cert,
        tls_key=args.tls_key,
        tls_client_ca=args.tls_client_ca,
        rest_tls_cert=args.rest_tls_cert,
        rest_tls_key=args.rest_tls_key,
        rest_token_file=args.rest_token_file,
        limits=limits,
        log_levels=_live_levels(args.log_level),
        rest_bounds=ConnectionBounds(
            args.rest_header_timeout,
            args.rest_idle_timeout,
            args.rest_max_connections,
            args.rest_max_event_streams,
        ),
    )
    tune_garbage_collector()
    try:
        asyncio.run(run_core(options))
    except ConfigError as exc:
        sys.stderr.write(f"pykorn core: the configuration {args.config} is invalid:\n")
        for problem in exc.problems:
            sys.stderr.write(f"  {problem}\n")
        return 2
    except SecurityConfigError as exc:
        sys.stderr.write(f"pykorn core: {exc}\n")
        return 2
    except OSError as exc:
        sys.stderr.write(f"pykorn core: {exc}\n")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
