"""The retry envelope (v1; docs/envelope.md): wrap, unwrap, validate, and the SQS size guard.

A retried message carries its history in its body, because a Scheduler SQS target can carry no
message attributes. Pure: the time is passed in.
"""

# (No ``from __future__ import annotations``: class annotations stay real types, which a NamedTuple,
# TypedDict or dataclass reads at import far cheaper than strings typing compiles into ForwardRefs.)
import base64
import binascii
import hashlib
import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any, Literal, NamedTuple, Required, TypedDict, cast

from serverless_retry.backoff import MAX_ATTEMPTS_LIMIT, json_kind
from serverless_retry.regex import LazyPattern

if TYPE_CHECKING:
    from mypy_boto3_sqs.type_defs import MessageAttributeValueTypeDef

    from serverless_retry.policy import Decision
    from serverless_retry.signing import EnvelopeSigner

__all__ = [
    "ENVELOPE_KEY",
    "ERROR_TEXT_LIMIT",
    "HISTORY_LIMIT",
    "MAX_ATTEMPT",
    "SCHEDULE_RETRY_POLICY",
    "VERSION",
    "Envelope",
    "FinalError",
    "HistoryEntry",
    "Incoming",
    "MessageAttribute",
    "Outcome",
    "RetryContext",
    "RetryMeta",
    "api_attributes",
    "at_expression",
    "attributes_from_record",
    "encode",
    "encode_next_envelope",
    "error_text",
    "final_envelope",
    "fits",
    "format_time",
    "next_envelope",
    "original",
    "parse_time",
    "schedule_name",
    "sqs_message_size",
    "sqs_text",
    "unwrap",
    "waiting_copy",
]

ENVELOPE_KEY = "serverless_retry"
VERSION = 1
HISTORY_LIMIT = 10
ERROR_TEXT_LIMIT = 512
TRACEBACK_LIMIT = 2048  # "a short traceback": its tail, where the failing frame is
MAX_ATTEMPT = MAX_ATTEMPTS_LIMIT  # 10_000; larger is "absurd" → invalid
SCHEDULE_NAME_LIMIT = 64

Outcome = Literal["exhausted", "non-retryable", "invalid-envelope", "too-large-to-retry"]


# The envelope's TypedDicts in the functional form, with the types themselves: the class form hands
# typing each annotation as a string (this module's ``from __future__ import annotations``), which it
# compiles into a ForwardRef at import, ~0.1 ms a class in a cold interpreter.

# An SQS message attribute in the API form; BinaryValue is base64 text inside the envelope.
MessageAttribute = TypedDict(  # noqa: UP013 (see above)
    "MessageAttribute", {"DataType": Required[str], "StringValue": str, "BinaryValue": str}, total=False
)

HistoryEntry = TypedDict(  # noqa: UP013 (see above)
    "HistoryEntry", {"at": str, "error_type": str, "error": str, "delay_seconds": int, "transport": str}
)

FinalError = TypedDict("FinalError", {"type": str, "message": str, "traceback": str})  # noqa: UP013 (see above)

RetryMeta = TypedDict(  # noqa: UP013 (see above)
    "RetryMeta",
    {
        "v": Required[int],
        "id": Required[str],
        "attempt": Required[int],
        "first_failed_at": Required[str],
        "source": Required[str],
        "history": Required[list[HistoryEntry]],
        # when the next attempt is due (a copy that arrives earlier is re-delayed, unprocessed):
        "due_at": str,
        # SQS message ids this very copy was carried in before, whose claims it may take over: a copy
        # that could not claim (the table did not answer) waits as a new SQS message (claims module):
        "claimants": list[str],
        # how many times the retry-exhausted queue was redriven into this chain (absent: 0); a copy of
        # a later generation takes its chain's claim whatever its state (claims module):
        "generation": int,
        # the consumer's signature (signing module), with the claims table on:
        "sig": str,
        # only on final envelopes (the retry-exhausted queue):
        "outcome": Outcome,
        "reason": str,
        "final_error": FinalError,
        "exhausted_at": str,
    },
    total=False,
)

Envelope = TypedDict(  # noqa: UP013 (see above)
    "Envelope", {"serverless_retry": RetryMeta, "body": str, "attributes": dict[str, MessageAttribute]}
)


@dataclass(frozen=True)
class RetryContext:
    """What the user's processor sees about the retries so far."""

    id: str  # stable across attempts: the idempotency key
    attempt: int  # 1 = first delivery
    first_failed_at: datetime | None
    history: tuple[HistoryEntry, ...]
    source: str
    generation: int = 0  # redrives of the retry-exhausted queue into this chain

    @property
    def previous_delay(self) -> float | None:
        """The delay before this attempt (decorrelated jitter grows from it); None on a first delivery."""
        return float(self.history[-1]["delay_seconds"]) if self.history else None


