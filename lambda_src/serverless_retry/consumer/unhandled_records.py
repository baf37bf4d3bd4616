"""Records the consumer cannot handle: why, and what of them to keep.

Lambda's SQS records always carry a string ``messageId`` and ``body``; a record without them (a
hand-built event, a test, a mangled replay) cannot be processed, and one without a usable messageId
cannot even be handed back alone: an empty or null ``itemIdentifier``, or one naming no message of
the batch, makes Lambda treat the whole batch as failed, innocent neighbours included (Lambda
developer guide, "Reporting batch item failures"). So each goes to the retry-exhausted queue with its
reason; see ``final_copies.FinalCopies.unhandled``. Pure.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

from serverless_retry.backoff import json_kind

__all__ = ["UNIDENTIFIED_PREFIX", "raw_text", "record_id", "record_problem", "unidentified_id"]

# The retry id of a record without a messageId (its content's digest follows): the exhausted copy needs
# one, and a FIFO exhausted queue a group and deduplication id made from it.
UNIDENTIFIED_PREFIX = "unidentified-"


def record_id(record: object) -> str | None:
    """The record's messageId when it is one Lambda could be told about: a non-empty string."""
    if not isinstance(record, Mapping):
        return None
    message_id = record.get("messageId")
    return message_id if isinstance(message_id, str) and message_id else None


def record_problem(record: object) -> str | None:
    """Why the consumer cannot handle this record at all, or None."""
    if not isinstance(record, Mapping):
        return f"unhandled record: a JSON {json_kind(record)}, not an SQS record object"
    if record_id(record) is None:
        found = record.get("messageId")
        what = (
            "no messageId" if found is None else f"a messageId that is not a non-empty string ({found!r:.40})"
        )
        return f"unhandled record: {what}, so it cannot be handed back alone in batchItemFailures"
    if record.get("body") is None:
        return "unhandled record: it has no body"
    if not isinstance(record["body"], str):
        return f"unhandled record: its body is a JSON {json_kind(record['body'])}, not a string"
    attributes = record.get("messageAttributes")
    if attributes is not None and not isinstance(attributes, Mapping):
        # Its retry copy could not carry them: planning it would fail on every receive until the DLQ.
        return f"unhandled record: its messageAttributes are a JSON {json_kind(attributes)}, not an object"
    return None


def raw_text(record: object) -> str:
    """What to keep of an unhandled record: its body when it is a string, else the body as JSON, else
    the whole record as JSON (what cannot be JSON as its repr)."""
    if isinstance(record, Mapping):
        body = record.get("body")
        if isinstance(body, str):
            return body
        if body is not None:
            return _json(body)
    return _json(record)


def unidentified_id(text: str) -> str:
    return UNIDENTIFIED_PREFIX + hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:32]


def _json(value: Any) -> str:
    try:
        return json.dumps(value, sort_keys=True, default=repr)
    except (TypeError, ValueError, RecursionError):
        return repr(value)
