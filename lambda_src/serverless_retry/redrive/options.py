"""The options of a redrive, validated once for every way in: the ``serverless-retry redrive`` command
and the ``handlers.redrive_queue`` Lambda event take the same names and go through
:func:`options_from_mapping`, so a nonsense value is refused the same way in both. Pure.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from serverless_retry.selfheal.state import function_name

__all__ = [
    "NATIVE_MAX_RATE",
    "OPTION_KEYS",
    "OptionsError",
    "RedriveOptions",
    "options_from_mapping",
    "parse_duration",
    "parse_rate",
]

# StartMessageMoveTask: "The maximum value for messages per second is 500."
NATIVE_MAX_RATE = 500
# A client-side redrive sends one message per SendMessage call; beyond this a rate is no limit at all.
CLIENT_MAX_RATE = 1000.0
MAX_MESSAGES_LIMIT = 1_000_000

OPTION_KEYS = (
    "from_queue_url",
    "to_queue_url",
    "to_function",
    "outcome",
    "error_type",
    "source",
    "older_than",
    "newer_than",
    "max",
    "rate",
    "reset_attempts",
    "dry_run",
    "native",
    "message_group_id",
)


class OptionsError(ValueError):
    """A redrive option is wrong; the message names the option (CLI flag or event key alike)."""

    def __init__(self, option: str, problem: str) -> None:
        super().__init__(f"{option}: {problem}")
        self.option = option
        self.problem = problem


@dataclass(frozen=True)
class RedriveOptions:
    from_queue_url: str
    to_queue_url: str | None = None  # None with native (back to each message's origin) or to_function
    # Re-invoke the function that failed (self-healing records, Lambda destination records) instead of
    # sending to a queue; ``function`` confines it to that one function (a name or ARN).
    to_function: bool = False
    function: str | None = None
    outcomes: tuple[str, ...] = ()
    error_types: tuple[str, ...] = ()
    sources: tuple[str, ...] = ()
    older_than: float | None = None  # seconds in the queue (SentTimestamp), exclusive
    newer_than: float | None = None
    max_messages: int | None = None  # None: every message the scan finds
    rate: float | None = None  # messages per second; None: as fast as SQS answers
    reset_attempts: bool = False  # False: keep the id, attempt count and history
    dry_run: bool = False
    native: bool = False
    message_group_id: str | None = None  # FIFO destinations

    @property
    def filtered(self) -> bool:
        return bool(self.outcomes or self.error_types or self.sources) or (
            self.older_than is not None or self.newer_than is not None
        )


_DURATION = re.compile(r"(?P<number>\d+(?:\.\d+)?)\s*(?P<unit>s|m|h|d)?")
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, None: 1}
_RATE = re.compile(r"(?P<number>\d+(?:\.\d+)?)\s*(?:/\s*(?P<unit>s|m))?")


def parse_duration(value: object, option: str = "duration") -> float:
    """``90``, ``90s``, ``15m``, ``2h``, ``7d`` (or a number of seconds) → seconds, > 0."""
    if isinstance(value, bool):
        raise OptionsError(option, f"expected a duration like 30m, 2h or 7d, got {value!r}")
    if isinstance(value, int | float):
        seconds = float(value)
    elif isinstance(value, str) and (match := _DURATION.fullmatch(value.strip())):
        seconds = float(match["number"]) * _UNITS[match["unit"]]
    else:
        raise OptionsError(option, f"expected a duration like 90s, 30m, 2h or 7d, got {value!r}")
    if not math.isfinite(seconds) or seconds <= 0:
        raise OptionsError(option, f"must be more than 0 seconds, got {value!r}")
    return seconds


def parse_rate(value: object, option: str = "rate") -> float:
    """``10``, ``10/s``, ``0.5/s`` or ``30/m`` → messages per second, > 0."""
    if isinstance(value, bool):
        raise OptionsError(option, f"expected messages per second like 10 or 10/s, got {value!r}")
    if isinstance(value, int | float):
        rate = float(value)
    elif isinstance(value, str) and (match := _RATE.fullmatch(value.strip())):
        rate = float(match["number"]) / (60 if match["unit"] == "m" else 1)
    else:
        raise OptionsError(option, f"expected messages per second like 10, 10/s or 30/m, got {value!r}")
    if not math.isfinite(rate) or rate <= 0:
        raise OptionsError(option, f"must be more than 0 messages per second, got {value!r}")
    if rate > CLIENT_MAX_RATE:
        raise OptionsError(option, f"at most {CLIENT_MAX_RATE:g} messages per second, got {value!r}")
    return rate


def _queue_url(value: object, option: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise OptionsError(option, f"expected a queue URL, got {value!r}")
    if not value.startswith(("https://", "http://")):
        raise OptionsError(
            option, f"expected a queue URL (https://sqs.<region>.amazonaws.com/...), got {value!r}"
        )
    return value


def _names(value: object, option: str) -> tuple[str, ...]:
    items = [value] if isinstance(value, str) else value
    if not isinstance(items, list | tuple) or not all(isinstance(i, str) and i for i in items):
        raise OptionsError(option, f"expected a name or a list of names, got {value!r}")
    return tuple(items)


def _function(value: object) -> tuple[bool, str | None]:
    """to_function: true (each record back to the function that failed) or one function's name/ARN."""
    if isinstance(value, bool):
        return value, None
    if isinstance(value, str):
        try:
            function_name(value)
        except ValueError as exc:
            raise OptionsError("to_function", str(exc)) from None
        return True, value
    raise OptionsError(
        "to_function",
        f"expected true (each record back to the function that failed) or a function name or ARN, got {value!r}",
    )


