"""`pykorn k8s` and `pykorn admission`: run until SIGTERM or SIGINT, each cause of the cluster's said
in one line with exit status 1."""

from __future__ import annotations

import argparse
import asyncio
import signal
from typing import TYPE_CHECKING

from pykorn_cli.errors import FAILED, UNREACHABLE, CliError
from pykorn_cli.gc_tuning import tune_garbage_collector
from pykorn_cli.options import client_tls, json_flag
from rmclient.logging_setup import configure_logging

if TYPE_CHECKING:
    from shim_k8s.api.leader import LeaderElection


def run_k8s(args: argparse.Namespace) -> int:
    from shim_k8s.api.kubeconfig import KubeconfigError
    from shim_k8s.api.leader import LeadershipLost
    from shim_k8s.api.own_pod import OwnPod
    from shim_k8s.api.startup import StartupError
    from shim_k8s.main import ApiLimits, run_shim

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
            metrics_listen=args.metrics_listen, own_pod=OwnPod.from_environment(),
        )  # fmt: skip

    tune_garbage_collector()
    try:
        asyncio.run(until_signalled())
    except KubeconfigError as exc:
        raise CliError(str(exc)) from None
    except StartupError as exc:  # the API server or the core does not answer
        raise CliError(str(exc), UNREACHABLE) from None
    except LeadershipLost as exc:  # the cluster's cause: say why
        raise CliError(str(exc), FAILED) from None
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
    from shim_k8s.api.kube_http import TRANSPORT_ERRORS
    from shim_k8s.api.kubeconfig import KubeconfigError
    from shim_k8s.api.startup import StartupError, described

    _check_admission_files(args)
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
    except KubeconfigError as exc:
        raise CliError(str(exc)) from None
    except SetupError as exc:  # the installation's cause: exit 1, and say why
        raise CliError(str(exc), FAILED) from None
    except StartupError as exc:  # the API server does not answer, or its port is taken
        raise CliError(str(exc), UNREACHABLE) from None
    except TRANSPORT_ERRORS as exc:  # the API server went away while it set itself up
        raise CliError(f"lost the API server while setting up: {described(exc)}", UNREACHABLE) from None
    return 0


def _check_admission_files(args: argparse.Namespace) -> None:
    """The certificate files it is given, read before anything starts."""
    import ssl

    from shim_k8s.admission.server import tls_context

    if (args.tls_cert is None) != (args.tls_key is None):
        raise CliError("give --tls-cert and --tls-key together, or neither")
    try:
        if args.tls_cert is not None:
            tls_context(args.tls_cert, args.tls_key)
    except (OSError, ValueError) as exc:  # ssl.SSLError is an OSError
        raise CliError(f"--tls-cert/--tls-key: cannot serve them: {_reason(exc)}") from None
    try:
        if args.core_rest_ca is not None:
            ssl.create_default_context(cafile=args.core_rest_ca)
    except (OSError, ValueError) as exc:
        raise CliError(
            f"--core-rest-ca {args.core_rest_ca}: not a CA certificate it can read: {_reason(exc)}"
        ) from None


def _reason(exc: BaseException) -> str:
    return getattr(exc, "strerror", None) or str(exc) or type(exc).__name__


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
        raise CliError(str(exc)) from None
