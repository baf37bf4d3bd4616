"""An operator's redrive of a failed invocation: the function that failed, invoked again with the event.

A self-healing ``ExhaustedRecord`` and a Lambda on-failure destination record both say which function
failed and with which event (``FailureDetail``: ``payload`` = the event as it first arrived, ``meta`` =
function, retry id, attempt, first failure). :func:`reinvocation` turns one into the parameters of an
asynchronous Invoke, the same call the pattern's own redrive makes:

- by default the retry state goes on (same id, the next attempt, the first failure kept; see
  :mod:`serverless_retry.selfheal.state`), so an event whose budget was spent and that fails again is
  exhausted at once instead of starting a second retry storm;
- ``fresh`` sends the event exactly as it first arrived: attempt 1, a fresh budget.

Pure: no AWS. Anything that cannot be invoked again raises :class:`NotReinvocable` with the reason,
and the message stays where it is.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from serverless_retry.envelope import MAX_ATTEMPT, format_time, parse_time
from serverless_retry.selfheal.state import attach, function_name, unqualified_function_arn
from serverless_retry.selfheal.types import (
    ASYNC_INVOKE_MAX_BYTES,
    ERROR_INVALID_RECORD,
    FailureDetail,
    RetryState,
)

__all__ = ["NotReinvocable", "Reinvocation", "reinvocation"]

_REDRIVABLE_SOURCES = ("sns", "eventbridge", "direct")


class NotReinvocable(ValueError):
    """This message cannot be re-invoked (it stays in place); the text says why and what to do."""


@dataclass(frozen=True)
class Reinvocation:
    function: str  # FunctionName for Invoke: the failed function's unqualified ARN, or the one named
    payload: str  # the event, with the continued retry state unless fresh (JSON)
    form: str  # "next-attempt" (state continued) or "original" (as it first arrived)
    note: str = ""


def _state(meta: Mapping[str, Any]) -> RetryState:
    """The retry state of the attempt after the one recorded: same id and first failure."""
    retry_id, attempt, first = meta.get("retry_id"), meta.get("attempt"), meta.get("first_failed_at")
    if not isinstance(retry_id, str) or not retry_id:
        raise NotReinvocable("the record names no retry id to continue: redrive it with a fresh budget")
    if isinstance(attempt, bool) or not isinstance(attempt, int) or attempt < 1:
        raise NotReinvocable(f"the record's attempt {attempt!r} is not a whole number >= 1")
    try:
        first_failed_at = format_time(parse_time(first if isinstance(first, str) else ""))
    except ValueError:
        raise NotReinvocable(f"the record's first_failed_at {first!r} is not a timestamp") from None
    return {
        "v": 1,
        "id": retry_id,
        "attempt": attempt + 1,
        "first_failed_at": first_failed_at,
        "previous_delay_seconds": 0,
    }


def reinvocation(detail: FailureDetail, *, fresh: bool, function: str | None = None) -> Reinvocation:
    """How to invoke the failed function again with ``detail``'s event. ``function`` (a name or ARN)
    confines the redrive to that one function: a record of another function is refused."""
    meta: Mapping[str, Any] = detail["meta"]
    if meta.get("error_type") == ERROR_INVALID_RECORD or meta.get("problem"):
        raise NotReinvocable(
            "an invalid failure record: its payload is the raw failure-queue body, not an event a function "
            f"took ({meta.get('problem') or 'unreadable'}); look at it with inspect --bodies"
        )
    source_type = meta.get("source_type")
    parsed = unqualified_function_arn(str(meta.get("function_arn", "")))
    if source_type not in _REDRIVABLE_SOURCES or parsed is None:
        raise NotReinvocable(f"the record names no function that failed (source type {source_type!r})")
    failed_arn, failed_name, _qualifier = parsed
    target = failed_arn
    if function is not None:
        if function_name(function) != failed_name:
            raise NotReinvocable(
                f"failed in {failed_name}, not in {function}: select one function's records with "
                "--source <its name>, or give --to-function alone to send each record to its own function"
            )
        target = function
    note = ""
    state: RetryState | None = None
    if not fresh:
        state = _state(meta)
        if state["attempt"] > MAX_ATTEMPT:
            note = f"attempt {state['attempt'] - 1} is the last one retry state can carry: sent as it first arrived"
            state = None
    payload = detail["payload"]
    ref = detail.get("payload_ref")
    if payload is None and isinstance(ref, Mapping):
        raise NotReinvocable(
            f"the payload is in S3 (s3://{ref.get('bucket')}/{ref.get('key')}), not in the message: the "
            "pattern's own redrive and serverless-retry redrive --to-function read it from there"
        )
    try:
        event = payload if state is None else attach(payload, source_type, state)
    except (KeyError, IndexError, TypeError):
        raise NotReinvocable(f"the payload is not the {source_type} event its record says it is") from None
    text = json.dumps(event, ensure_ascii=False, separators=(",", ":"))
    size = len(text.encode("utf-8"))
    if size > ASYNC_INVOKE_MAX_BYTES:
        raise NotReinvocable(
            f"the event is {size} bytes; an asynchronous Invoke takes {ASYNC_INVOKE_MAX_BYTES}"
        )
    return Reinvocation(target, text, "original" if state is None else "next-attempt", note)
