"""`pykorn k8s` and `pykorn admission`: run until SIGTERM or SIGINT, each cause of the cluster's said
in one line with exit status 1."""

from __future__ import annotations

import argparse
import asyncio
import signal
import sys
from typing import TYPE_CHECKING

from pykorn_cli.gc_tuning import tune_garbage_collector
from pykorn_cli.options import client_tls, json_flag
from rmclient.logging_setup import configure_logging

if TYPE_CHECKING:
    from shim_k8s.api.leader import LeaderElection


def run_k8s(args: argparse.Namespace) -> int:
    from shim_k8s.api.leader import LeadershipLost
    from shim_k8s.main import ApiLimits, StartupError, run_shim

    configure_logging(args.log_level, json_flag(args.log_format), live=True)  # log.* from the ConfigMaps
    tls = client_tls(args)
    election = leader_election(args)

    async def until_signalled() -> None:
        stop = _stop_on_signals()
        await run_shim(
            args.core, args.kubeconfig, args.scheduler_name, args.namespace, args.rm_id, stop=stop, tls=tls,
            placeholder_image=args.placeholder_image,
            limits=ApiLimits(args.kube_qps, args.kube_burst, args.kube_in_flight), election=election,
            log_level=args.log_level, reconcile_period=args.reconcile_period,
            metrics_listen=args.metrics_listen,
        )  # fmt: skip

    tune_garbage_collector()
    try:
        asyncio.run(until_signalled())
    except (LeadershipLost, StartupError) as exc:  # the cluster's cause: exit 1, and say why
        sys.stderr.write(f"pykorn k8s: {exc}\n")
        return 1
    return 0


def _stop_on_signals() -> asyncio.Event:
    """An event SIGTERM and SIGINT set: a clean stop (bindings under way finish, the Lease is given up).
    A handler of its own is needed: in a container the process is PID 1, to which the kernel delivers
    no signal it has no handler for, so without one a pod would only stop at the SIGKILL."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    return stop


def run_admission_controller(args: argparse.Namespace) -> int:
    from shim_k8s.admission.server import run_admission
    from shim_k8s.admission.webhook_setup import SetupError

    if (args.tls_cert is None) != (args.tls_key is None):
        sys.stderr.write("pykorn admission: give --tls-cert and --tls-key together, or neither\n")
        return 2
    configure_logging(args.log_level, json_flag(args.log_format))

    async def until_signalled() -> None:
        await run_admission(
            args.port, args.tls_cert, args.tls_key, args.namespace, args.kubeconfig,
            core_rest=args.core_rest, bind=args.bind, core_rest_ca=args.core_rest_ca,
            secret=args.secret_name, stop=_stop_on_signals(),
        )  # fmt: skip

    tune_garbage_collector()
    try:
        asyncio.run(until_signalled())
    except SetupError as exc:  # the installation's cause: exit 1, and say why
        sys.stderr.write(f"pykorn admission: {exc}\n")
        return 1
    return 0


def leader_election(args: argparse.Namespace) -> LeaderElection | None:
    if not args.leader_elect:
        return None
    from shim_k8s.api.leader import LeaderElection, default_identity

    try:
        return LeaderElection(
            args.leader_elect_resource_name, args.leader_elect_resource_namespace or args.namespace,
            args.leader_elect_lease_duration, args.leader_elect_renew_deadline,
            args.leader_elect_retry_period, args.leader_elect_identity or default_identity(),
        )  # fmt: skip
    except ValueError as exc:
        raise SystemExit(f"pykorn k8s: {exc}") from None
