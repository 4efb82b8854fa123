"""Scenarios read as `pykorn fake run` reads them: with the core's reading of the formats a scenario
borrows (pykorn_cli.core_formats), which the fake shim takes as an argument instead of importing the core."""

from __future__ import annotations

from pathlib import Path

from pykorn_cli.core_formats import CoreFormatReader
from shim_fake.scenario import Scenario, loader, recording

CORE_FORMATS = CoreFormatReader()


def parse_scenario(text: str, source: str = "<scenario>", base_dir: Path | None = None) -> Scenario:
    return loader.parse_scenario(text, CORE_FORMATS, source=source, base_dir=base_dir)


def load_scenario(path: Path) -> Scenario:
    return loader.load_scenario(path, CORE_FORMATS)


def queue_limits(config_text: str) -> dict[str, recording.QueueLimits]:
    return recording.queue_limits(config_text, CORE_FORMATS)
