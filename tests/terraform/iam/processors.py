"""The processor the least-privilege scenarios deploy (SERVERLESS_RETRY_PROCESSOR): each message body
says what to do, so one batch reaches every decision the consumer can take."""

from __future__ import annotations

import json

from serverless_retry.errors import HttpError
from serverless_retry.message import Message

ERRORS: dict[str, type[Exception]] = {"TimeoutError": TimeoutError, "ValueError": ValueError}


def handle(message: Message) -> None:
    """``{"do": "ok"}``, ``{"do": "raise", "error": "TimeoutError"}`` or
    ``{"do": "http", "status": 429, "retry_after": 7200}``."""
    spec = json.loads(message.body)
    if spec["do"] == "raise":
        raise ERRORS[spec["error"]]("failed on purpose")
    if spec["do"] == "http":
        raise HttpError(int(spec["status"]), retry_after=spec.get("retry_after"))
