"""Lambda entry point of the stream consumer: ``serverless_retry.handlers.stream.handler``.

One handler for both event sources of a stream deployment: the Kinesis or DynamoDB Streams event
source mapping (records handed off to the retry queue when they fail) and the retry queue's SQS event
source mapping (the copies run again, the same processor). Built once, at import (cold start): a bad
setting fails the init with a ``ConfigError`` naming the variable, before any record is read.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from serverless_retry.consumer.batch_response import BatchResponse
from serverless_retry.streams.consumer import stream_consumer_from_env

__all__ = ["consumer", "handler"]

consumer = stream_consumer_from_env()


@consumer.logger.inject_lambda_context(clear_state=True)
def handler(event: Mapping[str, Any], context: Any) -> BatchResponse:
    return consumer(event, context)
