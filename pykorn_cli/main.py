"""The `pykorn` command: `pykorn core`, `pykorn config validate|diff`, `pykorn k8s`, `pykorn admission`,
`pykorn status`, `pykorn fake run`. Each subcommand imports what it runs only when chosen, so
`pykorn core` loads no shim."""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path
from typing import NoReturn

from core.server.rest_connections import ConnectionBounds
from pykorn_cli import arg_types
from pykorn_cli.errors import USAGE, CliError, guarded
from pykorn_cli.files import read_text
from pykorn_cli.history_parser import add_history_parser
from pykorn_cli.options import client_tls, json_flag, status_url
from rmclient.logging_setup import configure_logging


def _add_logging_flags(parser: argparse.ArgumentParser, level: str = "info") -> None:
    parser.add_argument("--log-level", default=level, choices=["debug", "info", "warning", "error"])
    parser.add_argument(
        "--log-format",
        choices=["json", "console"],
        default=None,
        help="default: console on a terminal, JSON otherwise",
    )


def _add_rest_bound_flags(core: argparse.ArgumentParser) -> None:
    bounds = ConnectionBounds()
    rest = core.add_argument_group("REST connections (docs/reliability.md)")
    rest.add_argument(
        "--rest-header-timeout",
        type=arg_types.positive_seconds,
        default=bounds.header_timeout,
        help="seconds a new connection has to send its request header, and validate-conf its body "
        f"({bounds.header_timeout:g})",
    )
    rest.add_argument(
        "--rest-idle-timeout",
        type=arg_types.positive_seconds,
        default=bounds.idle_timeout,
        help=f"seconds a kept-alive connection may wait for its next request ({bounds.idle_timeout:g})",
    )
    rest.add_argument(
        "--rest-max-connections",
        type=arg_types.positive_int,
        default=bounds.max_connections,
        help="connections open at once; past it a new one pushes out the oldest that has not sent a "
        f"whole header, or gets 503 ({bounds.max_connections})",
    )
    rest.add_argument(
        "--rest-max-event-streams",
        type=arg_types.positive_int,
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


def _add_leader_election_flags(parser: argparse.ArgumentParser) -> None:
    """kube-scheduler's --leader-elect flags (a coordination.k8s.io Lease), with its defaults."""
    group = parser.add_argument_group("leader election (several replicas, one active)")
    group.add_argument("--leader-elect", action="store_true", help="schedule only while holding the Lease")
    group.add_argument(
        "--leader-elect-lease-duration",
        type=arg_types.duration,
        default=15.0,
        help="how long a standby waits after the last renewal before taking over (15s)",
    )
    group.add_argument(
        "--leader-elect-renew-deadline",
        type=arg_types.duration,
        default=10.0,
        help="how long the leader tries to renew before it stops (10s)",
    )
    group.add_argument(
        "--leader-elect-retry-period",
        type=arg_types.duration,
        default=2.0,
        help="between attempts to take or renew the Lease (2s)",
    )
    group.add_argument("--leader-elect-resource-name", default="pykorn", help="the Lease's name (pykorn)")
    group.add_argument(
        "--leader-elect-resource-namespace", default=None, help="the Lease's namespace (default: --namespace)"
    )
    group.add_argument("--leader-elect-identity", default=None,
                       help="its name in the Lease (default: host name, unique suffix)")  # fmt: skip


def _add_debug_flag(parser: argparse.ArgumentParser, default: object = argparse.SUPPRESS) -> None:
    # On every subcommand too, so that `pykorn core ... --debug` works where the flags are read; the
    # subcommands' SUPPRESS keeps a `pykorn --debug core` from being reset by them.
    parser.add_argument(
        "--debug", action="store_true", default=default, help="on an unexpected error, print the traceback"
    )


class _Parser(argparse.ArgumentParser):
    """argparse's parser, ending a mistake in one line (its own prints the whole usage first)."""

    def error(self, message: str) -> NoReturn:
        self.exit(USAGE, f"{self.prog}: {message} (`{self.prog} --help` lists what it takes)\n")


def _parse_args(parser: argparse.ArgumentParser, argv: list[str] | None) -> argparse.Namespace:
    """As `parse_args`, but an unknown flag is said by the subcommand it was given to (`pykorn
    status: unrecognized arguments ...`), whose --help lists what it takes."""
    args, extra = parser.parse_known_args(argv)
    if extra:
        _chosen_subcommand(parser, args).error(f"unrecognized arguments: {' '.join(extra)}")
    return args


def _chosen_subcommand(parser: argparse.ArgumentParser, args: argparse.Namespace) -> argparse.ArgumentParser:
    for action in parser._actions:  # argparse keeps its subcommands nowhere public
        if isinstance(action, argparse._SubParsersAction):
            chosen = action.choices.get(getattr(args, action.dest, None) or "")
            if chosen is not None:
                return _chosen_subcommand(chosen, args)
    return parser


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="pykorn", description="A YuniKorn-style scheduler core.")
    parser.add_argument("--version", action="version", version=version_line())
    _add_debug_flag(parser, default=False)
    commands = parser.add_subparsers(dest="command", required=True)

    core = commands.add_parser("core", help="run the scheduler core daemon (gRPC si.v1.Scheduler)")
    core.add_argument(
        "--listen",
        type=arg_types.listen_address,
        default="127.0.0.1:3333",
        help="gRPC address (default 127.0.0.1:3333)",
    )
    core.add_argument(
        "--config",
        type=Path,
        default=None,
        help="queues.yaml used when an RM registers without a config (default: bundled)",
    )
    core.add_argument("--port-file", type=Path, default=None, help="write the bound port here once listening")
    core.add_argument(
        "--rest-listen",
        type=arg_types.optional_listen_address,
        default="127.0.0.1:9080",
        help="REST state API (ws/v1) address (default 127.0.0.1:9080; empty to turn it off)",
    )
    core.add_argument(
        "--rest-port-file", type=Path, default=None, help="write the REST port here once listening"
    )
    core.add_argument(
        "--rm-grace-period",
        type=arg_types.non_negative_seconds,
        default=60.0,
        help="seconds a resource manager with no stream open keeps its state before it is removed (60)",
    )
    core.add_argument(
        "--history",
        type=arg_types.history_url,
        default="",
        help="record applications, allocations, queue usage and events in this database: "
        "sqlite:///path/history.db or postgresql://user:password@host:port/db "
        "(default: off; docs/history.md)",
    )
    core.add_argument(
        "--history-retention",
        type=arg_types.retention,
        default=30 * 86400.0,
        help="how long history is kept, pruned in the background (default 30d; 0: keep all)",
    )
    core.add_argument(
        "--event-log-size",
        type=arg_types.positive_int,
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
        type=arg_types.positive_number,
        default=5000.0,
        help="requests a second to the API server (events apart), as YuniKorn's kubernetes.qps "
        "(default 5000; YuniKorn's is 1000)",
    )
    k8s.add_argument(
        "--kube-burst",
        type=arg_types.positive_int,
        default=10000,
        help="requests above the rate allowed at once, as YuniKorn's kubernetes.burst "
        "(default 10000; YuniKorn's is 1000)",
    )
    k8s.add_argument("--kube-in-flight", type=arg_types.positive_int, default=64,
                     help="requests to the API server in flight at once (default 64)")  # fmt: skip
    k8s.add_argument("--reconcile-period", type=arg_types.duration, default=60.0,
                     help="how often the core's view is checked against the API's (60s)")  # fmt: skip
    k8s.add_argument("--metrics-listen", type=arg_types.optional_listen_address, default="",
                     help="HOST:PORT for the Prometheus metrics (/metrics); off by default")  # fmt: skip
    _add_leader_election_flags(k8s)
    _add_client_tls_flags(k8s)
    _add_logging_flags(k8s)

    hook = commands.add_parser(
        "admission", help="the admission controller: mutating webhook for pods, validating for the configmaps"
    )
    hook.add_argument(
        "--port", type=arg_types.port, default=9089, help="HTTPS port (default 9089, as YuniKorn's)"
    )
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
        "--core-rest",
        default=None,
        help="HOST:PORT or URL (https://... when the core's REST API uses TLS) of the core's REST API "
        "(default http://127.0.0.1:9080)",
    )
    # Before --core-rest it was --core, which every other command takes for the gRPC address: still
    # taken, with a warning (status_url).
    status.add_argument("--core", default=None, help=argparse.SUPPRESS)
    status.add_argument("--token-file", type=Path, default=None, help="file holding the REST bearer token")
    status.add_argument(
        "--ca-cert", type=Path, default=None, help="CA of the core's REST certificate (https)"
    )

    history_leaves = add_history_parser(commands)

    fake = commands.add_parser("fake", help="the fake resource manager")
    fake_commands = fake.add_subparsers(dest="fake_command", required=True)
    run = fake_commands.add_parser("run", help="run a scenario file against a core and report")
    run.add_argument("scenario", type=Path)
    run.add_argument(
        "--core",
        default=None,
        help="HOST:PORT of a running core; without it a core process is started and stopped",
    )
    run.add_argument(
        "--speed", type=arg_types.positive_number, default=None, help="scenario seconds per real second"
    )
    run.add_argument("--report", type=Path, default=None, help="write the full report as JSON here")
    run.add_argument("--plot", type=Path, default=None, help="write a PNG timeline here (needs matplotlib)")
    run.add_argument(
        "--history", type=arg_types.history_url, default="",
        help="the history database of the core this run starts (pykorn core --history; docs/history.md)",
    )  # fmt: skip
    _add_client_tls_flags(run)
    _add_logging_flags(run, level="warning")
    for leaf in (core, validate, diff, k8s, hook, status, run, *history_leaves):
        _add_debug_flag(leaf)
    return parser