class Incoming(NamedTuple):  # (not a frozen dataclass: one is made per failed record)
    kind: Literal["original", "envelope", "invalid"]
    body: str  # the original body (unwrapped) or, for "invalid", the raw body
    attributes: dict[str, MessageAttribute]
    context: RetryContext
    meta: RetryMeta | None  # the parsed meta of an "envelope"
    problem: str | None  # why "invalid"


# --- time ---------------------------------------------------------------------------------------

_TIMESTAMP = LazyPattern(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,6})?Z")


def format_time(moment: datetime) -> str:
    """ISO-8601 UTC with a Z, whole seconds: ``2026-11-30T10:00:00Z`` (naive means UTC)."""
    # The records of a batch share their few moments (receipt, due times to the second): remembered.
    text = _TIMES.get(moment)
    if text is None:
        if len(_TIMES) >= _TIMES_KEPT:
            _TIMES.clear()
        text = _TIMES[moment] = _format_time(moment)
    return text


_TIMES: dict[datetime, str] = {}
_TIMES_KEPT = 256


def _format_time(moment: datetime) -> str:
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    elif moment.tzinfo is not UTC:
        moment = moment.astimezone(UTC)
    if moment.year < 1000:  # strftime does not pad such a year; isoformat would
        return moment.strftime("%Y-%m-%dT%H:%M:%SZ")
    # The same text as strftime, in a third of its time: three timestamps go into every retry copy.
    return moment.isoformat(timespec="seconds")[:19] + "Z"


def parse_time(text: str) -> datetime:
    """The inverse of :func:`format_time` (fractions of a second allowed); ValueError otherwise."""
    if not _TIMESTAMP.fullmatch(text):
        raise ValueError(f"not an ISO-8601 UTC timestamp like 2026-11-30T10:00:00Z: {_show(text)}")
    return datetime.fromisoformat(text[:-1]).replace(tzinfo=UTC)


# --- validation: a claimed envelope is checked strictly, and every failure says where -----------


class _Invalid(Exception):
    def __init__(self, path: str, problem: str) -> None:
        super().__init__(f"{path}: {problem}")


