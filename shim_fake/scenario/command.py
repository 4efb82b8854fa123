"""`pykorn fake run SCENARIO.yaml`: load, start a core if none is given, run, report, check."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import TextIO

import grpc

from rmclient.client import SchedulerClient
from rmclient.core_process import CoreProcess
from rmclient.tls import ClientTLS
from shim_fake.scenario.core_formats import CoreFormats
from shim_fake.scenario.expectations import check
from shim_fake.scenario.loader import ScenarioError, parse_scenario
from shim_fake.scenario.plot import PlotUnavailable, write_plot
from shim_fake.scenario.report import build_report, write_summary
from shim_fake.scenario.runner import Runner

EXIT_OK = 0
EXIT_UNMET = 1  # the run finished but expectations were not met
EXIT_INVALID = 2  # the scenario is wrong: nothing was started
EXIT_REFUSED = 3  # the core refused to work with us (bad config, wrong identity) or never answered


async def run_scenario(
    path: Path,
    text: str,
    formats: CoreFormats,
    core_address: str | None,
    speed: float | None,
    report_path: Path | None,
    plot_path: Path | None,
    out: TextIO,
    progress: bool,
    tls: ClientTLS | None = None,
    history: str = "",
) -> int:
    """`text`: the scenario file's (read by the command, which says when it cannot be);
    `formats`: the core's reading of what a scenario borrows from it (given by the command, which
    may import the core); `tls`: how to reach the core given by `core_address`; a core started here
    is plaintext; `history`: the history database of a core started here (`pykorn core --history`)."""
    try:
        scenario = parse_scenario(text, formats, source=str(path), base_dir=path.parent)
    except ScenarioError as exc:
        out.write(f"{exc}\n")
        return EXIT_INVALID
    if plot_path is not None:
        try:
            import matplotlib  # noqa: F401
        except ImportError:
            out.write("--plot needs matplotlib: pip install 'pykorn-scheduler[plot]'\n")
            return EXIT_INVALID
    speed = speed or scenario.speed
    # The core this run starts is stopped whatever ends the run: a refusal, Ctrl-C, or a reader of
    # `out` gone (`pykorn fake run ... | head`), which fails the next write.
    if history and core_address is not None:
        out.write("--history is for the core this run starts: give it to the running core instead\n")
        return EXIT_INVALID
    core = CoreProcess(extra_args=["--history", history] if history else []) if core_address is None else None
    started = time.monotonic()
    try:
        if core is not None:
            core_address = await core.start()
            out.write(f"started pykorn core on {core_address}\n")
        assert core_address is not None
        out.write(f"running {scenario.name} at speed {speed:g} ({scenario.task_count()} tasks)\n")
        started = time.monotonic()
        async with SchedulerClient(
            core_address, f"fake-{scenario.name}", tls=tls if core is None else None
        ) as client:
            runner = Runner(scenario, client, speed, out if progress else None)
            recording = await runner.run()
    except grpc.aio.AioRpcError as exc:
        out.write(f"the core refused this RM: {exc.code().name}: {exc.details()}\n")
        return EXIT_REFUSED
    except TimeoutError:
        out.write(f"no core answered on {core_address}\n")
        return EXIT_REFUSED
    finally:
        if core is not None:
            code = await core.stop()
            if code != 0:
                out.write(f"core exited with {code}\n")
    outcomes = check(scenario.expectations, recording)
    report = build_report(recording, outcomes, speed, time.monotonic() - started)
    write_summary(report, out)
    if history:
        out.write(f"\nhistory written to {history}; to read it: pykorn history --db {history} apps\n")
    if report_path is not None:
        report_path.parent.mkdir(parents=True, exist_ok=True)
        report_path.write_text(json.dumps(report, indent=2) + "\n")
        out.write(f"\nreport written to {report_path}\n")
    if plot_path is not None:
        try:
            write_plot(recording, plot_path)
            out.write(f"plot written to {plot_path}\n")
        except PlotUnavailable as exc:
            out.write(f"{exc}\n")
    return EXIT_OK if report["all_expectations_met"] else EXIT_UNMET
