"""Terminal messages: what the retry-exhausted queue receives, and the one reader of every form of it.

Every terminal message carries its outcome and reason where ``read_terminal`` finds them. The writer,
``final_message``, takes the first form that fits the exhausted queue's maximum message size:

``envelope``
    the final envelope (docs/envelope.md) as the body: original body and attributes, history, outcome,
    reason, last error and traceback; no message attributes. Chosen whenever it fits.
``framed``
    the body is a one-line JSON header ``{"serverless_retry": {<summary>}}``, a newline, then the
    original body verbatim; the original message attributes go along verbatim. Nothing is escaped and
    no attribute is added (an original may already carry SQS's maximum of 10), so it is the original
    plus at most ``FRAME_OVERHEAD_BYTES``: it always fits when the exhausted queue's maximum is at
    least the source queue's plus ``FRAME_OVERHEAD_BYTES``. The summary holds outcome, reason, id,
    attempt, first failure, time, error type and message, and source (texts cut to fixed byte sizes).
    Should the exhausted queue be configured smaller than that, the header shrinks to outcome and
    reason (cut to fit), and only when not even the outcome fits is the original sent ``bare``.

``read_terminal`` also reads what earlier versions wrote: ``original+meta`` (the body verbatim with
the summary in a ``serverless_retry`` message attribute) and, as outcome ``unknown``, a bare message.
It reads retry envelopes too (outcome ``unknown``: SQS moved one to a DLQ after maxReceiveCount).

The self-healing pattern's retry-exhausted queue holds a form of its own, ``self-healing``: an
``ExhaustedRecord`` ``{"outcome", "reason", "detail": {"payload", "meta"}}`` (the exhausted rules'
InputTransformer, the redrive and the enrichment all write it; docs/self-healing-contract.md). Its
view names the retry id, attempt, error and first failure from ``meta``, the function that failed as
the source, and keeps the whole ``detail`` so a redrive can re-invoke that function with the event.
The enrichment's last resort for an event too large for everything (the raw destination record with
a compact ``serverless_retry`` attribute) reads as ``original+meta``.

Pure: no AWS, the time is passed in.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import datetime
from typing import TYPE_CHECKING, Any, Literal, NamedTuple, cast

from serverless_retry.envelope import (
    ENVELOPE_KEY,
    HistoryEntry,
    Incoming,
    MessageAttribute,
    Outcome,
    attributes_from_record,
    encode,
    error_text,
    final_envelope,
    fits,
    format_time,
    sqs_message_size,
    sqs_text,
)

if TYPE_CHECKING:
    from serverless_retry.payload_pointer import PayloadLocation, PayloadTarget, StoredPayload

    # Wire types only: selfheal/types.py is a leaf (it imports nothing of ours), read here by shape.
    from serverless_retry.selfheal.types import FailureDetail
    from serverless_retry.signing import EnvelopeSigner

__all__ = [
    "FRAME_OVERHEAD_BYTES",
    "FinalCopy",
    "FinalForm",
    "TerminalForm",
    "TerminalView",
    "final_copy",
    "final_message",
    "frame_header",
    "read_terminal",
]

# The framed form's header line, newline included, never exceeds this many bytes (UTF-8, as SQS
# counts). The retry-exhausted queue must be at least this much larger than the source queue.
FRAME_OVERHEAD_BYTES = 2048
# Byte budgets of the header's texts once JSON-escaped; with the fixed parts they add up to < 1800.
_FIELD_BYTES = {"id": 200, "reason": 512, "error": 512, "error_type": 128, "source": 200}
_MAX_HEADER_ATTEMPT = 10**18  # an absurd receive count is clamped rather than written in full
_HEADER_PREFIX = '{"' + ENVELOPE_KEY + '":'

FinalForm = Literal["envelope", "pointer", "framed", "original"]
TerminalForm = Literal["envelope", "pointer", "framed", "original+meta", "self-healing", "bare"]


class TerminalView(NamedTuple):  # (not a frozen dataclass: ~0.5 ms less to define at cold start)
    """A message of the retry-exhausted queue (or a DLQ), whichever form it was written in."""

    form: TerminalForm
    outcome: str  # an Outcome, or "unknown" (a bare message, or a retry envelope that SQS dead-lettered)
    reason: str
    id: str  # the retry id (first SQS message id); the message's own id when it carries none
    attempt: int  # 0 when unknown
    error_type: str
    error: str
    traceback: str
    first_failed_at: str
    exhausted_at: str
    source: str
    history: tuple[HistoryEntry, ...]
    body: str  # the original body, exactly as the producer sent it
    attributes: dict[str, MessageAttribute]  # the original message attributes (binary as base64 text)
    # Why the original cannot be restored exactly ("" when it can): an attribute that is not one is
    # kept as found, so that sending it fails for this message alone instead of dropping it silently.
    problem: str = ""
    # The self-healing form only: the FailureDetail {"payload", "meta"} as the record holds it.
    detail: FailureDetail | None = None
    # The pointer form only: where the whole final envelope is (payload_store reads it; body and
    # attributes are empty until then).
    payload: PayloadLocation | None = None


class FinalCopy(NamedTuple):
    """A final message and, for the pointer form, the payload to write to S3 before it is sent."""

    body: str
    attributes: dict[str, MessageAttribute]
    form: FinalForm
    payload: StoredPayload | None = None


# --- writing ----------------------------------------------------------------------------------------


def _json_cost(char: str) -> int:
    """Bytes ``char`` takes inside a JSON string written with ``ensure_ascii=False``."""
    if char in '"\\\b\f\n\r\t':
        return 2
    if char < " ":
        return 6  # \u00XX
    return len(char.encode("utf-8"))


def _fit(text: str, budget: int) -> str:
    """The longest prefix of ``text`` whose JSON-escaped UTF-8 form takes at most ``budget`` bytes."""
    if len(text) * 6 <= budget:
        return text
    used = 0
    for index, char in enumerate(text):
        used += _json_cost(char)
        if used > budget:
            return text[:index]
    return text


def _dumps(document: object) -> str:
    return json.dumps(document, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def frame_header(
    incoming: Incoming, outcome: Outcome, *, now: datetime, reason: str, error: BaseException | None
) -> str:
    """The framed form's header line (without its newline): at most FRAME_OVERHEAD_BYTES - 1 bytes."""
    context = incoming.context
    summary: dict[str, object] = {
        "v": 1,
        "outcome": outcome,
        "reason": _fit(sqs_text(reason or incoming.problem or ""), _FIELD_BYTES["reason"]),
        "id": _fit(sqs_text(context.id), _FIELD_BYTES["id"]),
        "attempt": min(context.attempt, _MAX_HEADER_ATTEMPT),
        "at": format_time(now),
        "source": _fit(sqs_text(context.source), _FIELD_BYTES["source"]),
    }
    if context.first_failed_at is not None:
        summary["first_failed_at"] = format_time(context.first_failed_at)
    if error is not None:
        summary["error_type"] = _fit(sqs_text(type(error).__name__), _FIELD_BYTES["error_type"])
        summary["error"] = _fit(sqs_text(error_text(error)), _FIELD_BYTES["error"])
    return _dumps({ENVELOPE_KEY: summary})


