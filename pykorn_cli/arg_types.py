"""What the `pykorn` flags take: argparse types that refuse a bad value with the form it should have."""

from __future__ import annotations

import argparse

from core.server.addresses import split_host_port

MAX_COUNT = 2**31 - 1  # what a C int holds: sizes handed to the runtime (a deque's maxlen) must fit


def non_negative_seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not value >= 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"{text!r} must be a finite number of seconds, 0 or more")
    return value


def positive_seconds(text: str) -> float:
    value = non_negative_seconds(text)
    if value == 0:
        raise argparse.ArgumentTypeError(f"{text!r} must be more than 0 seconds")
    return value


def duration(text: str) -> float:
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


def retention(text: str) -> float:
    """A retention: days, hours or minutes ("30d", "12h", "90m"); 0 keeps everything."""
    units = {"d": 86400.0, "h": 3600.0, "m": 60.0}
    if text == "0":
        return 0.0
    number, unit = text[:-1], text[-1:]
    try:
        seconds = float(number) * units[unit]
    except (ValueError, KeyError):
        why = "is not a retention (examples: 30d, 12h, 90m; 0: keep all)"
        raise argparse.ArgumentTypeError(f"{text!r} {why}") from None
    if not seconds > 0 or seconds == float("inf"):
        raise argparse.ArgumentTypeError(f"{text!r} must be more than zero (0: keep all)")
    return seconds


def history_url(text: str) -> str:
    """A history database: sqlite:///path/history.db or postgresql://user:password@host:port/db; ""
    (the default) for none."""
    if text and not text.startswith(("sqlite:///", "postgresql://", "postgresql+psycopg://")):
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a history database URL (sqlite:///path/history.db or postgresql://...)"
        )
    if text.startswith("postgresql://"):  # the driver pykorn installs: psycopg 3
        text = "postgresql+psycopg://" + text.removeprefix("postgresql://")
    return text


def listen_address(text: str) -> str:
    try:
        split_host_port(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return text


def optional_listen_address(text: str) -> str:
    return listen_address(text) if text else text


def positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} must be 1 or more")
    if value > MAX_COUNT:
        raise argparse.ArgumentTypeError(f"{text!r} is more than this flag can hold ({MAX_COUNT})")
    return value


def positive_number(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not 0 < value < float("inf"):
        raise argparse.ArgumentTypeError(f"{text!r} must be a finite number above 0")
    return value


def port(text: str) -> int:
    if not text.isdigit() or not 1 <= int(text) <= 65535:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port: a number from 1 to 65535")
    return int(text)
