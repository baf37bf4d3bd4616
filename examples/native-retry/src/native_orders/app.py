"""The Lambda handler: a plain Powertools ``BatchProcessor`` over SQS, with idempotent booking.

Native SQS retry, nothing else: a record that raises is reported in ``batchItemFailures``; SQS hands
it out again when its visibility timeout (6 x the function timeout) ends, and moves it to the DLQ
after ``maxReceiveCount`` (5) receives. Successful records are deleted by the event source mapping.
When every record of a batch fails, Powertools raises instead of answering (its default,
``raise_on_entire_batch_failure``): the whole batch comes back all the same, and the function's
Errors metric shows a bug that fails everything, as the buggy release does.

Every delivery is at least once: a producer may send an order twice, and a message may come back
after it was booked (the function timed out or died after the write, before SQS heard of the
success). So booking goes through Powertools idempotency keyed on the order's stable key,
``order_id``, in a DynamoDB table: the first delivery books and its result is stored; every later
copy, whichever SQS message carries it, gets the stored result and books nothing. The record of a
booking is kept as long as any copy can still arrive (``IDEMPOTENCY_EXPIRES_AFTER_SECONDS``: the
source queue's retention plus the DLQ's, set by Terraform). A copy with the same ``order_id`` but
another amount or currency is refused (payload validation) and, failing every time, ends in the DLQ
for a person to look at.

``simulate: "crash-after-write"`` in an order is a demo device: the delivery that books it then fails
as if the function had died after the write, so the message comes back and its next delivery is
answered from the idempotency record.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.batch import BatchProcessor, EventType, process_partial_response
from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord
from aws_lambda_powertools.utilities.idempotency import (
    DynamoDBPersistenceLayer,
    IdempotencyConfig,
    idempotent_function,
)
from aws_lambda_powertools.utilities.idempotency.persistence.base import BasePersistenceLayer

from native_orders.ledger import Booking, Delivery, book
from native_orders.orders import Order

__all__ = ["SimulatedCrash", "make_handler"]

Handler = Callable[[dict[str, Any], Any], dict[str, Any]]
Parse = Callable[[Any], Order]

logger = Logger()
metrics = Metrics(namespace="NativeRetryExample")
# The idempotency key is "order#<hash of order_id>": the same across releases and function names, so
# a fix deployed between two deliveries of one order still finds the first booking.
KEY_PREFIX = "order"


class SimulatedCrash(RuntimeError):
    """Stands in for a function that dies after its write, before SQS learns of the success."""


def make_handler(parse: Parse, *, persistence: BasePersistenceLayer | None = None) -> Handler:
    """The handler for a release that parses orders with ``parse``."""
    config = IdempotencyConfig(
        event_key_jmespath="order_id",
        payload_validation_jmespath="[amount, currency]",
        raise_on_no_idempotency_key=True,
        expires_after_seconds=int(os.environ.get("IDEMPOTENCY_EXPIRES_AFTER_SECONDS", "3600")),
    )
    store = persistence or DynamoDBPersistenceLayer(table_name=os.environ["IDEMPOTENCY_TABLE"])
    book_once = idempotent_function(
        book, data_keyword_argument="order", persistence_store=store, config=config, key_prefix=KEY_PREFIX
    )
    processor = BatchProcessor(event_type=EventType.SQS)

    def record_handler(record: SQSRecord) -> None:
        receive_count = int(record.attributes.approximate_receive_count)
        delivery = Delivery(message_id=record.message_id, receive_count=receive_count)
        try:
            body = record.json_body
            booking: Booking = book_once(order=parse(body), delivery=delivery)
            booked_now = (
                booking["message_id"] == record.message_id and booking["receive_count"] == receive_count
            )
            if booked_now and isinstance(body, dict) and body.get("simulate") == "crash-after-write":
                raise SimulatedCrash("died after booking, before the delivery was acknowledged")
        except Exception as exc:
            # Reported as a batch item failure: SQS redelivers it after the visibility timeout.
            logger.warning(
                "processing failed; retry after the visibility timeout",
                extra={
                    "retry_id": record.message_id,
                    "attempt": receive_count,
                    "transport": "visibility",
                    "error_type": type(exc).__name__,
                    "error": str(exc)[:512],
                },
            )
            raise
        logger.info(
            "order accepted",
            extra={
                "id": record.message_id,
                "attempt": receive_count,
                "order_id": booking["order_id"],
                "entry_id": booking["entry_id"],
                # True: an earlier delivery (of this message or another copy) booked it.
                "replayed": not booked_now,
            },
        )
        metrics.add_metric(name="Processed", unit=MetricUnit.Count, value=1)

    @metrics.log_metrics
    @logger.inject_lambda_context
    def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
        # Lets Powertools expire an in-progress booking when this invocation times out.
        config.register_lambda_context(context)
        return process_partial_response(
            event=event, record_handler=record_handler, processor=processor, context=context
        )

    return handler
