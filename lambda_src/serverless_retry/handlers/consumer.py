"""Lambda entry point of the scheduled-retry consumer: ``serverless_retry.handlers.consumer.handler``.

Settings, the user's processor and the consumer are built once, at import (cold start): a bad
configuration fails the init with a ``ConfigError`` naming the environment variable to fix, before
any message is received, so no message is ever consumed by a misconfigured function.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from serverless_retry.config import ConsumerSettings
from serverless_retry.consumer import BatchResponse, RetryingConsumer, idempotent_processor

__all__ = ["create_consumer", "handler"]


def create_consumer(environ: Mapping[str, str] | None = None) -> RetryingConsumer:
    """Build the consumer from the environment (``os.environ`` by default). The local runtime calls
    this with each function's own environment."""
    settings = ConsumerSettings.from_env(environ)
    processor = settings.load_processor()
    if settings.idempotency_table:
        processor = idempotent_processor(processor, settings.idempotency_table)
    return RetryingConsumer.from_settings(settings, processor)


consumer = create_consumer()


@consumer.logger.inject_lambda_context(clear_state=True)
def handler(event: Mapping[str, Any], context: Any) -> BatchResponse:
    return consumer(event, context)
