"""The retry queue's side of a stream record: the envelope's original body (the stream record as
Lambda sent it, position and all) turned back into the ``StreamMessage`` the processor got the first
time, its ``retry`` now the copy's (attempt 2, 3, ...). Pure.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import cast

from serverless_retry.errors import NonRetryableError
from serverless_retry.message import Message, Processor
from serverless_retry.streams.reader import StreamRecordError, read_stream_record, record_kind
from serverless_retry.streams.stream_message import StreamMessage

__all__ = ["StreamProcessor", "stream_message_of", "stream_processor"]

# The stream processor contract, as Processor's: returning means success, raising means failure.
StreamProcessor = Callable[[StreamMessage], object]


def stream_message_of(message: Message) -> StreamMessage:
    """The StreamMessage a retry copy (or a final copy's hook ``Message``) carries. A body that is not
    a stream record raises ``NonRetryableError``: retrying cannot make it one."""
    try:
        record = json.loads(message.body)
    except ValueError:
        raise NonRetryableError("the retry copy's body is not a stream record (not JSON)") from None
    if record_kind(record) is None:
        raise NonRetryableError("the retry copy's body is not a Kinesis or DynamoDB Streams record")
    try:
        return read_stream_record(record, message.retry)
    except StreamRecordError as exc:
        raise NonRetryableError(f"the retry copy's stream record is malformed: {exc}") from None


def stream_processor(processor: StreamProcessor) -> Processor:
    """``processor`` as the retry queue's ``RetryingConsumer`` calls it (with a ``Message``)."""

    def run_stream_record(message: Message) -> object:
        return processor(stream_message_of(message))

    run_stream_record.__name__ = getattr(processor, "__name__", run_stream_record.__name__)
    return cast(Processor, run_stream_record)
