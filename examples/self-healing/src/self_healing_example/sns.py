"""Reading the one SNS record a topic subscription hands a Lambda function."""

from __future__ import annotations

import json
from typing import Any


def message(event: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """``(the SNS record's Sns object, its Message parsed as a JSON object)``.

    A body that is not a JSON object is treated as ``{}``: each handler then fails the way its demo
    role says (the charge with its HTTP error, the invoice with a KeyError), never differently."""
    sns: dict[str, Any] = event["Records"][0]["Sns"]
    try:
        body = json.loads(sns["Message"])
    except (TypeError, ValueError):
        body = None
    return sns, body if isinstance(body, dict) else {}