def _show(value: object, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _object(
    value: object, path: str, required: tuple[str, ...], optional: tuple[str, ...] = ()
) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise _Invalid(path, f"must be an object, got {json_kind(value)}")
    for key in value:
        if key not in required and key not in optional:
            raise _Invalid(f"{path}.{key}" if path else key, "unexpected key")
    for key in required:
        if key not in value:
            raise _Invalid(f"{path}.{key}" if path else key, "missing")
    return cast(dict[str, Any], value)


def _claimants(value: object, path: str) -> list[str]:
    if not isinstance(value, list) or len(value) > CLAIMANTS_LIMIT:
        raise _Invalid(path, f"must be a list of at most {CLAIMANTS_LIMIT} SQS message ids")
    return [
        _sendable(_string(v, f"{path}[{i}]", non_empty=True), path, in_json=True) for i, v in enumerate(value)
    ]


def _string(value: object, path: str, *, non_empty: bool = False) -> str:
    if not isinstance(value, str):
        raise _Invalid(path, f"must be a string, got {json_kind(value)}")
    if non_empty and not value:
        raise _Invalid(path, "must not be empty")
    return value


def _integer(value: object, path: str, *, minimum: int, maximum: int | None = None) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise _Invalid(path, f"must be an integer, got {json_kind(value)} {_show(value)}")
    if value < minimum or (maximum is not None and value > maximum):
        bounds = f"between {minimum} and {maximum}" if maximum is not None else f">= {minimum}"
        raise _Invalid(path, f"must be {bounds}, got {value}")
    return value


def _timestamp(value: object, path: str) -> datetime:
    try:
        return parse_time(_string(value, path))
    except ValueError as exc:
        raise _Invalid(path, str(exc)) from None


_HISTORY_KEYS = ("at", "error_type", "error", "delay_seconds", "transport")
_META_KEYS = ("v", "id", "attempt", "first_failed_at", "source", "history")
# A copy that waits out a claims-table outage hops every 15 minutes at most: the first and the last
# 31 carriers cover the claims of about eight hours (an id is at most 100 characters, SQS's limit).
CLAIMANTS_LIMIT = 32
_FINAL_KEYS = ("outcome", "reason", "final_error", "exhausted_at")
UNSIGNED_PREFIX = "unsigned:"
_OPTIONAL_KEYS = ("due_at", "claimants", "generation", "sig")
_OUTCOMES = ("exhausted", "non-retryable", "invalid-envelope", "too-large-to-retry")
_DATA_TYPE = LazyPattern(r"(String|Number|Binary)(\..+)?", re.DOTALL)
# SQS's rules for what a message may hold. A v1 envelope carries a body and attributes that came
# through SQS, so one that breaks them was not written by us, and could not be sent on as it is.
SQS_MAX_ATTRIBUTES = 10
# Everything but #x9 #xA #xD #x20-#xD7FF #xE000-#xFFFD #x10000-#x10FFFF, spelled as the short complement:
# the negated class of those ranges takes Python's re about 5 ms to compile, at every cold start.
_UNSENDABLE = LazyPattern("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")
# Inside JSON text every control character is escaped, so only these stay unsendable there.
_UNENCODABLE = LazyPattern("[\ud800-\udfff\ufffe\uffff]")
_ATTRIBUTE_NAME = LazyPattern(r"[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*")
_RESERVED_PREFIX = LazyPattern(r"(aws|amazon)\.", re.IGNORECASE)
_NAME_LIMIT = 256


def _sendable(text: str, path: str, *, in_json: bool = False) -> str:
    """``text`` when SQS can carry it: as it is (a body, an attribute), or inside JSON text."""
    bad = (_UNENCODABLE if in_json else _UNSENDABLE).search(text)
    if bad is not None:
        raise _Invalid(path, f"holds {bad.group()!r} at {bad.start()}, a character SQS does not carry")
    return text


def _history(value: object, path: str) -> list[HistoryEntry]:
    if not isinstance(value, list):
        raise _Invalid(path, f"must be an array, got {json_kind(value)}")
    if len(value) > HISTORY_LIMIT:
        raise _Invalid(path, f"has {len(value)} entries, more than the {HISTORY_LIMIT} a v1 envelope keeps")
    out: list[HistoryEntry] = []
    for i, item in enumerate(value):
        where = f"{path}[{i}]"
        entry = _object(item, where, _HISTORY_KEYS)
        _timestamp(entry["at"], f"{where}.at")
        for key in ("error_type", "error", "transport"):
            _sendable(_string(entry[key], f"{where}.{key}"), f"{where}.{key}", in_json=True)
        _integer(entry["delay_seconds"], f"{where}.delay_seconds", minimum=0)
        out.append(cast(HistoryEntry, dict(entry)))
    return out


def _attribute(value: object, path: str) -> MessageAttribute:
    attr = _object(value, path, ("DataType",), ("StringValue", "BinaryValue"))
    data_type = _sendable(_string(attr["DataType"], f"{path}.DataType", non_empty=True), f"{path}.DataType")
    if len(data_type) > _NAME_LIMIT:
        raise _Invalid(f"{path}.DataType", f"is longer than SQS's {_NAME_LIMIT} characters")
    if not _DATA_TYPE.fullmatch(data_type):
        raise _Invalid(
            f"{path}.DataType",
            f"must be String, Number or Binary (optionally .label), got {_show(data_type)}",
        )
    binary = data_type.startswith("Binary")
    wanted, other = ("BinaryValue", "StringValue") if binary else ("StringValue", "BinaryValue")
    if other in attr:
        raise _Invalid(f"{path}.{other}", f"does not go with DataType {_show(data_type)}")
    if wanted not in attr:
        raise _Invalid(f"{path}.{wanted}", "missing")
    text = _string(attr[wanted], f"{path}.{wanted}", non_empty=True)
    if binary:
        try:
            base64.b64decode(text, validate=True)
        except (binascii.Error, ValueError):
            raise _Invalid(f"{path}.BinaryValue", "must be base64 text") from None
    else:
        _sendable(text, f"{path}.StringValue")
    return cast(MessageAttribute, {"DataType": data_type, wanted: text})


def _attributes(value: object, path: str) -> dict[str, MessageAttribute]:
    if not isinstance(value, dict):
        raise _Invalid(path, f"must be an object, got {json_kind(value)}")
    if len(value) > SQS_MAX_ATTRIBUTES:
        raise _Invalid(path, f"has {len(value)} attributes, more than SQS's {SQS_MAX_ATTRIBUTES}")
    out: dict[str, MessageAttribute] = {}
    for name, attr in value.items():
        if not name:
            raise _Invalid(path, "an attribute name must not be empty")
        if (
            len(name) > _NAME_LIMIT
            or not _ATTRIBUTE_NAME.fullmatch(name)
            or _RESERVED_PREFIX.match(name) is not None
        ):
            raise _Invalid(
                f"{path}.{_show(name, 40)}",
                f"is not an SQS attribute name (up to {_NAME_LIMIT} of A-Z a-z 0-9 _ - ., no leading, "
                "trailing or double dot, no AWS./Amazon. prefix)",
            )
        out[name] = _attribute(attr, f"{path}.{name}")
    return out


def _final_fields(meta: Mapping[str, Any]) -> None:
    """A final envelope's own fields, checked as its writer wrote them (they are dropped on redrive)."""
    if "outcome" not in meta:
        raise _Invalid(f"{ENVELOPE_KEY}.outcome", "missing (a final envelope names its outcome)")
    if meta["outcome"] not in _OUTCOMES:
        raise _Invalid(f"{ENVELOPE_KEY}.outcome", f"must be one of {', '.join(_OUTCOMES)}")
    for key in ("reason", "exhausted_at"):
        if key in meta:
            _string(meta[key], f"{ENVELOPE_KEY}.{key}")
    if "final_error" in meta:
        _object(meta["final_error"], f"{ENVELOPE_KEY}.final_error", ("type", "message"), ("traceback",))


def _redrive_entry(meta: Mapping[str, Any]) -> HistoryEntry:
    """The history entry of a redrive from the retry-exhausted queue: the error it ended on, at the time
    it was given up on (from the final envelope's own fields, so every copy of one redrive agrees)."""
    final_error = meta.get("final_error") or {}
    last: Mapping[str, Any] = meta["history"][-1] if meta["history"] else {}
    at = meta.get("exhausted_at")
    return {
        "at": at if isinstance(at, str) and _TIMESTAMP.fullmatch(at) else meta["first_failed_at"],
        "error_type": str(final_error.get("type", last.get("error_type", ""))),
        "error": str(final_error.get("message", last.get("error", "")))[:ERROR_TEXT_LIMIT],
        "delay_seconds": 0,
        "transport": "redrive",
    }


def _validate(
    document: dict[str, Any], latest_due: datetime | None = None
) -> tuple[RetryMeta, RetryContext, str, dict[str, MessageAttribute]]:
    """The parsed meta, context, body and attributes. A final envelope (a retry-exhausted copy an
    operator redrove to the source queue) is the next attempt of its chain, in the next generation."""
    top = _object(document, "", (ENVELOPE_KEY, "body", "attributes"))
    raw_meta = top[ENVELOPE_KEY]
    final = isinstance(raw_meta, dict) and any(key in raw_meta for key in _FINAL_KEYS)
    meta = _object(raw_meta, ENVELOPE_KEY, _META_KEYS, _OPTIONAL_KEYS + (_FINAL_KEYS if final else ()))
    if final:
        _final_fields(meta)
    version = meta["v"]
    if isinstance(version, bool) or version != VERSION:
        raise _Invalid(
            f"{ENVELOPE_KEY}.v", f"unsupported version {_show(version)} (this consumer reads v{VERSION})"
        )
    envelope_id = _sendable(
        _string(meta["id"], f"{ENVELOPE_KEY}.id", non_empty=True), f"{ENVELOPE_KEY}.id", in_json=True
    )
    attempt = _integer(meta["attempt"], f"{ENVELOPE_KEY}.attempt", minimum=1, maximum=MAX_ATTEMPT)
    first_failed_at = _timestamp(meta["first_failed_at"], f"{ENVELOPE_KEY}.first_failed_at")
    source = _sendable(
        _string(meta["source"], f"{ENVELOPE_KEY}.source"), f"{ENVELOPE_KEY}.source", in_json=True
    )
    history = _history(meta["history"], f"{ENVELOPE_KEY}.history")
    generation = 0
    if "generation" in meta:
        generation = _integer(
            meta["generation"], f"{ENVELOPE_KEY}.generation", minimum=1, maximum=MAX_ATTEMPT
        )
    if "sig" in meta:
        _string(meta["sig"], f"{ENVELOPE_KEY}.sig", non_empty=True)
    if final:  # redriven: the attempt after the one it ended at, in a new generation
        if attempt >= MAX_ATTEMPT:
            raise _Invalid(f"{ENVELOPE_KEY}.attempt", f"{attempt} is the last one an envelope can carry")
        attempt += 1
        generation += 1
        history = [*history, _redrive_entry(meta)][-HISTORY_LIMIT:]
    body = _sendable(_string(top["body"], "body"), "body")
    attributes = _attributes(top["attributes"], "attributes")
    parsed: RetryMeta = {
        "v": VERSION,
        "id": envelope_id,
        "attempt": attempt,
        "first_failed_at": meta["first_failed_at"],
        "source": source,
        "history": history,
    }
    if generation:
        parsed["generation"] = generation
    if "due_at" in meta:
        due = _timestamp(meta["due_at"], f"{ENVELOPE_KEY}.due_at")
        if latest_due is not None and due > latest_due:
            raise _Invalid(
                f"{ENVELOPE_KEY}.due_at",
                f"{meta['due_at']} is later than any retry the policy could have planned "
                f"(the latest possible now is {format_time(latest_due)}); it would wait forever",
            )
        parsed["due_at"] = meta["due_at"]
    if "claimants" in meta:
        parsed["claimants"] = _claimants(meta["claimants"], f"{ENVELOPE_KEY}.claimants")
    context = RetryContext(envelope_id, attempt, first_failed_at, tuple(history), source, generation)
    return parsed, context, body, attributes


# --- unwrap ---------------------------------------------------------------------------------------


def _copy_attributes(attributes: Mapping[str, MessageAttribute]) -> dict[str, MessageAttribute]:
    # A copy, so later changes to the caller's record cannot alter what we forward.
    return {
        name: cast(MessageAttribute, dict(attr) if isinstance(attr, Mapping) else attr)
        for name, attr in attributes.items()
    }


def attributes_from_record(record_attrs: Mapping[str, Any]) -> dict[str, MessageAttribute]:
    """Message attributes from a Lambda SQS record (``{"dataType", "stringValue", "binaryValue"}``)
    into the SQS API form. API-form input (``DataType``) passes through; bytes become base64 text."""
    out: dict[str, MessageAttribute] = {}
    for name, raw in record_attrs.items():
        if not isinstance(raw, Mapping):
            continue
        data_type = raw.get("DataType", raw.get("dataType"))
        if not isinstance(data_type, str):
            continue
        attr: MessageAttribute = {"DataType": data_type}
        # Only the value that goes with the DataType, as SQS itself keeps (and as ``_attribute``
        # reads it back): AWS's own sample event carries both on one String attribute.
        if data_type.startswith("Binary"):
            binary_value = raw.get("BinaryValue", raw.get("binaryValue"))
            if isinstance(binary_value, bytes | bytearray):
                attr["BinaryValue"] = base64.b64encode(bytes(binary_value)).decode("ascii")
            elif isinstance(binary_value, str):
                attr["BinaryValue"] = binary_value
        else:
            string_value = raw.get("StringValue", raw.get("stringValue"))
            if isinstance(string_value, str):
                attr["StringValue"] = string_value
        out[str(name)] = attr
    return out


def original(
    body: str,
    record_attributes: Mapping[str, MessageAttribute],
    *,
    message_id: str,
    source: str,
    receive_count: int = 1,
) -> Incoming:
    """What ``unwrap`` returns for a body that cannot be an envelope (one in which neither
    ``ENVELOPE_KEY`` nor a ``\\u`` escape occurs), without parsing it."""
    context = RetryContext(message_id, max(1, receive_count), None, (), source)
    return Incoming("original", body, _copy_attributes(record_attributes or {}), context, None, None)


def unwrap(
    body: str,
    record_attributes: Mapping[str, MessageAttribute],
    *,
    message_id: str,
    source: str,
    receive_count: int = 1,
    latest_due: datetime | None = None,
    signer: "EnvelopeSigner | None" = None,
) -> Incoming:
    """Classify a received body. Never raises (but KeyUnavailable from ``signer``).

    A JSON object with a top-level ``serverless_retry`` key claims to be an envelope and is validated
    strictly: "envelope" or "invalid" (with the problem). Anything else is an "original" message whose
    attempt is ``receive_count`` (the visibility transport counts attempts by SQS receives).
    ``latest_due``: an envelope due later than this was not planned by the policy (see
    ``planning.latest_due``), and is invalid rather than re-delayed every 900 s for ever.
    ``signer`` (with the claims table): an envelope whose signature it does not verify (forged,
    corrupt, or written without the table) is an envelope of a chain apart: its retry id ``X`` becomes
    ``unsigned:X``, its generation 0; ``problem`` then says so.
    """
    attributes = _copy_attributes(record_attributes or {})
    original = Incoming(
        "original",
        body,
        attributes,
        RetryContext(message_id, max(1, receive_count), None, (), source),
        None,
        None,
    )
    try:
        document = json.loads(body)
    except Exception:  # not JSON (or too deeply nested to be ours)
        return original
    if not isinstance(document, dict) or ENVELOPE_KEY not in document:
        return original
    try:
        meta, context, inner_body, inner_attributes = _validate(document, latest_due)
    except _Invalid as exc:
        problem = str(exc)
    except Exception as exc:  # a bug in validation must still not lose the message
        problem = f"envelope could not be validated: {type(exc).__name__}: {exc}"
    else:
        if signer is None or signer.verify(document):
            return Incoming("envelope", inner_body, inner_attributes, context, meta, None)
        return _own_chain(meta, context, inner_body, inner_attributes)
    return Incoming(
        kind="invalid",
        body=body,
        attributes=attributes,
        context=RetryContext(message_id, 1, None, (), source),
        meta=None,
        problem=problem,
    )


def _own_chain(
    meta: RetryMeta, context: RetryContext, body: str, attributes: dict[str, MessageAttribute]
) -> Incoming:
    """An envelope not signed by this deployment, bound to a chain apart (see ``unwrap``): what it says
    about itself (attempt, history, first failure) it may keep, as that concerns that chain alone.

    ``unsigned:X`` cannot be a signed chain's id (those are SQS message ids), so nothing unsigned
    reaches a signed chain; copies of one unsigned chain (written before the table was on, or by a
    version without signatures) still meet each other's claims there, and its next copies are signed
    under that id."""
    named = meta["id"]
    chain = named if named.startswith(UNSIGNED_PREFIX) else f"{UNSIGNED_PREFIX}{named}"
    own: RetryMeta = {**meta, "id": chain}
    # Its claimants stay: they name the SQS messages this copy was carried in, whose claims in that
    # chain apart are its own (a waiting unsigned copy would otherwise be called a duplicate of itself).
    for key in ("generation", "sig"):
        own.pop(key, None)  # type: ignore[misc]
    own_context = replace(context, id=chain, generation=0)
    problem = f"envelope not signed by this deployment (it names chain {_show(named)}): it runs in chain {_show(chain)}"
    return Incoming("envelope", body, attributes, own_context, own, problem)


# --- wrap -----------------------------------------------------------------------------------------


def _cut(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters and made sendable (see sqs_text)."""
    return sqs_text(text if len(text) <= limit else text[:limit])


def sqs_text(text: str) -> str:
    """``text`` with the characters SQS refuses and JSON leaves as they are (lone surrogates, U+FFFE,
    U+FFFF) replaced by U+FFFD. For texts we write (error messages, reasons, tracebacks): an error's
    message may hold anything, and one that SQS refuses would make its retry or final copy unsendable."""
    return text if text.isascii() else _UNENCODABLE.sub("\ufffd", text)


def error_text(error: BaseException) -> str:
    """``str(error)``, or a placeholder when that raises."""
    try:
        return str(error)
    except Exception:
        return f"<unprintable {type(error).__name__}>"


def waiting_copy(body: str, *, claimant: str, due_at: datetime | None = None) -> str:
    """A valid envelope ``body`` carried on under a new SQS message id: ``claimant`` (the id it
    arrived in) added to the ids whose claim it may take over (the first and the latest kept, at most
    CLAIMANTS_LIMIT), and due at ``due_at`` when given."""
    document = json.loads(body)
    meta = document[ENVELOPE_KEY]
    if due_at is not None:
        meta["due_at"] = format_time(due_at)
    claimants = [*meta.get("claimants", []), claimant]
    # The first is the copy's own claim (a first claim's answer lost); the latest are the ones a
    # table that is answering again may hold.
    meta["claimants"] = claimants[:1] + claimants[1:][-(CLAIMANTS_LIMIT - 1) :]
    return json.dumps(document, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def next_envelope(
    incoming: Incoming,
    decision: "Decision",
    error: BaseException,
    *,
    now: datetime,
    due_at: datetime | None = None,
    signer: "EnvelopeSigner | None" = None,
) -> Envelope:
    """The envelope for the next attempt: attempt + 1, first_failed_at kept (now on the first failure),
    this failure appended to the history (the last HISTORY_LIMIT kept), error text cut, and the time the
    next attempt is due (``due_at``), so a copy that arrives early can wait again unprocessed; the
    generation kept, and signed by ``signer`` when given."""
    if incoming.kind == "invalid":
        raise ValueError("an invalid envelope must go to the retry-exhausted queue, not back into the loop")
    if decision.action != "retry":
        raise ValueError(f"next_envelope needs a retry decision, got {decision.action!r}")
    context = incoming.context
    entry: HistoryEntry = {
        "at": format_time(now),
        "error_type": sqs_text(type(error).__name__),
        "error": _cut(error_text(error), ERROR_TEXT_LIMIT),
        "delay_seconds": decision.delay_seconds,
        "transport": decision.transport or "",
    }
    meta: RetryMeta = {
        "v": VERSION,
        "id": context.id,
        "attempt": context.attempt + 1,
        "first_failed_at": format_time(context.first_failed_at or now),
        "source": context.source,
        "history": [*context.history, entry][-HISTORY_LIMIT:],
    }
    if context.generation:
        meta["generation"] = context.generation
    if due_at is not None:
        meta["due_at"] = format_time(due_at)
    envelope: Envelope = {
        "serverless_retry": meta,
        "body": incoming.body,
        "attributes": _copy_attributes(incoming.attributes),
    }
    if signer is not None:
        meta["sig"] = signer.sign(envelope)
    return envelope


def encode_next_envelope(
    incoming: Incoming,
    decision: "Decision",
    error: BaseException,
    *,
    now: datetime,
    due_at: datetime | None = None,
    signer: "EnvelopeSigner | None" = None,
) -> str:
    """``encode(next_envelope(...))``, the same text, written directly: every retried record makes one,
    and building the dicts only to have the encoder sort and walk them again cost as much as the rest
    of the retry decision. Only the parts that vary (the body, the attributes, earlier history) go
    through the JSON encoder; the rest is known keys in their sorted order."""
    kind, body, attributes, context, _, _ = incoming  # (unpacked: a field read by name costs a lookup)
    if kind == "invalid":
        raise ValueError("an invalid envelope must go to the retry-exhausted queue, not back into the loop")
    if decision.action != "retry":
        raise ValueError(f"next_envelope needs a retry decision, got {decision.action!r}")
    at = format_time(now)
    entry = (
        f'{{"at":"{at}","delay_seconds":{_number(decision.delay_seconds)},{_error_json(error)},'
        f'"transport":{_TRANSPORTS_JSON.get(decision.transport) or _json_str(decision.transport or "")}}}'
    )
    history = entry
    if context.history:  # with this entry, the last HISTORY_LIMIT
        earlier = context.history[-(HISTORY_LIMIT - 1) :]
        history = f"{_ENCODE(list(earlier))[1:-1]},{entry}"
    first = at if context.first_failed_at is None else format_time(context.first_failed_at)
    due = "" if due_at is None else f',"due_at":"{format_time(due_at)}"'
    generation = f',"generation":{_number(context.generation)}' if context.generation else ""
    head = (
        f'{{"attributes":{_ENCODE(attributes) if attributes else "{}"},"body":{_json_str(body)},'
        f'"serverless_retry":{{"attempt":{_number(context.attempt + 1)}'
    )
    middle = f'"first_failed_at":"{first}"{generation},"history":[{history}],"id":{_json_str(context.id)}'
    tail = f'"source":{_source_json(context.source)},"v":{VERSION}}}}}'
    if signer is None:
        return f"{head}{due},{middle},{tail}"
    # The signed text is this one without due_at and sig (signing.signing_text of the parsed copy).
    sig = signer.sign_text(f"{head},{middle},{tail}")
    return f'{head}{due},{middle},"sig":"{sig}",{tail}'


def _source_json(source: str) -> str:
    """The source queue's ARN as JSON: every copy a consumer makes carries the same, remembered."""
    text = _SOURCES_JSON.get(source)
    if text is None:
        if len(_SOURCES_JSON) >= 64:
            _SOURCES_JSON.clear()
        text = _SOURCES_JSON[source] = _json_str(source)
    return text


_SOURCES_JSON: dict[str, str] = {}


def _error_json(error: BaseException) -> str:
    """The history entry's ``"error":...,"error_type":...`` for this error; remembered by class and
    text, as a batch's failures mostly repeat one error."""
    kind = type(error)
    text = error_text(error)
    try:
        fragment = _ERROR_JSON.get((kind, text))
    except TypeError:  # a class whose metaclass makes it unhashable
        fragment = None
    if fragment is None:
        fragment = f'"error":{_json_str(_cut(text, ERROR_TEXT_LIMIT))},"error_type":{_json_str(sqs_text(kind.__name__))}'
        if len(text) <= ERROR_TEXT_LIMIT:  # (long texts are rarely repeated: not kept)
            try:
                if len(_ERROR_JSON) >= 256:
                    _ERROR_JSON.clear()
                _ERROR_JSON[kind, text] = fragment
            except TypeError:
                pass
    return fragment


_ERROR_JSON: dict[tuple[type, str], str] = {}


def _number(value: int) -> str:
    # (an f-string formats an exact int as str() does, without int.__repr__'s slot-wrapper call)
    return f"{value}" if type(value) is int else _ENCODE(value)


def final_envelope(
    incoming: Incoming,
    outcome: Outcome,
    *,
    now: datetime,
    error: BaseException | None,
    reason: str,
    traceback_text: str = "",
    signer: "EnvelopeSigner | None" = None,
) -> Envelope:
    """The envelope for the retry-exhausted queue: the body verbatim (the raw body for an invalid
    envelope), the history so far, the outcome and why, and the last error; signed by ``signer`` when
    given, so that a redrive of it to the source queue continues its chain (see ``unwrap``)."""
    context = incoming.context
    if not reason and incoming.problem:
        reason = incoming.problem
    meta: RetryMeta = {
        "v": VERSION,
        "id": context.id,
        "attempt": context.attempt,
        "first_failed_at": format_time(context.first_failed_at or now),
        "source": context.source,
        "history": list(context.history),
        "outcome": outcome,
        "reason": _cut(reason, ERROR_TEXT_LIMIT),
        "exhausted_at": format_time(now),
    }
    if error is not None:
        tail = sqs_text(traceback_text[-TRACEBACK_LIMIT:]) if traceback_text else ""
        meta["final_error"] = {
            "type": sqs_text(type(error).__name__),
            "message": _cut(error_text(error), ERROR_TEXT_LIMIT),
            "traceback": tail,
        }
    if context.generation:
        meta["generation"] = context.generation
    envelope: Envelope = {
        "serverless_retry": meta,
        "body": incoming.body,
        "attributes": _copy_attributes(incoming.attributes),
    }
    if signer is not None and incoming.kind != "invalid":
        meta["sig"] = signer.sign(envelope)
    return envelope


def encode(envelope: Envelope) -> str:
    """Compact, deterministic JSON. Non-ASCII stays as is: SQS counts UTF-8 bytes, and \\u escapes
    would make a body up to six times larger."""
    return _ENCODE(envelope)


# json.dumps with arguments builds a new encoder on every call: one, made once.
_ENCODE = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode
# A str as that encoder writes it (quoted, escaped, non-ASCII kept), without its dispatch.
_json_str: Callable[[str], str] = json.encoder.encode_basestring
# The transports' names as JSON, written into every copy's history entry.
_TRANSPORTS_JSON: dict[str | None, str] = {
    name: _json_str(name) for name in ("sqs-delay", "sqs-hops", "scheduler", "visibility")
}


# --- size guard -----------------------------------------------------------------------------------


def _utf8_len(text: str) -> int:
    # An ASCII text is as many bytes as characters; isascii() is far cheaper than encoding a body.
    return len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))


