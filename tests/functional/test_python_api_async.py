"""Record handlers in every shape a Powertools user writes them, on moto's SQS:

- ``async def`` handlers (and objects, partials, methods of them) are awaited: a failure is retried,
  not deleted as processed; through ``process_retrying_response``, ``@retrying_consumer`` and a
  ``RetryingConsumer`` alike (the built-in handler's path);
- inside a running event loop the batch is refused whole before any record is touched;
- ``lambda_context`` is injected as Powertools does; ``RetryingConsumer`` refuses a handler that
  requires it when it is made, instead of retrying a TypeError until exhausted;
- a handler made per invocation (a partial carrying the context) does not grow the processor;
- an all-failed batch does not raise (unlike Powertools' BatchProcessingError).
"""

from __future__ import annotations

import asyncio
import functools
import json
from typing import Any

import pytest
from serverless_retry import (
    AwsClients,
    Message,
    RetryingConsumer,
    RetryPolicy,
    process_retrying_response,
    retrying_consumer,
)
from serverless_retry.async_processor import AsyncProcessorError
from serverless_retry.clock import FrozenClock
from serverless_retry.testing import LambdaContext, lambda_context, sqs_event

from .conftest import TEST_LOGGER, Stack
from .test_python_api import RETRY_ONCE, processor_for


def orders(stack: Stack) -> dict[str, Any]:
    return sqs_event([{"id": 1}, {"id": 2, "fail": True}], queue_arn=stack.queue_arn)


async def handle(message: Message) -> None:
    await asyncio.sleep(0)
    if message.json().get("fail"):
        raise TimeoutError("payment API timed out")


class AsyncHandler:
    def __init__(self) -> None:
        self.seen: list[int] = []

    async def __call__(self, message: Message) -> None:
        self.seen.append(message.json()["id"])
        await handle(message)


def retried_ids(stack: Stack) -> list[int]:
    """The ids of the retry copies the consumer sent (attempt 2 of each failed record)."""
    out = []
    for call in stack.called("SendMessageBatch"):
        for entry in call["Entries"]:
            envelope = json.loads(entry["MessageBody"])
            assert envelope["serverless_retry"]["attempt"] == 2
            out.append(json.loads(envelope["body"])["id"])
    return out


@pytest.mark.parametrize(
    "make_handler",
    [lambda: handle, lambda: functools.partial(handle), AsyncHandler],
    ids=["async-def", "partial", "async-callable-object"],
)
def test_an_async_handler_s_failure_is_retried_not_deleted_as_processed(
    stack: Stack, clock: FrozenClock, make_handler: Any
) -> None:
    processor = processor_for(stack, clock, RETRY_ONCE)
    response = process_retrying_response(orders(stack), make_handler(), processor, lambda_context())
    assert response == {"batchItemFailures": []}
    assert retried_ids(stack) == [2]  # the failure has its retry copy; before: none, both "processed"


def test_the_decorator_awaits_an_async_handler(stack: Stack, clock: FrozenClock) -> None:
    @retrying_consumer(processor=processor_for(stack, clock, RETRY_ONCE))
    async def lambda_handler(message: Message) -> None:
        await handle(message)

    assert lambda_handler(orders(stack), lambda_context()) == {"batchItemFailures": []}
    assert retried_ids(stack) == [2]


def test_the_consumer_awaits_an_async_processor(stack: Stack, clock: FrozenClock) -> None:
    consumer = RetryingConsumer(
        handle,
        RetryPolicy.from_dict(RETRY_ONCE),
        stack.targets(),
        clients=AwsClients.of(sqs=stack.sqs, scheduler=stack.scheduler),
        clock=clock,
        logger=TEST_LOGGER,
    )
    assert consumer(orders(stack), lambda_context()) == {"batchItemFailures": []}
    assert retried_ids(stack) == [2]


def test_a_plain_handler_that_returns_a_coroutine_is_not_counted_as_success(
    stack: Stack, clock: FrozenClock
) -> None:
    def record_handler(message: Message) -> Any:
        return handle(message)  # forgot the async: what it returns has not run yet

    processor = processor_for(stack, clock, RETRY_ONCE)
    assert process_retrying_response(orders(stack), record_handler, processor) == {"batchItemFailures": []}
    assert retried_ids(stack) == [2]


def test_inside_a_running_event_loop_the_batch_is_refused_whole(stack: Stack, clock: FrozenClock) -> None:
    processor = processor_for(stack, clock, RETRY_ONCE)
    runs: list[int] = []

    async def record_handler(message: Message) -> None:
        runs.append(1)

    async def caller() -> None:
        process_retrying_response(orders(stack), record_handler, processor, lambda_context())

    with pytest.raises(AsyncProcessorError, match="running event loop"):
        asyncio.run(asyncio.wait_for(caller(), timeout=10))
    assert runs == []
    assert stack.called("SendMessageBatch") == []  # nothing sent: the batch goes back to the queue whole


def test_lambda_context_is_injected_as_powertools_does(stack: Stack, clock: FrozenClock) -> None:
    seen: list[str] = []

    def record_handler(message: Message, lambda_context: LambdaContext) -> None:
        seen.append(lambda_context.aws_request_id)
        if message.json().get("fail"):
            raise TimeoutError("payment API timed out")

    async def async_handler(message: Message, lambda_context: LambdaContext) -> None:
        seen.append(lambda_context.aws_request_id)

    processor = processor_for(stack, clock, RETRY_ONCE)
    first, second = lambda_context(), lambda_context()
    assert process_retrying_response(orders(stack), record_handler, processor, first) == {
        "batchItemFailures": []
    }
    process_retrying_response(orders(stack), async_handler, processor, second)
    assert seen == [first.aws_request_id] * 2 + [second.aws_request_id] * 2
    assert retried_ids(stack) == [2]  # only the record that raised, not a TypeError for each


def test_the_consumer_refuses_a_handler_that_requires_lambda_context_when_made(stack: Stack) -> None:
    def record_handler(message: Message, lambda_context: Any) -> None: ...

    with pytest.raises(TypeError, match="lambda_context"):
        RetryingConsumer(record_handler, RetryPolicy.from_dict(RETRY_ONCE), stack.targets())  # type: ignore[arg-type]


def test_a_handler_made_per_invocation_does_not_grow_the_processor(stack: Stack, clock: FrozenClock) -> None:
    processor = processor_for(stack, clock, RETRY_ONCE)
    seen: list[str] = []

    def record_handler(message: Message, context: LambdaContext) -> None:
        seen.append(context.aws_request_id)

    consumers = set()
    for _ in range(2_000):
        context = lambda_context()
        event = sqs_event([{"id": 1}], queue_arn=stack.queue_arn)
        process_retrying_response(
            event, functools.partial(record_handler, context=context), processor, context
        )
        consumers.add(id(processor.consumer(functools.partial(record_handler, context=context))))
    assert len(seen) == 2_000
    assert seen[-1] == context.aws_request_id  # each call ran its own partial
    assert len(consumers) == 1  # one consumer, however many handlers: before, 2,000
    assert len(processor._handlers) <= 8  # the prepared handlers kept are bounded


def test_an_all_failed_batch_does_not_raise(stack: Stack, clock: FrozenClock) -> None:
    async def record_handler(message: Message) -> None:
        raise TimeoutError("payment API timed out")

    processor = processor_for(stack, clock, RETRY_ONCE)
    event = sqs_event([{"id": 1}, {"id": 2}], queue_arn=stack.queue_arn)
    assert process_retrying_response(event, record_handler, processor) == {"batchItemFailures": []}
    assert sorted(retried_ids(stack)) == [1, 2]
