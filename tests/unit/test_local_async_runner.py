"""The async runner's decisions with a fake runtime (no emulator): what it sends, and in which order,
for each outcome of an invocation. The emulator tests (tests/integration/test_selfheal_emulator.py)
run the same code against real functions."""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import pytest
from botocore.exceptions import ClientError
from serverless_retry_tools.local.aws_rules.lambda_async import Queued
from serverless_retry_tools.local.runtime.async_runner import AsyncRunner, event_id
from serverless_retry_tools.local.runtime.functions import InvocationResult, Throttled
from serverless_retry_tools.local.runtime.runner_services import RunnerServices

ARN = "arn:aws:lambda:us-east-1:123456789012:function:fn"
FAILURES = "arn:aws:sqs:us-east-1:123456789012:failures"


class _Exceptions:
    ResourceNotFoundException = ClientError
    QueueDoesNotExist = ClientError


@dataclass
class FakeClient:
    calls: list[tuple[str, dict[str, Any]]]
    config: dict[str, Any] | None = None
    exceptions: Any = _Exceptions

    def get_function_event_invoke_config(self, **kw: Any) -> dict[str, Any]:
        if self.config is None:
            raise ClientError(
                {"Error": {"Code": "ResourceNotFoundException"}}, "GetFunctionEventInvokeConfig"
            )
        return self.config

    def get_function_configuration(self, **kw: Any) -> dict[str, Any]:
        return {}

    def get_queue_url(self, **kw: Any) -> dict[str, Any]:
        return {"QueueUrl": "http://emulator/123456789012/" + kw["QueueName"]}

    def __getattr__(self, name: str) -> Any:
        def call(**kw: Any) -> dict[str, Any]:
            self.calls.append((name, kw))
            return {}

        return call


@dataclass
class FakeConfig:
    arn: str = ARN
    name: str = "fn"


@dataclass
class FakeFunctions:
    results: list[InvocationResult | Throttled]
    gone: bool = False

    def describe(self, target: str) -> FakeConfig:
        if self.gone:
            raise ClientError({"Error": {"Code": "ResourceNotFoundException"}}, "GetFunction")
        return FakeConfig()

    def invoke(
        self, arn: str, event: Any, *, config: Any, request_id: str, throttle: bool = False
    ) -> InvocationResult:
        assert throttle  # the async queue is throttled past a reserve, never waits for a slot
        result = self.results.pop(0)
        if isinstance(result, Throttled):
            raise result
        return result


@dataclass
class FakeClock:
    scale: float = 10.0

    def now(self) -> datetime:
        return datetime(2026, 11, 30, 10, 0, tzinfo=UTC)


@dataclass
class FakeRuntime:
    functions: FakeFunctions
    config: dict[str, Any] | None = None
    calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    events: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    clock: FakeClock = field(default_factory=FakeClock)

    def client(self, service: str) -> FakeClient:
        return FakeClient(self.calls, self.config)

    def emit(self, kind: str, **detail: Any) -> None:
        self.events.append((kind, detail))

    def count(self, **deltas: int) -> None:
        pass

    def warn_once(self, key: str, message: str) -> None:
        self.events.append(("warning", {"message": message}))

    def queue_url(self, sqs: Any, arn: str) -> str:
        return "http://emulator/123456789012/" + arn.rsplit(":", 1)[-1]


def queued(**over: Any) -> Queued:
    base: Queued = {
        "v": 1,
        "function_arn": ARN,
        "qualifier": "$LATEST",
        "request_id": "r-1",
        "payload": '{"k": 1}',
        "enqueued_ms": int(FakeClock().now().timestamp() * 1000),
        "invoke_count": 0,
        "trigger": "invoke",
    }
    base.update(over)  # type: ignore[typeddict-item]
    return base


def runner(runtime: FakeRuntime) -> AsyncRunner:
    """The runner with the fake's parts: what it gets of a real runtime (runner_services.py)."""
    services = RunnerServices(
        region="us-east-1",
        clock=runtime.clock,  # type: ignore[arg-type]
        functions=runtime.functions,  # type: ignore[arg-type]
        clock_holder=None,  # type: ignore[arg-type]  # handle() never holds the clock
        client=runtime.client,
        emit=runtime.emit,
        warn_once=runtime.warn_once,
        count=runtime.count,
        queue_url=runtime.queue_url,
        invoke_async=lambda function, payload: None,
    )
    return AsyncRunner(services, threading.Event())


def failed() -> InvocationResult:
    return InvocationResult(
        "r-1", ok=False, error={"errorType": "KeyError", "errorMessage": "'x'", "stackTrace": []}
    )


def test_a_function_error_is_queued_again_with_lambdas_delay_and_the_next_count() -> None:
    rt = FakeRuntime(FakeFunctions([failed()]))
    runner(rt).handle(queued())
    ((name, call),) = rt.calls
    assert name == "send_message"
    assert call["DelaySeconds"] == 60
    again = json.loads(call["MessageBody"])
    assert (again["invoke_count"], again["request_id"], again["enqueued_ms"]) == (
        1,
        "r-1",
        queued()["enqueued_ms"],
    )


