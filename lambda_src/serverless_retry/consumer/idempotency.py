"""The processor made idempotent with Powertools (the optional ``SERVERLESS_RETRY_IDEMPOTENCY_TABLE``):
keyed on ``RetryContext.id``, the same across a message's attempts. Powertools' idempotency is
imported only when one is made."""

from __future__ import annotations

from typing import Any

from serverless_retry.message import Message, Processor

__all__ = ["IdempotentProcessor", "InProgressElsewhere", "idempotent_processor"]


class InProgressElsewhere(Exception):
    """Another invocation is processing this very message right now (Powertools idempotency said so):
    hand the record back, unprocessed; it returns after the visibility timeout."""


class IdempotentProcessor:
    """Wraps a processor with Powertools idempotency keyed on ``RetryContext.id`` (the first delivery's
    message id, the same across attempts): a message that already succeeded is not processed again
    when SQS delivers it twice. A failed attempt leaves no record, so retries still run."""

    def __init__(
        self, processor: Processor, persistence_store: Any, *, expires_after_seconds: int = 86_400
    ) -> None:
        from aws_lambda_powertools.utilities.idempotency import (  # optional feature: imported on use
            IdempotencyConfig,
            idempotent_function,
        )

        from serverless_retry.async_processor import synchronous  # an async processor runs to completion

        self._inner = synchronous(processor)
        self.config = IdempotencyConfig(
            event_key_jmespath="id",
            raise_on_no_idempotency_key=True,
            expires_after_seconds=expires_after_seconds,
        )
        self._guarded = idempotent_function(
            self._run, data_keyword_argument="key", persistence_store=persistence_store, config=self.config
        )

    def _run(self, *, key: dict[str, str], message: Message) -> None:
        self._inner(message)

    def register_lambda_context(self, context: Any) -> None:
        # Lets Powertools expire an in-progress record when this invocation times out.
        self.config.register_lambda_context(context)

    def __call__(self, message: Message) -> None:
        from aws_lambda_powertools.utilities.idempotency.exceptions import (
            IdempotencyAlreadyInProgressError,
        )

        try:
            self._guarded(key={"id": message.retry.id}, message=message)
        except IdempotencyAlreadyInProgressError as exc:
            # Not a failure of the processor: retrying it would start a second chain.
            raise InProgressElsewhere(str(exc)) from exc


def idempotent_processor(processor: Processor, table_name: str, **kwargs: Any) -> IdempotentProcessor:
    """``processor`` made idempotent with a DynamoDB table (partition key ``id``)."""
    from aws_lambda_powertools.utilities.idempotency import DynamoDBPersistenceLayer

    return IdempotentProcessor(processor, DynamoDBPersistenceLayer(table_name=table_name), **kwargs)