def _minimal_header(outcome: Outcome, reason: str, budget: int) -> str | None:
    """Outcome and as much of the reason as ``budget`` bytes allow; None when not even that fits."""
    empty = _dumps({ENVELOPE_KEY: {"outcome": outcome, "reason": "", "v": 1}})
    room = budget - len(empty.encode("utf-8"))
    if room < 0:
        return None
    return _dumps({ENVELOPE_KEY: {"outcome": outcome, "reason": _fit(sqs_text(reason), room), "v": 1}})


def final_message(
    incoming: Incoming,
    outcome: Outcome,
    *,
    now: datetime,
    error: BaseException | None,
    reason: str,
    traceback_text: str,
    max_bytes: int,
    signer: EnvelopeSigner | None = None,
) -> tuple[str, dict[str, MessageAttribute], FinalForm]:
    """Body, message attributes and form of the message for the retry-exhausted queue, whose maximum
    message size is ``max_bytes``, without a payload store (see ``final_copy``)."""
    copy = final_copy(
        incoming, outcome, now=now, error=error, reason=reason, traceback_text=traceback_text,
        max_bytes=max_bytes, signer=signer,
    )  # fmt: skip
    return copy.body, copy.attributes, copy.form


def final_copy(
    incoming: Incoming,
    outcome: Outcome,
    *,
    now: datetime,
    error: BaseException | None,
    reason: str,
    traceback_text: str,
    max_bytes: int,
    signer: EnvelopeSigner | None = None,
    store: PayloadTarget | None = None,
) -> FinalCopy:
    """The message for the retry-exhausted queue, whose maximum message size is ``max_bytes``. Never
    truncates the original body or attributes. The envelope form is signed by ``signer`` when given
    (a redrive of it then continues its chain). An envelope that does not fit goes, with ``store``,
    to S3 whole behind a pointer; without one, framed (or as the original)."""
    envelope = encode(
        final_envelope(
            incoming,
            outcome,
            now=now,
            error=error,
            reason=reason,
            traceback_text=traceback_text,
            signer=signer,
        )
    )
    if fits(envelope, max_bytes):
        return FinalCopy(envelope, {}, "envelope")
    if store is not None:
        from serverless_retry.payload_pointer import stored_payload

        context = incoming.context
        payload = stored_payload(
            store, envelope, retry_id=context.id, attempt=context.attempt, outcome=outcome, at=now
        )
        pointer = pointer_body(frame_header(incoming, outcome, now=now, reason=reason, error=error), payload)
        if fits(pointer, max_bytes):
            return FinalCopy(pointer, {}, "pointer", payload)
    attributes = dict(incoming.attributes)
    original = sqs_message_size(incoming.body, attributes)
    room = max_bytes - original - 1  # bytes left for the header line, its newline aside
    header: str | None = frame_header(incoming, outcome, now=now, reason=reason, error=error)
    if header is not None and len(header.encode("utf-8")) > room:
        # An exhausted queue configured smaller than the source's + FRAME_OVERHEAD_BYTES: keep what fits.
        header = _minimal_header(outcome, reason or incoming.problem or "", room)
    if header is None:
        return FinalCopy(incoming.body, attributes, "original")
    return FinalCopy(f"{header}\n{incoming.body}", attributes, "framed")


