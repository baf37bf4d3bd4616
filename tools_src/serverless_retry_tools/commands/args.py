"""Argument types shared by the subcommands: nonsense values are usage errors (exit 2) with a message
that names the flag, never a traceback or a silent default."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from datetime import UTC, datetime

from serverless_retry.policy import retry_after_seconds
from serverless_retry.redrive.options import OptionsError, parse_duration, parse_rate

__all__ = [
    "EXAMPLES_FORMATTER",
    "UsageError",
    "duration",
    "error_class_name",
    "http_status",
    "int_range",
    "rate",
    "retry_after",
]

EXAMPLES_FORMATTER = argparse.RawDescriptionHelpFormatter


class UsageError(Exception):
    """A command-line mistake found after parsing (exit 2, one line)."""


def int_range(minimum: int, maximum: int | None = None) -> Callable[[str], int]:
    """A whole number in [minimum, maximum]."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
        if value < minimum or (maximum is not None and value > maximum):
            bounds = f"from {minimum} to {maximum}" if maximum is not None else f"of at least {minimum}"
            raise argparse.ArgumentTypeError(f"expected a whole number {bounds}, got {value}")
        return value

    parse.__name__ = "whole number"
    return parse


def http_status(text: str) -> int:
    """An HTTP status code, 100 to 599."""
    return int_range(100, 599)(text)


def duration(text: str) -> float:
    """90s, 15m, 2h, 7d (or seconds) → seconds."""
    try:
        return parse_duration(text, "duration")
    except OptionsError as exc:
        raise argparse.ArgumentTypeError(exc.problem) from None


def rate(text: str) -> float:
    """10, 10/s, 0.5/s or 30/m → messages per second."""
    try:
        return parse_rate(text, "rate")
    except OptionsError as exc:
        raise argparse.ArgumentTypeError(exc.problem) from None


def retry_after(text: str) -> str:
    """A Retry-After value as an HTTP server sends it: delta-seconds (``120``) or an HTTP-date
    (``Wed, 21 Oct 2026 07:28:00 GMT``). The consumer ignores anything else, so simulating it would
    show a policy's plain backoff under a hint that was never read: refused instead."""
    if retry_after_seconds(text, datetime.now(UTC)) is None:
        raise argparse.ArgumentTypeError(
            f"expected seconds (120) or an HTTP date (Wed, 21 Oct 2026 07:28:00 GMT), got {text!r}"
        )
    return text


def error_class_name(text: str) -> str:
    """An exception class name as Python spells it: ``TimeoutError``, ``botocore.exceptions.ClientError``."""
    if not text or not all(part.isidentifier() for part in text.split(".")):
        raise argparse.ArgumentTypeError(
            f"expected an exception class name such as TimeoutError or requests.HTTPError, got {text!r}"
        )
    return text
