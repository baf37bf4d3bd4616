"""The function-side helper: the same handler code runs on a first delivery and on a redrive.

    from serverless_retry import RetryContext, self_healing

    @self_healing
    def handler(event, context, retry: RetryContext):
        order = json.loads(event["Records"][0]["Sns"]["Message"])  # the event as it first arrived
        if retry.attempt > 1: ...                                  # 1 = first delivery
        charge(order, idempotency_key=retry.id)                    # stable across attempts

The decorator takes the retry state off (SNS attribute / top-level key / direct-invoke wrapper) and
calls ``handler(original_event, context, retry)``. Whatever the handler raises propagates unchanged:
Lambda records it in the destination record, which is what the retry rules classify. A malformed
state raises ``InvalidRetryState`` before the handler runs (the name ``serverless_retry`` is
reserved), so it ends in the retry-exhausted queue instead of looping.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar, overload

from serverless_retry.envelope import RetryContext
from serverless_retry.selfheal.state import read, unqualified_function_arn

__all__ = ["read_retry_state", "self_healing"]

R = TypeVar("R")


def read_retry_state(event: Any, context: Any = None) -> tuple[Any, RetryContext]:
    """``(event as it first arrived, RetryContext)`` for a self-healing function's invocation.

    On a first delivery the retry id is the SNS MessageId, the EventBridge event id, or (direct
    invoke) the invocation's request id; ``first_failed_at`` is None and ``attempt`` is 1."""
    request_id = str(getattr(context, "aws_request_id", "") or "")
    arn = str(getattr(context, "invoked_function_arn", "") or "")
    parsed = unqualified_function_arn(arn)
    carried = read(event)
    retry = carried.context(request_id=request_id, function_arn=parsed[0] if parsed else arn)
    return carried.event, retry


@overload
def self_healing(handler: Callable[[Any, Any, RetryContext], R], /) -> Callable[[Any, Any], R]: ...


@overload
def self_healing() -> Callable[[Callable[[Any, Any, RetryContext], R]], Callable[[Any, Any], R]]: ...


def self_healing(
    handler: Callable[[Any, Any, RetryContext], R] | None = None, /
) -> Callable[[Any, Any], R] | Callable[[Callable[[Any, Any, RetryContext], R]], Callable[[Any, Any], R]]:
    """Wrap ``handler(event, context, retry)`` into a Lambda handler ``(event, context)``.

    ``@self_healing`` or ``@self_healing()``: the same entry style as pattern 1's
    ``@retrying_consumer``; the undecorated function stays reachable as ``handler.__wrapped__``."""

    def decorate(inner: Callable[[Any, Any, RetryContext], R]) -> Callable[[Any, Any], R]:
        @functools.wraps(inner)
        def lambda_handler(event: Any, context: Any) -> R:
            original, retry = read_retry_state(event, context)
            return inner(original, context, retry)

        return lambda_handler

    if handler is not None:
        return decorate(handler)
    return decorate
