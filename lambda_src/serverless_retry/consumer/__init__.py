"""The scheduled-retry consumer (pattern 1): the retrying SQS consumer and the steps of its batch.

``serverless_retry.consumer`` is also the import path of the consumer's public names
(``RetryingConsumer``, ``consumer_from_env``, ``BatchResult`` ...), as it was when the consumer was one
module; they are read from ``retrying_consumer`` on first use (PEP 562), so importing one step of the
batch (``batch_state``, say, as the stream consumer does) does not import the whole consumer.

The modules, in the order a batch meets them: ``retrying_consumer`` (the loop), ``unhandled_records``
and ``record_reader`` (read), ``record_gate``, ``verdicts``, ``admission`` and ``claims`` (admit),
``idempotency`` (run), ``retry_copies`` and ``final_copies`` (decide), ``batch_state`` and
``delivery`` (deliver), ``batch_response`` (respond). docs/architecture.md places each on its floor.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from serverless_retry.consumer.retrying_consumer import (
        RETRIES_PLANNED,
        BatchItemFailure,
        BatchResponse,
        BatchResult,
        IdempotentProcessor,
        RetryingConsumer,
        consumer_from_env,
        idempotent_processor,
        short_traceback,
        sqs_records,
    )

__all__ = [
    "RETRIES_PLANNED",
    "BatchItemFailure",
    "BatchResponse",
    "BatchResult",
    "IdempotentProcessor",
    "RetryingConsumer",
    "consumer_from_env",
    "idempotent_processor",
    "short_traceback",
    "sqs_records",
]


def __getattr__(name: str) -> object:
    if name not in __all__:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from serverless_retry.consumer import retrying_consumer

    value = getattr(retrying_consumer, name)
    globals()[name] = value  # later reads find it directly
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
