"""The Powertools-shaped API of pattern 1 (serverless_retry.batch) on moto's SQS:

- ``process_retrying_response`` and ``@retrying_consumer`` return the partial batch response;
- settings come from the environment (no SERVERLESS_RETRY_PROCESSOR needed), overridable in code;
- ``Message.sqs_record`` is Powertools' SQSRecord of the unwrapped record, on a retry copy too;
- the ``on_exhausted`` hook is called once per message sent to the retry-exhausted queue, before the
  send, with the message, the error and why; a raising hook loses nothing; a redelivery on the
  in-place repeat path (the final decision recorded, its send failed) does not call it again.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import replace
from typing import Any

import pytest
from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord
from serverless_retry import (
    AwsClients,
    ConfigError,
    Exhausted,
    Message,
    NonRetryableError,
    RetryingProcessor,
    RetryPolicy,
    process_retrying_response,
    retrying_consumer,
)
from serverless_retry.clock import FrozenClock
from serverless_retry.config import ConsumerSettings
from serverless_retry.testing import lambda_context, sqs_event, sqs_record

from .conftest import QUIET_LOGGER, TEST_LOGGER, Stack, event_from, failure_ids, make_stack
from .test_claims import table

RETRY_ONCE = {"max_attempts": 2, "backoff": {"strategy": "fixed", "base_seconds": 30, "max_seconds": 600}}
FOREIGN_ARN = "arn:aws:sqs:us-east-1:123456789012:someone-elses"


def processor_for(
    stack: Stack, clock: FrozenClock, policy: dict[str, Any], **kwargs: Any
) -> RetryingProcessor:
    return RetryingProcessor(
        policy=RetryPolicy.from_dict(policy),
        targets=stack.targets(),
        clients=AwsClients.of(sqs=stack.sqs, scheduler=stack.scheduler),
        clock=clock,
        logger=kwargs.pop("logger", TEST_LOGGER),
        **kwargs,
    )


def orders(stack: Stack) -> dict[str, Any]:
    """One order that succeeds, one that fails (retried), one record of another queue (handed back)."""
    event = sqs_event([{"id": 1}, {"id": 2, "fail": True}], queue_arn=stack.queue_arn)
    event["Records"].append(sqs_record({"id": 3}, queue_arn=FOREIGN_ARN, message_id="foreign-1"))
    return event


def handle(message: Message) -> None:
    if message.json().get("fail"):
        raise TimeoutError("payment API timed out")


def test_the_function_returns_the_partial_batch_response(stack: Stack, clock: FrozenClock) -> None:
    processor = processor_for(stack, clock, RETRY_ONCE)
    response = process_retrying_response(
        event=orders(stack), record_handler=handle, processor=processor, context=lambda_context()
    )
    assert response == {"batchItemFailures": [{"itemIdentifier": "foreign-1"}]}
    [call] = stack.called("SendMessageBatch")  # the failed order's retry copy, 30 s out
    assert call["Entries"][0]["DelaySeconds"] == 30
    assert processor.consumer(handle) is processor.consumer(handle)  # built once per handler


def test_the_decorator_is_the_lambda_handler_and_keeps_the_record_handler(
    stack: Stack, clock: FrozenClock
) -> None:
    @retrying_consumer(processor=processor_for(stack, clock, RETRY_ONCE))
    def handler(message: Message) -> None:
        handle(message)

    assert handler(orders(stack), lambda_context()) == {
        "batchItemFailures": [{"itemIdentifier": "foreign-1"}]
    }
    assert len(stack.called("SendMessageBatch")) == 1
    assert handler.__name__ == "handler"
    with pytest.raises(TimeoutError):  # the undecorated function, to test alone
        handler.__wrapped__(Message("m", '{"fail": true}', {}, None, {}))  # type: ignore[attr-defined, arg-type]


def _wire_environment(monkeypatch: pytest.MonkeyPatch, stack: Stack, policy: dict[str, Any]) -> None:
    for name, value in {
        "SERVERLESS_RETRY_POLICY": json.dumps(policy),
        "SERVERLESS_RETRY_QUEUE_URL": stack.queue_url,
        "SERVERLESS_RETRY_QUEUE_ARN": stack.queue_arn,
        "SERVERLESS_RETRY_EXHAUSTED_QUEUE_URL": stack.exhausted_url,
        "SERVERLESS_RETRY_DLQ_ARN": stack.dlq_arn,
    }.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("SERVERLESS_RETRY_PROCESSOR", raising=False)


def test_settings_come_from_the_environment_with_explicit_overrides(
    stack: Stack, clock: FrozenClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    _wire_environment(monkeypatch, stack, RETRY_ONCE)
    bare = RetryingProcessor()  # reads nothing yet: importing a module that makes one needs no environment
    assert bare.settings.policy.max_attempts == 2
    assert bare.settings.targets.exhausted_queue_url == stack.exhausted_url
    assert bare.settings.processor == ""  # the record handler is given in code

    overridden = RetryingProcessor(policy=RetryPolicy.from_dict({"max_attempts": 1}), clock=clock)
    response = process_retrying_response(orders(stack), handle, overridden, lambda_context())
    assert failure_ids(response) == ["foreign-1"]
    [final] = stack.receive(stack.exhausted_url)  # max_attempts 1 from the override: exhausted at once
    assert json.loads(final["Body"])["serverless_retry"]["outcome"] == "exhausted"

    # With no processor, the function shares one RetryingProcessor() from the environment.
    assert process_retrying_response(sqs_event(["{}"], queue_arn=stack.queue_arn), handle) == {
        "batchItemFailures": []
    }

    monkeypatch.delenv("SERVERLESS_RETRY_QUEUE_ARN")
    with pytest.raises(ConfigError, match="SERVERLESS_RETRY_QUEUE_ARN"):
        RetryingProcessor().process(orders(stack), handle)  # before any record is processed


def test_the_record_handler_reads_the_original_message_as_an_sqs_record(
    stack: Stack, clock: FrozenClock
) -> None:
    seen: list[tuple[str, SQSRecord]] = []

    def record_handler(message: Message) -> None:
        seen.append((message.record["body"], message.sqs_record))
        if message.attempt == 1:
            raise TimeoutError("first try fails")

    processor = processor_for(stack, clock, RETRY_ONCE)
    stack.sqs.send_message(
        QueueUrl=stack.queue_url,
        MessageBody='{"order": "o-1"}',
        MessageAttributes={
            "tenant": {"DataType": "String", "StringValue": "acme"},
            "blob": {"DataType": "Binary", "BinaryValue": b"\x00\x01"},
        },
    )
    for _ in range(2):  # the first delivery, then its retry copy 30 s later
        messages = stack.drain(stack.queue_url)
        assert len(messages) == 1
        assert process_retrying_response(
            event_from(messages, stack.queue_arn), record_handler, processor
        ) == {"batchItemFailures": []}
        clock.advance(31)

    (first_raw, first), (copy_raw, copy) = seen
    assert json.loads(copy_raw)["serverless_retry"]["attempt"] == 2  # the copy travels in an envelope
    for record in (first, copy):  # ...which the SQSRecord view never shows
        assert isinstance(record, SQSRecord)
        assert record.body == '{"order": "o-1"}'
        assert record.json_body == {"order": "o-1"}
        assert record.message_attributes["tenant"].string_value == "acme"  # type: ignore[union-attr]
        assert record.message_attributes["blob"].binary_value == "AAE="  # type: ignore[union-attr]
        assert record.md5_of_body == hashlib.md5(b'{"order": "o-1"}').hexdigest()
    assert first.raw_event["body"] == first_raw  # a first delivery's record is the record itself
    assert copy.md5_of_body == first.md5_of_body
    assert copy.message_id != first.message_id  # this delivery's SQS message, as Message.message_id


class Hook:
    """An exhausted hook that records its calls and what the retry-exhausted queue held then."""

    def __init__(self, stack: Stack, *, raises: BaseException | None = None) -> None:
        self.stack = stack
        self.raises = raises
        self.calls: list[tuple[Message, BaseException | None, Exhausted, int]] = []

    def __call__(self, message: Message, error: BaseException | None, exhausted: Exhausted) -> None:
        waiting = self.stack.sqs.get_queue_attributes(
            QueueUrl=self.stack.exhausted_url, AttributeNames=["ApproximateNumberOfMessages"]
        )["Attributes"]["ApproximateNumberOfMessages"]
        self.calls.append((message, error, exhausted, int(waiting)))
        if self.raises is not None:
            raise self.raises


def _run_until_quiet(stack: Stack, clock: FrozenClock, handler: Any, rounds: int = 6) -> None:
    for _ in range(rounds):  # bounded: the chain ends within max_attempts deliveries
        messages = stack.drain(stack.queue_url)
        if messages:
            assert handler(event_from(messages, stack.queue_arn), lambda_context()) == {
                "batchItemFailures": []
            }
        clock.advance(31)


def test_the_hook_is_called_once_when_a_message_is_exhausted_before_its_copy_is_sent(
    stack: Stack, clock: FrozenClock
) -> None:
    hook = Hook(stack)
    attempts: list[int] = []

    @retrying_consumer(processor=processor_for(stack, clock, RETRY_ONCE, on_exhausted=hook))
    def handler(message: Message) -> None:
        attempts.append(message.attempt)
        raise TimeoutError(f"attempt {message.attempt} timed out")

    stack.sqs.send_message(QueueUrl=stack.queue_url, MessageBody='{"order": "o-1"}')
    _run_until_quiet(stack, clock, handler)

    assert attempts == [1, 2]
    [(message, error, exhausted, waiting)] = hook.calls
    assert (message.body, message.attempt) == ('{"order": "o-1"}', 2)
    assert isinstance(error, TimeoutError)
    assert str(error) == "attempt 2 timed out"
    assert exhausted.outcome == "exhausted"
    assert exhausted.reason == "attempt 2 >= max_attempts 2"
    assert waiting == 0  # called before its copy went to the retry-exhausted queue
    [final] = stack.receive(stack.exhausted_url)
    meta = json.loads(final["Body"])["serverless_retry"]
    assert (meta["outcome"], meta["reason"]) == (exhausted.outcome, exhausted.reason)


def test_a_non_retryable_message_calls_the_hook_with_its_outcome(stack: Stack, clock: FrozenClock) -> None:
    hook = Hook(stack)

    @retrying_consumer(processor=processor_for(stack, clock, RETRY_ONCE, on_exhausted=hook))
    def handler(message: Message) -> None:
        raise NonRetryableError("order o-1 does not exist")

    assert handler(sqs_event(['{"order": "o-1"}'], queue_arn=stack.queue_arn), lambda_context()) == {
        "batchItemFailures": []
    }
    [(message, error, exhausted, _)] = hook.calls
    assert (message.attempt, type(error), exhausted.outcome) == (1, NonRetryableError, "non-retryable")
    assert len(stack.receive(stack.exhausted_url)) == 1


@pytest.mark.parametrize(
    "raised", [RuntimeError("pager down"), SystemExit(3)], ids=["error", "base-exception"]
)
def test_a_hook_that_raises_loses_nothing(stack: Stack, clock: FrozenClock, raised: BaseException) -> None:
    hook = Hook(stack, raises=raised)
    processor = processor_for(stack, clock, {"max_attempts": 1}, on_exhausted=hook, logger=QUIET_LOGGER)
    event = sqs_event(
        [{"id": 1, "fail": True}, {"id": 2}, {"id": 3, "fail": True}], queue_arn=stack.queue_arn
    )

    assert process_retrying_response(event, handle, processor, lambda_context()) == {"batchItemFailures": []}

    assert len(hook.calls) == 2
    finals = stack.receive(stack.exhausted_url)
    assert sorted(json.loads(json.loads(m["Body"])["body"])["id"] for m in finals) == [1, 3]


class ExhaustedSendFails:
    """An SQS client whose sends to the retry-exhausted queue fail while ``down``."""

    def __init__(self, real: Any, url: str) -> None:
        self.real = real
        self.url = url
        self.down = True

    def __getattr__(self, name: str) -> Any:
        method = getattr(self.real, name)

        def call(**params: Any) -> Any:
            if self.down and name == "send_message_batch" and params.get("QueueUrl") == self.url:
                raise ConnectionError("the retry-exhausted queue did not answer")
            return method(**params)

        return call


def test_a_redelivery_whose_final_decision_was_recorded_does_not_call_the_hook_again(
    aws: None, clock: FrozenClock
) -> None:
    # FIFO ordered (in place) with claims: the final decision is recorded before the copy is sent; the
    # send fails, the record comes back, repeats that decision and sends the copy: one hook call.
    stack = make_stack("ledger", fifo=True)
    dynamodb = table()
    sqs = ExhaustedSendFails(stack.sqs, stack.exhausted_url)
    hook = Hook(stack)
    runs: list[int] = []

    def record_handler(message: Message) -> None:
        runs.append(message.attempt)
        raise NonRetryableError("ledger entry refused")

    settings = ConsumerSettings(
        "",
        RetryPolicy.from_dict(RETRY_ONCE),
        stack.targets(visibility_timeout_seconds=30),
        clock=clock,
        claims_table="claims",  # FIFO ordered needs one (ConfigError without)
    )
    processor = RetryingProcessor(
        settings=settings,
        clients=AwsClients.of(sqs=sqs, scheduler=stack.scheduler, dynamodb=dynamodb),  # type: ignore[arg-type]
        logger=QUIET_LOGGER,
        on_exhausted=hook,
    )
    stack.sqs.send_message(QueueUrl=stack.queue_url, MessageBody="entry-1", MessageGroupId="g")

    first = stack.receive(stack.queue_url, visibility=30)
    failed = failure_ids(processor.process(event_from(first, stack.queue_arn), record_handler))
    assert failed == [first[0]["MessageId"]]  # the copy was not sent: the record goes back
    assert stack.receive(stack.exhausted_url) == []

    sqs.down = False
    clock.advance(31)
    again = stack.receive(stack.queue_url, visibility=30)
    assert again[0]["Attributes"]["ApproximateReceiveCount"] == "2"
    assert failure_ids(processor.process(event_from(again, stack.queue_arn), record_handler)) == []

    assert runs == [1, 1]  # the redelivery repeats the recorded attempt
    assert len(hook.calls) == 1
    [final] = stack.receive(stack.exhausted_url)
    assert json.loads(final["Body"])["serverless_retry"]["outcome"] == "non-retryable"


def test_an_invalid_envelope_calls_the_hook_without_an_error(stack: Stack, clock: FrozenClock) -> None:
    hook = Hook(stack)
    ran: list[Message] = []
    processor = processor_for(stack, clock, RETRY_ONCE, on_exhausted=hook, logger=QUIET_LOGGER)
    body = json.dumps({"serverless_retry": {"attempt": "two"}, "body": "x"})

    assert process_retrying_response(sqs_event([body], queue_arn=stack.queue_arn), ran.append, processor) == {
        "batchItemFailures": []
    }
    assert ran == []
    [(message, error, exhausted, _)] = hook.calls
    assert (message.body, error, exhausted.outcome) == (body, None, "invalid-envelope")
    assert len(stack.receive(stack.exhausted_url)) == 1


def test_fifo_ordered_without_a_claims_table_is_refused_with_what_to_do(aws: None) -> None:
    """Issue 28 defect 9's class: without a store, receives spent held back behind a group's failed
    message counted as the held-back record's attempts (an innocent record shown attempt 4 and
    exhausted, another dead-lettered unprocessed). Only a store can tell them apart: refused."""
    stack = make_stack("ledger", fifo=True)
    processor = RetryingProcessor(
        policy=RetryPolicy(), targets=stack.targets(), clients=AwsClients.of(sqs=stack.sqs)
    )
    with pytest.raises(ConfigError, match=r"needs a claims table.*fifo_order to 'unordered'"):
        processor.consumer(lambda message: None)
    unordered = RetryingProcessor(
        policy=RetryPolicy(),
        targets=replace(stack.targets(), fifo_order="unordered"),
        clients=AwsClients.of(sqs=stack.sqs),
    )
    assert unordered.consumer(lambda message: None).claims is None