def pointer_body(header: str, payload: StoredPayload) -> str:
    """The pointer: the framed form's summary (outcome, reason, id, attempt, error...) and the location."""
    summary = json.loads(header)[ENVELOPE_KEY]
    summary["payload"] = payload.location
    return _dumps({ENVELOPE_KEY: summary})


# --- reading ----------------------------------------------------------------------------------------


def _str(meta: Mapping[str, Any], key: str) -> str:
    value = meta.get(key)
    return value if isinstance(value, str) else ""


def _int(meta: Mapping[str, Any], key: str) -> int:
    value = meta.get(key)
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _object(text: str) -> dict[str, Any] | None:
    try:
        document = json.loads(text)
    except (ValueError, RecursionError):
        return None
    return cast(dict[str, Any], document) if isinstance(document, dict) else None


def _framed(body: str) -> tuple[dict[str, Any], str] | None:
    """(summary, original body) of a framed body; None for any other body."""
    if not body.startswith(_HEADER_PREFIX):
        return None
    try:
        header, end = json.JSONDecoder().raw_decode(body)
    except (ValueError, RecursionError):
        return None
    if (
        not isinstance(header, dict)
        or list(header) != [ENVELOPE_KEY]
        or not isinstance(header[ENVELOPE_KEY], dict)
        or not isinstance(header[ENVELOPE_KEY].get("outcome"), str)
        or body[end : end + 1] != "\n"
    ):
        return None
    return cast(dict[str, Any], header[ENVELOPE_KEY]), body[end + 1 :]


def _pointer(document: Mapping[str, Any]) -> dict[str, Any] | None:
    """The summary of a pointer (``{"serverless_retry": {..., "payload": {...}}}`` alone); else None."""
    summary = document.get(ENVELOPE_KEY)
    if list(document) != [ENVELOPE_KEY] or not isinstance(summary, dict) or "payload" not in summary:
        return None
    from serverless_retry.payload_pointer import location_problem

    if (
        list(document) != [ENVELOPE_KEY]
        or not isinstance(summary, dict)
        or not isinstance(summary.get("outcome"), str)
        or location_problem(summary.get("payload"))
    ):
        return None
    return summary


def _history(value: object) -> tuple[HistoryEntry, ...]:
    if not isinstance(value, list):
        return ()
    return tuple(cast(HistoryEntry, entry) for entry in value if isinstance(entry, dict))


def _attributes(raw: Mapping[str, Any]) -> tuple[dict[str, MessageAttribute], str]:
    """Attributes in the envelope's form; any that is not an SQS attribute is kept as found (a copy)
    and named in the problem."""
    good = attributes_from_record(raw)
    bad = [str(name) for name in raw if name not in good]
    if not bad:
        return good, ""
    kept = dict(good)
    for name in bad:
        value = raw[name]
        kept[name] = cast(MessageAttribute, dict(value) if isinstance(value, Mapping) else {"value": value})
    return kept, f"not SQS message attributes: {', '.join(sorted(bad))}"


