"""The archive's object: ``ArchiveRecord`` (``serverless-retry-archive/1``), its deterministic key, and
the one reader of it.

One terminal message (a Lambda SQS event record) becomes one record: the message verbatim (body,
message attributes, SQS system attributes), what ``terminal.read_terminal`` reads in it (outcome,
reason, chain id, attempt, last error, history, and the original the producer sent: what a redrive
re-sends), where it was read and where it goes back. Its key

    <prefix>dead/<yyyy>/<mm>/<dd>/<outcome>/<error_type>/<chain_id>.<attempt>.<digest12>.json

is a function of the message alone (never of the time it is archived), so archiving it twice writes
the same key, and the second write (``IfNoneMatch="*"``) is refused as "already archived". The day is
the UTC day the message became terminal; digest12 (sha256 of the body) keeps two different messages of
one chain and attempt apart.

Pure: no AWS; the time is passed in.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, date, datetime
from typing import Any, Literal, NotRequired, TypedDict, cast, get_args

from serverless_retry.envelope import (
    HistoryEntry,
    MessageAttribute,
    attributes_from_record,
    format_time,
    parse_time,
)
from serverless_retry.terminal import TerminalView, read_terminal

__all__ = [
    "ARCHIVE_FORMAT",
    "DEAD_DIR",
    "KEY_PART_LIMIT",
    "PLACES",
    "ArchiveFormatError",
    "ArchiveKey",
    "ArchiveRecord",
    "ArchiveSource",
    "ArchivedMessage",
    "OriginalMessage",
    "Place",
    "RedriveMark",
    "archive_record",
    "encode_record",
    "key_safe",
    "object_key",
    "object_metadata",
    "parse_archive_record",
    "parse_object_key",
]

ARCHIVE_FORMAT = "serverless-retry-archive/1"
DEAD_DIR = "dead/"
KEY_PART_LIMIT = 100  # outcome and error type in a key (the CLI's archive_location cuts the same)
CHAIN_ID_LIMIT = 200  # an SQS message id is 36 characters; an envelope's id is one
MAX_ATTEMPT = 10**18  # an absurd attempt is clamped, as the framed header does, so the key stays short
_SAFE = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-")
# Said when SQS moved a message to a DLQ: no outcome of ours in it, maxReceiveCount receives did it.
DLQ_REASON = "moved to the dead-letter queue by SQS after maxReceiveCount receives"

Place = Literal["exhausted", "dlq", "selfheal-exhausted"]
PLACES: tuple[Place, ...] = get_args(Place)


class ArchiveFormatError(ValueError):
    """An object that is no archive record (corrupt, or something else's); the message says why."""


@dataclass(frozen=True)
class ArchiveSource:
    """What the archiver knows of a queue it reads (one entry of SERVERLESS_RETRY_ARCHIVE_SOURCES)."""

    place: Place
    source_queue_arn: str | None  # where a redrive sends the messages back; None when unknown
    deployment: str


class ArchivedMessage(TypedDict):
    """The terminal message exactly as the archiver's SQS event gave it."""

    message_id: str
    body: str
    attributes: dict[str, Any]  # messageAttributes verbatim (stringValue/binaryValue, base64 text)
    system_attributes: dict[str, Any]  # SentTimestamp, ApproximateReceiveCount, MessageGroupId, ...


class OriginalMessage(TypedDict):
    """What a redrive re-sends: the producer's message, unwrapped by terminal.read_terminal."""

    body: str
    attributes: dict[str, MessageAttribute]  # the API form (DataType/StringValue/BinaryValue base64)


class RedriveMark(TypedDict):
    """One redrive of the record, appended by the redrive after its send succeeded."""

    at: str
    to: str  # the queue URL (or ARN) it was sent to
    message_id: str  # the sent message's id
    run: NotRequired[str]  # the redrive run's id: one run redrives a record at most once


class ArchiveRecord(TypedDict):
    format: str  # ARCHIVE_FORMAT
    key: str
    place: Place
    deployment: str
    archive_queue_arn: str
    source_queue_arn: str | None
    outcome: str
    reason: str
    error_type: str  # "" when no error is known (the key says "none")
    error_message: str
    retry_id: str
    attempt: int
    first_failed_at: str
    terminal_at: str
    archived_at: str
    history: list[HistoryEntry]
    message: ArchivedMessage
    original: OriginalMessage
    redriven: list[RedriveMark]


# --- keys -------------------------------------------------------------------------------------------


def key_safe(text: str, limit: int = KEY_PART_LIMIT) -> str:
    """``text`` as one segment of a key: [A-Za-z0-9_.-] kept, anything else "-", at most ``limit``."""
    return "".join(c if c in _SAFE else "-" for c in text[:limit])


def _digest(body: str) -> str:
    return hashlib.sha256(body.encode("utf-8", "surrogatepass")).hexdigest()[:12]


def object_key(record: ArchiveRecord, prefix: str) -> str:
    """The record's key under ``prefix`` ("" or ending in "/"): a function of the message alone."""
    day = parse_time(record["terminal_at"])
    outcome = key_safe(record["outcome"]) or "unknown"
    error_type = key_safe(record["error_type"]) or "none"
    chain = key_safe(record["retry_id"], CHAIN_ID_LIMIT) or "none"
    return (
        f"{prefix}{DEAD_DIR}{day:%Y/%m/%d}/{outcome}/{error_type}/"
        f"{chain}.{record['attempt']}.{_digest(record['message']['body'])}.json"
    )


def object_metadata(record: ArchiveRecord) -> dict[str, str]:
    """The object's x-amz-meta-* values (what a lister filters on without a GET): key-safe ASCII, as
    HTTP headers must be, and far below S3's 2 KB of user-defined metadata."""
    return {
        "outcome": key_safe(record["outcome"]) or "unknown",
        "error-type": key_safe(record["error_type"]) or "none",
        "retry-id": key_safe(record["retry_id"], CHAIN_ID_LIMIT) or "none",
        "attempt": str(record["attempt"]),
    }


@dataclass(frozen=True)
class ArchiveKey:
    """The parts of an archive key (outcome and error type key-safe, as written)."""

    key: str
    day: date
    outcome: str
    error_type: str
    chain_id: str
    attempt: int
    digest: str


def parse_object_key(key: str, prefix: str) -> ArchiveKey | None:
    """The parts of ``key``; None for any other object under the prefix."""
    dead = f"{prefix}{DEAD_DIR}"
    if not key.startswith(dead) or not key.endswith(".json"):
        return None
    parts = key[len(dead) :].split("/")
    if len(parts) != 6:
        return None
    year, month, day, outcome, error_type, name = parts
    try:
        when = date(int(year), int(month), int(day))
        chain_id, attempt, digest = name[: -len(".json")].rsplit(".", 2)
        number = int(attempt)
    except ValueError:
        return None
    return ArchiveKey(key, when, outcome, error_type, chain_id, number, digest)


# --- building ---------------------------------------------------------------------------------------


def _text(value: object) -> str:
    """A field as text; anything that is not a string yet present is kept as its JSON."""
    if isinstance(value, str):
        return value
    if value is None:
        return ""
    return json.dumps(value, ensure_ascii=False, default=str)


def _mapping(value: object) -> dict[str, Any]:
    return {str(k): v for k, v in value.items()} if isinstance(value, Mapping) else {}


def _terminal_at(view: TerminalView, system: Mapping[str, Any], now: datetime) -> datetime:
    """When the message became terminal: the envelope's exhausted/final time, else its SentTimestamp
    (kept by SQS when it moves a message to a DLQ), else ``now`` (a message with neither)."""
    if view.exhausted_at:
        try:
            return parse_time(view.exhausted_at)
        except ValueError:
            pass
    sent = system.get("SentTimestamp")
    try:
        return datetime.fromtimestamp(int(str(sent)) / 1000, UTC)
    except (TypeError, ValueError, OverflowError, OSError):
        return now


def _unreadable(body: str, message_id: str) -> TerminalView:
    """The view of a message read_terminal could not read (it never raises; this is a last guard)."""
    return TerminalView(
        form="bare", outcome="unknown", reason="", id=message_id, attempt=0, error_type="", error="",
        traceback="", first_failed_at="", exhausted_at="", source="", history=(), body=body, attributes={},
    )  # fmt: skip


def _bare(body: str, attributes: Mapping[str, Any], message_id: str) -> TerminalView:
    """A message taken as it came: its body and attributes are the original."""
    return _unreadable(body, message_id)._replace(attributes=attributes_from_record(attributes))


def archive_record(
    message: Mapping[str, Any],
    *,
    source: ArchiveSource,
    now: datetime,
    prefix: str = "",
    resolve: Callable[[TerminalView], TerminalView | None] | None = None,
) -> ArchiveRecord:
    """The record of one SQS event record (Lambda's shape: messageId, body, messageAttributes,
    attributes, eventSourceARN) read from a queue described by ``source``; ``now`` is the archive time,
    ``prefix`` the archive's key prefix (for the record's ``key``). Never raises but for ``resolve``'s
    errors: a message that cannot be read is archived as outcome "unknown" with its body verbatim.

    ``resolve`` turns a pointer's view (a final envelope too large for its queue, kept in S3) into the
    whole message's, so ``original`` is what a redrive must send; the message itself (the pointer) is
    kept verbatim, and the key, a function of it, does not change. ``resolve`` answers None for a
    pointer to somewhere else than the archive (a producer's body shaped like one): that message is
    archived as a plain one. Without ``resolve`` a pointer's ``original`` is empty."""
    body = _text(message.get("body"))
    message_id = _text(message.get("messageId"))
    attributes = _mapping(message.get("messageAttributes"))
    system = _mapping(message.get("attributes"))
    readable = isinstance(message.get("body"), str)
    try:
        view = read_terminal(body, attributes, message_id=message_id) if readable else None
    except Exception:  # read_terminal never raises; should it ever, the message is still archived
        view = None
    if view is None:
        view = _unreadable(body, message_id)
    if resolve is not None and view.payload is not None:
        whole = resolve(view)
        # None: not a pointer of this archive's, but a producer's body shaped like one: kept as it came.
        view = whole if whole is not None else _bare(body, attributes, message_id)
    outcome, reason = view.outcome, view.reason
    if source.place == "dlq" and readable and outcome == "unknown":
        # SQS's redrive policy put it there: a plain message, or a retry envelope between attempts.
        outcome, reason = "dlq", reason or DLQ_REASON
    attempt = min(view.attempt, MAX_ATTEMPT) if view.attempt >= 1 else 1
    error_type, error_message = view.error_type, view.error
    if not error_type and view.history:
        # A retry envelope SQS dead-lettered between attempts: its last error is its history's last.
        last = view.history[-1]
        error_type, error_message = _text(last.get("error_type")), _text(last.get("error"))
    record: ArchiveRecord = {
        "format": ARCHIVE_FORMAT,
        "key": "",
        "place": source.place,
        "deployment": source.deployment,
        "archive_queue_arn": _text(message.get("eventSourceARN")),
        "source_queue_arn": source.source_queue_arn,
        "outcome": outcome,
        "reason": reason,
        "error_type": error_type,
        "error_message": error_message,
        "retry_id": view.id or message_id,
        "attempt": attempt,
        "first_failed_at": view.first_failed_at,
        "terminal_at": format_time(_terminal_at(view, system, now)),
        "archived_at": format_time(now),
        "history": [cast(HistoryEntry, dict(entry)) for entry in view.history],
        "message": {
            "message_id": message_id,
            "body": body,
            "attributes": attributes,
            "system_attributes": system,
        },
        "original": {"body": view.body, "attributes": dict(view.attributes)},
        "redriven": [],
    }
    record["key"] = object_key(record, prefix)
    return record


def encode_record(record: ArchiveRecord) -> bytes:
    """The object's body: UTF-8 JSON. A lone surrogate (no SQS message holds one, but nothing is lost
    if one ever comes) is written escaped, so the body is always valid UTF-8."""
    text = json.dumps(record, ensure_ascii=False, separators=(",", ":"))
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        return json.dumps(record, ensure_ascii=True, separators=(",", ":")).encode("ascii")


# --- reading ----------------------------------------------------------------------------------------

_TEXT_FIELDS = (
    "key", "deployment", "archive_queue_arn", "outcome", "reason", "error_type", "error_message",
    "retry_id", "first_failed_at", "terminal_at", "archived_at",
)  # fmt: skip


def _need(document: Mapping[str, Any], name: str, kind: type | tuple[type, ...], what: str) -> Any:
    value = document.get(name)
    if name not in document:
        raise ArchiveFormatError(f"{what}{name}: missing")
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise ArchiveFormatError(f"{what}{name}: expected {_kind_name(kind)}, got {type(value).__name__}")
    return value


def _kind_name(kind: type | tuple[type, ...]) -> str:
    kinds = kind if isinstance(kind, tuple) else (kind,)
    names = {str: "a string", int: "an integer", list: "a list", dict: "an object", type(None): "null"}
    return " or ".join(names.get(k, k.__name__) for k in kinds)


def parse_archive_record(text: str | bytes) -> ArchiveRecord:
    """An object's body back into its record; ``ArchiveFormatError`` saying what is wrong for a corrupt
    object or one that is not ours (another format, a newer version)."""
    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ArchiveFormatError(f"not UTF-8 text: {exc}") from None
    try:
        document = json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise ArchiveFormatError(f"not JSON: {exc}") from None
    if not isinstance(document, dict):
        raise ArchiveFormatError(f"not a JSON object but {type(document).__name__}")
    found = document.get("format")
    if found != ARCHIVE_FORMAT:
        raise ArchiveFormatError(f"format {found!r}, not {ARCHIVE_FORMAT!r}: not an archive record of ours")
    for name in _TEXT_FIELDS:
        _need(document, name, str, "")
    if document.get("place") not in PLACES:
        raise ArchiveFormatError(f"place: expected one of {', '.join(PLACES)}, got {document.get('place')!r}")
    _need(document, "source_queue_arn", (str, type(None)), "")
    if _need(document, "attempt", int, "") < 1:
        raise ArchiveFormatError(f"attempt: expected at least 1, got {document['attempt']}")
    try:
        parse_time(document["terminal_at"])
    except ValueError as exc:
        raise ArchiveFormatError(f"terminal_at: {exc}") from None
    history = _need(document, "history", list, "")
    if not all(isinstance(entry, dict) for entry in history):
        raise ArchiveFormatError("history: expected a list of objects")
    message = _need(document, "message", dict, "")
    for name in ("message_id", "body"):
        _need(message, name, str, "message.")
    for name in ("attributes", "system_attributes"):
        _need(message, name, dict, "message.")
    original = _need(document, "original", dict, "")
    _need(original, "body", str, "original.")
    _need(original, "attributes", dict, "original.")
    marks = _need(document, "redriven", list, "")
    for index, mark in enumerate(marks):
        if not isinstance(mark, dict):
            raise ArchiveFormatError(f"redriven[{index}]: expected an object, got {type(mark).__name__}")
        for name in ("at", "to", "message_id"):
            _need(mark, name, str, f"redriven[{index}].")
    return cast(ArchiveRecord, document)