def _binary_len(value: object) -> int:
    if isinstance(value, bytes | bytearray):
        return len(value)
    if isinstance(value, str):
        try:
            return len(base64.b64decode(value, validate=True))
        except (binascii.Error, ValueError):
            return _utf8_len(value)
    return 0


def sqs_message_size(body: str, attributes: Mapping[str, MessageAttribute] | None = None) -> int:
    """Bytes SQS counts against its maximum message size: the UTF-8 body plus, for every message
    attribute, its name, its DataType and its value (binary values decoded)."""
    # (the body's count inline: every retry copy is sized twice, and most carry no attributes)
    size = len(body) if body.isascii() else len(body.encode("utf-8", "surrogatepass"))
    if not attributes:
        return size
    for name, attr in attributes.items():
        size += _utf8_len(name) + _utf8_len(attr.get("DataType", ""))
        string_value: object = attr.get("StringValue")
        if isinstance(string_value, str):
            size += _utf8_len(string_value)
        size += _binary_len(attr.get("BinaryValue"))
    return size


def fits(body: str, max_bytes: int, attributes: Mapping[str, MessageAttribute] | None = None) -> bool:
    return sqs_message_size(body, attributes) <= max_bytes


_NAME_CHARS = LazyPattern(r"[0-9A-Za-z_.-]+")