def _view(
    form: TerminalForm,
    meta: Mapping[str, Any],
    body: str,
    attributes: dict[str, MessageAttribute],
    message_id: str,
    *,
    problem: str = "",
) -> TerminalView:
    final_error = meta.get("final_error")
    error: Mapping[str, Any] = final_error if isinstance(final_error, Mapping) else {}
    return TerminalView(
        form=form,
        outcome=_str(meta, "outcome") or "unknown",
        reason=_str(meta, "reason"),
        # retry_id / function_name: the self-healing enrichment's compact attribute.
        id=_str(meta, "id") or _str(meta, "retry_id") or message_id,
        attempt=_int(meta, "attempt"),
        error_type=_str(meta, "error_type") or _str(error, "type"),
        error=_str(meta, "error") or _str(error, "message"),
        traceback=_str(error, "traceback"),
        first_failed_at=_str(meta, "first_failed_at"),
        exhausted_at=_str(meta, "exhausted_at") or _str(meta, "at"),
        source=_str(meta, "source") or _str(meta, "function_name"),
        history=_history(meta.get("history")),
        body=body,
        attributes=attributes,
        problem=problem,
    )


def _exhausted_record(document: Mapping[str, Any]) -> FailureDetail | None:
    """The detail of a self-healing ExhaustedRecord; None for any other document."""
    detail = document.get("detail")
    if (
        ENVELOPE_KEY in document
        or not isinstance(document.get("outcome"), str)
        or not isinstance(document.get("reason", ""), str)
        or not isinstance(detail, dict)
        or "payload" not in detail
        or not isinstance(detail.get("meta"), dict)
    ):
        return None
    return cast("FailureDetail", detail)


def _self_healing(
    document: Mapping[str, Any],
    detail: FailureDetail,
    attributes: dict[str, MessageAttribute],
    message_id: str,
    problem: str,
) -> TerminalView:
    meta: Mapping[str, Any] = detail["meta"]
    payload = detail["payload"]
    trace = meta.get("stack_trace")
    function = _str(meta, "function_arn")
    return TerminalView(
        form="self-healing",
        outcome=_str(document, "outcome") or "unknown",
        reason=_str(document, "reason"),
        id=_str(meta, "retry_id") or message_id,
        attempt=_int(meta, "attempt"),
        error_type=_str(meta, "error_type"),
        error=_str(meta, "error_message"),
        # Lambda's stackTrace frames end in a newline of their own, as traceback.format_tb() writes them.
        traceback="".join(f"{line}" if str(line).endswith("\n") else f"{line}\n" for line in trace)
        if isinstance(trace, list)
        else "",
        first_failed_at=_str(meta, "first_failed_at"),
        exhausted_at=_str(meta, "failed_at"),  # the last failure: the record was written right after it
        source="" if function == "unknown" else function,  # the function that failed
        history=(),
        # The event as it first arrived; an invalid failure record keeps the raw body it came as.
        body=payload
        if isinstance(payload, str)
        else json.dumps(payload, ensure_ascii=False, separators=(",", ":")),
        attributes=attributes,
        problem=problem,
        detail=detail,
    )


def read_terminal(
    body: str, attributes: Mapping[str, Any] | None = None, *, message_id: str = ""
) -> TerminalView:
    """Read a message of the retry-exhausted queue (or a DLQ), in any form ever written. Never raises.

    ``attributes`` are its message attributes as boto3's ReceiveMessage returns them (binary as bytes)
    or as a Lambda SQS event record carries them (``stringValue``/``binaryValue``); ``message_id`` is
    the id shown for a message that carries no retry id of its own.
    """
    received, problem = _attributes(attributes or {})
    framed = _framed(body)
    if framed is not None:
        summary, original = framed
        return _view("framed", summary, original, received, message_id, problem=problem)
    if ENVELOPE_KEY in received:
        compact = _object(received[ENVELOPE_KEY].get("StringValue", ""))
        if compact is not None and isinstance(compact.get("outcome"), str):
            rest = {name: attr for name, attr in received.items() if name != ENVELOPE_KEY}
            return _view("original+meta", compact, body, rest, message_id, problem=problem)
    document = _object(body)
    pointer = _pointer(document) if document is not None else None
    if pointer is not None:
        return _view("pointer", pointer, "", {}, message_id)._replace(payload=pointer["payload"])
    if (
        document is not None
        and isinstance(document.get(ENVELOPE_KEY), dict)
        and isinstance(document.get("body"), str)
    ):
        carried = document.get("attributes", {})
        inner, problem = (
            _attributes(carried) if isinstance(carried, Mapping) else ({}, "attributes: not an object")
        )
        return _view("envelope", document[ENVELOPE_KEY], document["body"], inner, message_id, problem=problem)
    detail = _exhausted_record(document) if document is not None else None
    if document is not None and detail is not None:
        return _self_healing(document, detail, received, message_id, problem)
    return _view("bare", {}, body, received, message_id, problem=problem)
