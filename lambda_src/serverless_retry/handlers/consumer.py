"""Lambda entry point of the scheduled-retry consumer: ``serverless_retry.handlers.consumer.handler``.

Settings, the user's processor and the consumer are built once, at import (cold start): a bad
configuration fails the init with a ``ConfigError`` naming the environment variable to fix, before
any message is received, so no message is ever consumed by a misconfigured function.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from serverless_retry.consumer.retrying_consumer import BatchResponse, consumer_from_env

__all__ = ["consumer", "handler"]

consumer = consumer_from_env()


@consumer.logger.inject_lambda_context(clear_state=True)
def handler(event: Mapping[str, Any], context: Any) -> BatchResponse:
    return consumer(event, context)
