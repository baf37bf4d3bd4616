"""EventBridge Scheduler's universal targets (``arn:aws:scheduler:::aws-sdk:<service>:<apiAction>``).

The Scheduler calls the API action with the schedule's ``Input`` as the request parameters (JSON with
the API's own member names; blobs base64-encoded) and the target's role. The runtime makes the same
call through boto3 against the emulator: parameters the API does not take, or a failing call, raise,
and the schedule loop applies the target's retry policy and dead-letter queue as for any target
(EventBridge Scheduler user guide, "Using universal targets").
"""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Callable
from typing import Any

from botocore import xform_name

__all__ = ["UNIVERSAL_TARGET", "call_universal_target"]

UNIVERSAL_TARGET = re.compile(r"^arn:aws[a-z-]*:scheduler:::aws-sdk:([a-z0-9-]+):([a-zA-Z0-9]+)$")


def _decode_blobs(shape: Any, value: Any) -> Any:
    """Base64 text -> bytes wherever the API's input shape has a blob."""
    if shape is None:
        return value
    kind = shape.type_name
    if kind == "blob" and isinstance(value, str):
        return base64.b64decode(value)
    if kind == "structure" and isinstance(value, dict):
        return {k: _decode_blobs(shape.members.get(k), v) for k, v in value.items()}
    if kind == "list" and isinstance(value, list):
        return [_decode_blobs(shape.member, v) for v in value]
    if kind == "map" and isinstance(value, dict):
        return {k: _decode_blobs(shape.value, v) for k, v in value.items()}
    return value


def call_universal_target(client: Callable[[str], Any], arn: str, input_text: str | None) -> Any:
    """Make the universal target's API call with ``input_text`` as its parameters."""
    match = UNIVERSAL_TARGET.match(arn)
    if match is None:
        raise ValueError(f"not a Scheduler universal target ARN: {arn}")
    service, action = match.groups()
    params = json.loads(input_text or "{}")
    if not isinstance(params, dict):
        raise ValueError(
            f"the Input of a universal target must be a JSON object of request parameters: {arn}"
        )
    api = client(service)
    operation = api.meta.service_model.operation_model(action[0].upper() + action[1:])
    method = getattr(api, xform_name(operation.name))
    return method(**_decode_blobs(operation.input_shape, params))