def schedule_name(envelope_id: str, attempt: int, prefix: str = "sr") -> str:
    """A deterministic Scheduler name for one retry of one message, so a redelivered record cannot
    create a second schedule: ``<prefix>-<sha256(id-attempt) hex>``, cut to 64 characters."""
    if not _NAME_CHARS.fullmatch(prefix) or len(prefix) > 32:
        raise ValueError(f"schedule name prefix must be 1-32 of [0-9A-Za-z_.-], got {prefix!r}")
    digest = hashlib.sha256(f"{envelope_id}-{attempt}".encode("utf-8", "surrogatepass")).hexdigest()
    return f"{prefix}-{digest}"[:SCHEDULE_NAME_LIMIT]


# Scheduler keeps retrying a failed delivery to SQS for up to a day, then dead-letters the envelope.
SCHEDULE_RETRY_POLICY = {"MaximumEventAgeInSeconds": 86_400, "MaximumRetryAttempts": 185}


def at_expression(due: datetime) -> str:
    """``at(YYYY-MM-DDTHH:MM:SS)`` in UTC, rounded up to the second so a retry never fires early."""
    if due.microsecond:
        due = due.replace(microsecond=0) + timedelta(seconds=1)
    return f"at({due:%Y-%m-%dT%H:%M:%S})"


def api_attributes(attributes: Mapping[str, MessageAttribute]) -> "dict[str, MessageAttributeValueTypeDef]":
    """Envelope form (binary as base64 text) → boto3 form (binary as bytes); bytes pass through, so
    attributes received from boto3 can be sent again as they are."""
    out: dict[str, MessageAttributeValueTypeDef] = {}
    for name, attr in attributes.items():
        value: dict[str, Any] = {"DataType": attr["DataType"]}
        if "BinaryValue" in attr:
            binary: Any = attr["BinaryValue"]
            value["BinaryValue"] = binary if isinstance(binary, bytes) else base64.b64decode(binary)
        if "StringValue" in attr:
            value["StringValue"] = attr["StringValue"]
        out[name] = value  # type: ignore[assignment]
    return out