def version_line() -> str:
    from pykorn_cli.versions import PYKORN_VERSION, TRACKS

    return f"pykorn {PYKORN_VERSION} (tracks {TRACKS})"


def main(argv: list[str] | None = None) -> int:
    args = _parse_args(build_parser(), argv)
    command = " ".join(filter(None, (args.command, getattr(args, "config_command", None),
                                     getattr(args, "fake_command", None))))  # fmt: skip
    return guarded(command, args.debug, lambda: _dispatch(args))


def _dispatch(args: argparse.Namespace) -> int:
    if args.command == "core":
        from pykorn_cli.core_command import run_core_command

        return run_core_command(args)
    if args.command == "config":
        if args.config_command == "diff":
            from pykorn_cli.config_diff import diff_files

            tls = client_tls(args)
            if args.core is None and (args.rm_id or tls is not None):
                raise CliError(
                    "--rm-id and --core-ca/--core-cert/--core-key are for the preview: give --core too"
                )
            return diff_files(args.old, args.new, args.core, args.rm_id, sys.stdout, tls=tls)
        from core.config.report import validate_text
        from pykorn_cli.configmap_dump import queues_text

        return validate_text(args.file, read_text(args.file), sys.stdout, unwrap=queues_text)
    if args.command == "k8s":
        from pykorn_cli.k8s_commands import run_k8s

        return run_k8s(args)
    if args.command == "admission":
        from pykorn_cli.k8s_commands import run_admission_controller

        return run_admission_controller(args)
    if args.command == "status":
        from pykorn_cli.status import show_status

        return show_status(
            status_url(args), sys.stdout, sys.stderr, token_file=args.token_file, ca_cert=args.ca_cert
        )
    if args.command == "history":
        from pykorn_cli.history_command import run_history

        return run_history(
            status_url(args), args, sys.stdout, token_file=args.token_file, ca_cert=args.ca_cert
        )
    if args.command == "fake":
        return _run_fake(args)
    return USAGE


def _run_fake(args: argparse.Namespace) -> int:
    configure_logging(args.log_level, json_flag(args.log_format))
    from pykorn_cli.core_formats import CoreFormatReader
    from shim_fake.scenario.command import run_scenario

    progress = sys.stdout.isatty()
    tls = client_tls(args)
    if tls is not None and args.core is None:
        raise CliError("--core-ca/--core-cert/--core-key are for a running core given with --core")
    return asyncio.run(
        run_scenario(
            args.scenario,
            read_text(args.scenario),
            CoreFormatReader(),
            args.core,
            args.speed,
            args.report,
            args.plot,
            sys.stdout,
            progress,
            tls=tls,
            history=args.history,
        )
    )


if __name__ == "__main__":
    sys.exit(main())