def test_a_throttled_event_is_queued_again_uncounted_with_a_growing_delay() -> None:
    rt = FakeRuntime(FakeFunctions([Throttled("fn"), Throttled("fn")]))
    first = runner(rt)
    first.handle(queued())
    ((name, call),) = rt.calls
    assert (name, call["DelaySeconds"]) == ("send_message", 1)
    again = json.loads(call["MessageBody"])
    assert (again["invoke_count"], again["throttle_count"], again["request_id"]) == (0, 1, "r-1")
    rt.calls.clear()
    first.handle(again)
    ((_, call),) = rt.calls
    assert call["DelaySeconds"] == 2
    assert json.loads(call["MessageBody"])["throttle_count"] == 2
    assert [k for k, _ in rt.events] == ["async-throttled", "async-throttled"]


def test_the_last_failure_sends_the_record_to_the_on_failure_destination() -> None:
    config = {"MaximumRetryAttempts": 0, "DestinationConfig": {"OnFailure": {"Destination": FAILURES}}}
    rt = FakeRuntime(FakeFunctions([failed()]), config)
    runner(rt).handle(queued())
    ((name, call),) = rt.calls
    assert (name, call["QueueUrl"]) == ("send_message", "http://emulator/123456789012/failures")
    record = json.loads(call["MessageBody"])
    assert record["requestContext"]["condition"] == "RetriesExhausted"
    assert record["responsePayload"]["errorType"] == "KeyError"
    assert [k for k, _ in rt.events] == ["async-invoke", "async-discarded", "destination"]


def test_an_expired_event_is_discarded_without_running() -> None:
    config = {"MaximumEventAgeInSeconds": 60, "DestinationConfig": {"OnFailure": {"Destination": FAILURES}}}
    rt = FakeRuntime(FakeFunctions([]), config)
    runner(rt).handle(queued(enqueued_ms=queued()["enqueued_ms"] - 61_000))
    ((_, call),) = rt.calls
    assert json.loads(call["MessageBody"])["requestContext"]["condition"] == "EventAgeExceeded"


def test_a_deleted_function_drops_the_event() -> None:
    rt = FakeRuntime(FakeFunctions([], gone=True))
    runner(rt).handle(queued())
    assert rt.calls == []
    assert [k for k, _ in rt.events] == ["async-dropped"]


def test_a_fifo_destination_is_a_lost_record_and_said_so() -> None:
    fifo = FAILURES + ".fifo"
    config = {"MaximumRetryAttempts": 0, "DestinationConfig": {"OnFailure": {"Destination": fifo}}}
    rt = FakeRuntime(FakeFunctions([failed()]), config)
    runner(rt).handle(queued())
    assert [(op, kw["MetricData"][0]["MetricName"]) for op, kw in rt.calls] == [
        ("put_metric_data", "DestinationDeliveryFailures")
    ]
    kinds = [k for k, _ in rt.events]
    assert "destination-failed" in kinds
    assert "warning" in kinds


@pytest.mark.parametrize(
    ("event", "expected"),
    [
        ({"Records": [{"EventSource": "aws:sns", "Sns": {"MessageId": "m-1"}}]}, "m-1"),
        ({"id": "e-1", "detail-type": "t", "source": "s", "detail": {}}, "e-1"),
        ({"k": 1}, ""),
        ([1, 2], ""),
    ],
)
def test_event_id(event: Any, expected: str) -> None:
    assert event_id(event) == expected


class _DeleteTimesOut(FakeClient):
    def delete_message(self, **kw: Any) -> dict[str, Any]:
        self.calls.append(("delete_message", kw))
        raise ConnectionError("the delete timed out (after the send succeeded)")


@dataclass
class _CrashAfterSend(FakeRuntime):
    def client(self, service: str) -> FakeClient:
        return _DeleteTimesOut(self.calls, self.config)


def test_a_throttled_event_is_not_lost_when_the_ack_fails_after_its_requeue_and_it_comes_back() -> None:
    rt = _CrashAfterSend(FakeFunctions([Throttled("fn"), Throttled("fn")]))
    message = {"Body": json.dumps(queued()), "ReceiptHandle": "h-1"}
    run = runner(rt)
    run._run("http://emulator/q", message)  # re-queued; the ack fails, so the original stays
    run._run("http://emulator/q", message)  # redelivered after its visibility timeout: same again
    assert [name for name, _ in rt.calls] == ["send_message", "delete_message"] * 2  # sent before acked
    copies = [json.loads(call["MessageBody"]) for name, call in rt.calls if name == "send_message"]
    assert {(c["request_id"], c["invoke_count"], c["throttle_count"]) for c in copies} == {("r-1", 0, 1)}
    assert [kind for kind, _ in rt.events].count("error") == 2  # each failed ack said, never silent