def _flag(value: object, option: str) -> bool:
    if not isinstance(value, bool):
        raise OptionsError(option, f"expected true or false, got {value!r}")
    return value


def options_from_mapping(data: Mapping[str, Any]) -> RedriveOptions:
    """Validate redrive options given by name (a Lambda event, or the CLI's parsed flags).

    Absent and ``None`` mean "not given". Unknown keys are refused, as in a retry policy: a typo
    must not silently widen what a redrive moves.
    """
    if not isinstance(data, Mapping):
        raise OptionsError("event", f"expected a JSON object of redrive options, got {type(data).__name__}")
    unknown = sorted(set(data) - set(OPTION_KEYS))
    if unknown:
        raise OptionsError(unknown[0], f"unknown option; known: {', '.join(OPTION_KEYS)}")
    given = {k: v for k, v in data.items() if v is not None}
    if "from_queue_url" not in given:
        raise OptionsError("from_queue_url", "required: the queue to redrive from")
    source_url = _queue_url(given["from_queue_url"], "from_queue_url")
    target_url = _queue_url(given["to_queue_url"], "to_queue_url") if "to_queue_url" in given else None
    to_function, function = _function(given["to_function"]) if "to_function" in given else (False, None)
    older = parse_duration(given["older_than"], "older_than") if "older_than" in given else None
    newer = parse_duration(given["newer_than"], "newer_than") if "newer_than" in given else None
    max_messages: int | None = None
    if "max" in given:
        value = given["max"]
        if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_MESSAGES_LIMIT:
            raise OptionsError(
                "max", f"expected a whole number from 1 to {MAX_MESSAGES_LIMIT}, got {value!r}"
            )
        max_messages = value
    options = RedriveOptions(
        from_queue_url=source_url,
        to_queue_url=target_url,
        to_function=to_function,
        function=function,
        outcomes=_names(given["outcome"], "outcome") if "outcome" in given else (),
        error_types=_names(given["error_type"], "error_type") if "error_type" in given else (),
        sources=_names(given["source"], "source") if "source" in given else (),
        older_than=older,
        newer_than=newer,
        max_messages=max_messages,
        rate=parse_rate(given["rate"], "rate") if "rate" in given else None,
        reset_attempts=_flag(given.get("reset_attempts", False), "reset_attempts"),
        dry_run=_flag(given.get("dry_run", False), "dry_run"),
        native=_flag(given.get("native", False), "native"),
        message_group_id=given.get("message_group_id"),
    )
    if options.message_group_id is not None and (
        not isinstance(options.message_group_id, str) or not 1 <= len(options.message_group_id) <= 128
    ):
        raise OptionsError(
            "message_group_id", f"expected 1 to 128 characters, got {options.message_group_id!r}"
        )
    if older is not None and newer is not None and older >= newer:
        raise OptionsError(
            "newer_than",
            f"selects nothing: a message older than {older:g} s cannot also be newer than {newer:g} s",
        )
    if target_url is not None and target_url.rstrip("/") == source_url.rstrip("/"):
        raise OptionsError(
            "to_queue_url", "is the queue being redriven: the messages would go round in a loop"
        )
    if to_function and target_url is not None:
        raise OptionsError(
            "to_function", "give to_function (re-invoke the failed function) or to_queue_url, not both"
        )
    if to_function and options.message_group_id is not None:
        raise OptionsError("message_group_id", "is for a FIFO destination queue, not for to_function")
    if options.native:
        _check_native(options)
    elif target_url is None and not to_function:
        raise OptionsError(
            "to_queue_url",
            "required: the queue to send the messages back to (or to_function, to re-invoke the function "
            "that failed, for self-healing records)",
        )
    return options


def _check_native(options: RedriveOptions) -> None:
    # StartMessageMoveTask moves every message of the DLQ, unchanged: nothing else applies to it.
    refused = [
        name
        for name, given in (
            ("outcome/error_type/source/older_than/newer_than", options.filtered),
            ("max", options.max_messages is not None),
            ("reset_attempts", options.reset_attempts),
            ("to_function", options.to_function),
            ("message_group_id", options.message_group_id is not None),
        )
        if given
    ]
    if refused:
        raise OptionsError(
            "native",
            f"StartMessageMoveTask moves every message of the queue unchanged; {', '.join(refused)} "
            "need the client-side redrive (leave out native)",
        )
    if options.rate is not None and (
        options.rate != int(options.rate) or not 1 <= options.rate <= NATIVE_MAX_RATE
    ):
        raise OptionsError(
            "rate",
            f"with native, a whole number of messages per second from 1 to {NATIVE_MAX_RATE}, got {options.rate:g}",
        )
