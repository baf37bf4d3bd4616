"""Claim-check payloads in S3: written before their pointer is sent, read back through the pointer.

``put`` writes a payload once (``IfNoneMatch: *``): its key is deterministic, so a final copy planned
again after a lost answer finds its object there (412 PreconditionFailed, or 409 ConditionalRequestConflict
while another writer's upload of the same key is in progress) and counts it as written. ``resolve``
turns a pointer's view back into the view of the whole message, refusing an object whose size or
SHA-256 differs from what the pointer says (changed or replaced since).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from typing import Any

from serverless_retry.errors import ServerlessRetryError
from serverless_retry.payload_pointer import PayloadLocation, PayloadTarget, StoredPayload
from serverless_retry.terminal import TerminalView, read_terminal

__all__ = ["PayloadError", "fetch_payload", "put_payload", "read_through", "resolve_pointer"]

_ALREADY = {"PreconditionFailed", "ConditionalRequestConflict", "412", "409"}


class PayloadError(ServerlessRetryError):
    """A pointer's payload cannot be read, or is not the one the pointer names."""


def put_payload(s3: Any, payload: StoredPayload) -> bool:
    """Write the payload unless its key exists; True when written now, False when it was there."""
    location = payload.location
    try:
        s3.put_object(
            Bucket=location["bucket"],
            Key=location["key"],
            Body=payload.text.encode("utf-8"),
            ContentType="application/json",
            IfNoneMatch="*",
            Metadata={"sha256": location["sha256"]},
        )
    except Exception as exc:
        code = str(getattr(exc, "response", {}).get("Error", {}).get("Code", ""))
        if code in _ALREADY:
            return False
        raise
    return True


def fetch_payload(s3: Any, location: PayloadLocation) -> str:
    """The payload's text, checked against the pointer; PayloadError when missing or different."""
    try:
        data = s3.get_object(Bucket=location["bucket"], Key=location["key"])["Body"].read()
    except Exception as exc:
        raise PayloadError(f"s3://{location['bucket']}/{location['key']}: {exc}") from exc
    if len(data) != location["bytes"] or hashlib.sha256(data).hexdigest() != location["sha256"]:
        raise PayloadError(
            f"s3://{location['bucket']}/{location['key']}: the object is not the payload the pointer names "
            "(size or SHA-256 differs)"
        )
    return bytes(data).decode("utf-8")


def resolve_pointer(
    view: TerminalView, s3: Any | Callable[[], Any], target: PayloadTarget, *, message_id: str = ""
) -> TerminalView:
    """The whole message behind a pointer's view (any other view as it is): ``read_through``'s view."""
    return read_through(view, s3, target, message_id=message_id)[0]


def read_through(
    view: TerminalView, s3: Any | Callable[[], Any], target: PayloadTarget, *, message_id: str = ""
) -> tuple[TerminalView, str | None]:
    """(the whole message's view, the payload's text: the final envelope as the consumer wrote it) of
    a pointer; (``view``, None) for any other. ``s3`` may be a factory, called only for a pointer. Only
    a payload under ``target`` (the deployment's archive) is read: a producer can send a body shaped
    like a pointer, and it must not make an operator's redrive read (and re-send) another object."""
    if view.payload is None:
        return view, None
    bucket, key = view.payload["bucket"], view.payload["key"]
    if bucket != target.bucket or not key.startswith(f"{target.prefix}payloads/"):
        raise PayloadError(
            f"s3://{bucket}/{key}: not a payload of this deployment's archive "
            f"(s3://{target.bucket}/{target.prefix}payloads/); not read"
        )
    client = s3() if callable(s3) and not hasattr(s3, "get_object") else s3
    text = fetch_payload(client, view.payload)
    whole = read_terminal(text, message_id=message_id or view.id)
    return whole._replace(payload=view.payload), text
