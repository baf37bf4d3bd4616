"""Claim checks: a terminal message too large for its queue, kept whole in S3 behind a small pointer.

A final envelope (original body and attributes, history, reason, last error and traceback) that does
not fit the retry-exhausted queue's maximum message size is written to S3 as it is, and the queue
gets a *pointer*: ``{"serverless_retry": {<the framed form's summary>, "payload": PayloadLocation}}``.
The reason, outcome, retry id and attempt stay readable in the queue (no terminal message is without
its reason); the original comes back by reading the object (``payload_store``), and
``terminal.read_terminal`` of the object's text is the message as if it had fitted.

The key is deterministic (retry id, attempt, outcome and a digest of the text), so a final copy made
again after a lost answer writes the same object, and two different texts never share one.

Pure: no AWS; the S3 calls are in ``payload_store``.
"""

from __future__ import annotations

import hashlib
from datetime import datetime
from typing import NamedTuple, TypedDict

from serverless_retry.regex import LazyPattern

__all__ = [
    "PayloadLocation",
    "PayloadTarget",
    "StoredPayload",
    "location_problem",
    "payload_key",
    "stored_payload",
]

_UNSAFE = LazyPattern(r"[^A-Za-z0-9_.-]")
_PART_CHARS = 100  # each key part at most this long: S3 keys hold at most 1,024 bytes


class PayloadLocation(TypedDict):
    """Where a pointer's payload is: the wire form inside the pointer."""

    bucket: str
    key: str
    bytes: int  # UTF-8 size of the object's text
    sha256: str  # hex digest of that text: a reader refuses an object that changed


class PayloadTarget(NamedTuple):
    """The bucket and key prefix payloads go to (the archive's, ``<prefix>payloads/...``)."""

    bucket: str
    prefix: str = ""


class StoredPayload(NamedTuple):
    """A payload to write before its pointer is sent."""

    location: PayloadLocation
    text: str


def _part(text: str) -> str:
    return _UNSAFE.sub("-", text)[:_PART_CHARS] or "none"


def payload_key(
    target: PayloadTarget, *, retry_id: str, attempt: int, outcome: str, at: datetime, digest: str
) -> str:
    """``<prefix>payloads/<yyyy>/<mm>/<dd>/<outcome>/<retry id>.<attempt>.<digest12>.json``: listable by day."""
    day = at.strftime("%Y/%m/%d")
    return f"{target.prefix}payloads/{day}/{_part(outcome)}/{_part(retry_id)}.{attempt}.{digest[:12]}.json"


def stored_payload(
    target: PayloadTarget, text: str, *, retry_id: str, attempt: int, outcome: str, at: datetime
) -> StoredPayload:
    """The payload object for ``text`` (a final envelope), with its location."""
    data = text.encode("utf-8")
    digest = hashlib.sha256(data).hexdigest()
    key = payload_key(target, retry_id=retry_id, attempt=attempt, outcome=outcome, at=at, digest=digest)
    return StoredPayload(PayloadLocation(bucket=target.bucket, key=key, bytes=len(data), sha256=digest), text)


def location_problem(value: object) -> str:
    """Why ``value`` is not a PayloadLocation ("" when it is one)."""
    if not isinstance(value, dict):
        return "payload: not an object"
    for name, kind in (("bucket", str), ("key", str), ("sha256", str), ("bytes", int)):
        if not isinstance(value.get(name), kind) or isinstance(value.get(name), bool):
            return f"payload.{name}: missing or not a {kind.__name__}"
    return ""
