"""Reserved concurrency 0 throttles every invocation, and each caller does what its AWS counterpart
does with the 429 (docs/local-emulator.md, fidelity table): an SQS event source mapping still receives, retries the
batch within its visibility timeout, then lets it come back one receive nearer the DLQ; the async
queue retries without counting attempts until the event is too old; a pipe fails the batch. Past a
reserved concurrency of 1 or more, a mapping's pollers overpull the same way unless its
MaximumConcurrency stays within the reserve, and async events are throttled and retried."""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from serverless_retry_tools.local.emulator.emulator import Emulator

from tests.integration.test_fidelity import Aws, Run, _pipe

# Prints what it saw: an SQS batch (each record's body and receive count) or an async event.
APP = """
import json
def handler(event, context):
    if isinstance(event, dict) and "Records" in event:
        for r in event["Records"]:
            print("seen", json.loads(r["body"])["n"], r["attributes"]["ApproximateReceiveCount"])
        return {"batchItemFailures": []}
    print("async", json.dumps(event))
    return {"ok": True}
"""


@pytest.fixture(scope="module")
def aws() -> Iterator[Aws]:
    """Clock x60: one logical minute per real second."""
    with Emulator(clock_scale=60) as emulator:
        yield Aws(emulator)


def _throttled_function(aws: Aws) -> str:
    name = aws.function(APP)
    aws.client("lambda").put_function_concurrency(FunctionName=name, ReservedConcurrentExecutions=0)
    return name


def _lines(aws: Aws, function: str, prefix: str) -> list[str]:
    logs = aws.client("logs")
    try:
        events = logs.filter_log_events(logGroupName=f"/aws/lambda/{function}")["events"]
    except logs.exceptions.ResourceNotFoundException:
        return []
    return [e["message"].strip() for e in events if e["message"].startswith(prefix)]


def _once(condition: Callable[[], bool], action: Callable[[], None]) -> Callable[[], bool]:
    """True once ``action`` has run; it runs the first time ``condition`` holds."""
    done: list[bool] = []

    def check() -> bool:
        if not done and condition():
            action()
            done.append(True)
        return bool(done)

    return check


def _queue_with_dlq(aws: Aws, visibility: int, max_receives: int) -> tuple[str, str, str]:
    dlq_url, dlq_arn = aws.queue("thr-dlq")
    redrive = json.dumps({"deadLetterTargetArn": dlq_arn, "maxReceiveCount": str(max_receives)})
    url, arn = aws.queue("thr", VisibilityTimeout=str(visibility), RedrivePolicy=redrive)
    return url, arn, dlq_url


def test_a_mapping_on_a_throttled_function_receives_and_the_batches_drift_to_the_dlq(
    aws: Aws, tmp_path: Path
) -> None:
    url, arn, dlq = _queue_with_dlq(aws, visibility=30, max_receives=2)
    function = _throttled_function(aws)
    aws.client("lambda").create_event_source_mapping(EventSourceArn=arn, FunctionName=function, BatchSize=10)
    sqs = aws.client("sqs")
    for n in range(3):
        sqs.send_message(QueueUrl=url, MessageBody=json.dumps({"n": n}))
    run = Run(aws, tmp_path)
    assert run.until(lambda: aws.depth(dlq) == 3 and aws.depth(url) == 0, deadline=30)
    assert _lines(aws, function, "seen") == []  # never ran
    assert run.of("batch") == []
    assert len(run.of("throttled")) >= 2  # received at least twice before maxReceiveCount moved them
    assert run.of("throttled-returned")
    assert sorted(json.loads(m["Body"])["n"] for m in aws.receive_all(dlq, expect=3)) == [0, 1, 2]
    assert not run.runtime.errors


def test_a_throttled_batch_runs_once_the_reserved_concurrency_is_raised_within_its_visibility_timeout(
    aws: Aws, tmp_path: Path
) -> None:
    url, arn, dlq = _queue_with_dlq(aws, visibility=600, max_receives=5)
    function = _throttled_function(aws)
    lam = aws.client("lambda")
    lam.create_event_source_mapping(EventSourceArn=arn, FunctionName=function, BatchSize=10)
    sqs = aws.client("sqs")
    for n in range(2):
        sqs.send_message(QueueUrl=url, MessageBody=json.dumps({"n": n}))
    run = Run(aws, tmp_path)
    raised = _once(
        lambda: bool(run.of("throttled")), lambda: lam.delete_function_concurrency(FunctionName=function)
    )
    assert run.until(lambda: raised() and run.runtime.stats["messages_deleted"] == 2 and aws.depth(url) == 0)
    # Run on their first receive: Lambda retried the throttled batch, it did not wait for it to return.
    assert sorted(_lines(aws, function, "seen")) == ["seen 0 1", "seen 1 1"]
    assert aws.depth(dlq) == 0
    assert not run.runtime.errors


def _invoke_config(aws: Aws, function: str, max_age: int, **destinations: str) -> None:
    aws.client("lambda").put_function_event_invoke_config(
        FunctionName=function,
        MaximumRetryAttempts=0,
        MaximumEventAgeInSeconds=max_age,
        DestinationConfig={kind: {"Destination": arn} for kind, arn in destinations.items()},
    )


def test_a_throttled_async_event_is_retried_until_too_old_then_goes_to_on_failure(
    aws: Aws, tmp_path: Path
) -> None:
    function = _throttled_function(aws)
    failures, failures_arn = aws.queue("thr-failures")
    _invoke_config(aws, function, max_age=60, OnFailure=failures_arn)
    # The runtime first: from then on logical time waits for it to take each due event. Started
    # after the invoke, its start-up (real time, a second at x60 is a logical minute) could age the
    # event past its 60 s before its first attempt on a loaded machine.
    run = Run(aws, tmp_path)
    run.runtime.start()
    answer = aws.client("lambda").invoke(FunctionName=function, InvocationType="Event", Payload=b'{"n": 1}')
    assert answer["StatusCode"] == 202  # accepted: Invoke itself is not throttled for async events
    assert run.until(lambda: aws.depth(failures) == 1, deadline=30)
    (message,) = aws.receive_all(failures, expect=1)
    record = json.loads(message["Body"])
    assert record["requestContext"]["condition"] == "EventAgeExceeded"
    assert record["requestContext"]["approximateInvokeCount"] == 0  # throttles are not attempts
    assert record["requestPayload"] == {"n": 1}
    delays = [t["delay"] for t in run.of("async-throttled")]
    assert len(delays) >= 3
    assert delays[:3] == [1, 2, 4]  # exponential from 1 s (logical)
    assert _lines(aws, function, "async") == []
    assert not run.runtime.errors


def test_a_throttled_async_event_runs_once_unthrottled_and_counts_one_attempt(
    aws: Aws, tmp_path: Path
) -> None:
    function = _throttled_function(aws)
    lam = aws.client("lambda")
    successes, successes_arn = aws.queue("thr-successes")
    _invoke_config(aws, function, max_age=3600, OnSuccess=successes_arn)
    lam.invoke(FunctionName=function, InvocationType="Event", Payload=b'{"n": 2}')
    run = Run(aws, tmp_path)
    raised = _once(
        lambda: bool(run.of("async-throttled")),
        lambda: lam.delete_function_concurrency(FunctionName=function),
    )
    assert run.until(lambda: raised() and aws.depth(successes) == 1, deadline=30)
    (message,) = aws.receive_all(successes, expect=1)
    record = json.loads(message["Body"])
    assert record["requestContext"]["condition"] == "Success"
    assert record["requestContext"]["approximateInvokeCount"] == 1
    assert _lines(aws, function, "async") == ['async {"n": 2}']
    assert not run.runtime.errors


# Logs each async invocation's start and end (real seconds).
SPAN = """
import time
def handler(event, context):
    start = time.time()
    time.sleep(0.3)
    print("span", event["n"], start, time.time())
    return {"ok": True}
"""


def test_async_events_past_the_reserve_are_throttled_and_run_one_at_a_time(aws: Aws, tmp_path: Path) -> None:
    function = aws.function(SPAN)
    lam = aws.client("lambda")
    lam.put_function_concurrency(FunctionName=function, ReservedConcurrentExecutions=1)
    successes, successes_arn = aws.queue("thr-async-ok")
    _invoke_config(aws, function, max_age=3600, OnSuccess=successes_arn)
    for n in range(3):
        lam.invoke(FunctionName=function, InvocationType="Event", Payload=json.dumps({"n": n}).encode())
    run = Run(aws, tmp_path)
    assert run.until(lambda: aws.depth(successes) == 3, deadline=30)
    records = [json.loads(m["Body"]) for m in aws.receive_all(successes, expect=3)]
    assert sorted(r["requestPayload"]["n"] for r in records) == [0, 1, 2]
    assert {r["requestContext"]["approximateInvokeCount"] for r in records} == {1}  # throttles are no attempt
    assert run.of("async-throttled")  # the runner took them together: past the reserve, a 429
    spans = sorted(
        (float(a), float(b)) for _, _, a, b in (line.split() for line in _lines(aws, function, "span"))
    )
    assert len(spans) == 3
    assert all(one[1] <= two[0] for one, two in itertools.pairwise(spans))  # never two at once
    assert not run.runtime.errors


def test_a_throttled_pipe_enrichment_fails_the_batch_and_loses_nothing(aws: Aws, tmp_path: Path) -> None:
    name, source, sink = _pipe(aws)
    enrichment = aws.client("pipes").describe_pipe(Name=name)["Enrichment"]
    aws.client("lambda").put_function_concurrency(FunctionName=enrichment, ReservedConcurrentExecutions=0)
    aws.client("sqs").send_message(QueueUrl=source, MessageBody=json.dumps({"mode": "pass"}))
    run = Run(aws, tmp_path)

    def ours() -> list[dict[str, object]]:
        return [p for p in run.of("pipe") if p["pipe"] == name]

    assert run.until(lambda: len(ours()) >= 2, deadline=20)
    assert not any(p["ok"] for p in ours())
    assert "TooManyRequestsException" in str(ours()[0]["why"])
    assert aws.depth(source) == 1  # handed back to the queue, not lost
    assert aws.receive_all(sink, wait=1.0) == []


# One record per batch, 0.3 real s each.
SLOW = """
import json, time
def handler(event, context):
    for r in event["Records"]:
        print("seen", json.loads(r["body"])["n"], r["attributes"]["ApproximateReceiveCount"])
    time.sleep(0.3)
    return {"batchItemFailures": []}
"""


def _slow_consumer(aws: Aws, reserved: int, visibility: int, **mapping: object) -> tuple[str, str, str]:
    url, arn, dlq = _queue_with_dlq(aws, visibility=visibility, max_receives=2)
    function = aws.function(SLOW)
    lam = aws.client("lambda")
    lam.put_function_concurrency(FunctionName=function, ReservedConcurrentExecutions=reserved)
    lam.create_event_source_mapping(EventSourceArn=arn, FunctionName=function, BatchSize=1, **mapping)
    sqs = aws.client("sqs")
    for n in range(6):
        sqs.send_message(QueueUrl=url, MessageBody=json.dumps({"n": n}))
    return function, url, dlq


def _settled(aws: Aws, run: Run, url: str, dlq: str) -> Callable[[], bool]:
    return lambda: aws.depth(url) == 0 and run.runtime.stats["messages_deleted"] + aws.depth(dlq) >= 6


def test_pollers_past_the_reserved_concurrency_overpull_and_batches_come_back(
    aws: Aws, tmp_path: Path
) -> None:
    # Reserve 1, no MaximumConcurrency: the pollers take up to five batches at once (Lambda's start).
    # Of those waiting behind the one running, the last waits at least 0.6 s, beyond the 0.5 s visibility timeout.
    function, url, dlq = _slow_consumer(aws, reserved=1, visibility=30)  # 0.5 real s at x60
    run = Run(aws, tmp_path)
    assert run.until(_settled(aws, run, url, dlq), deadline=40)
    assert run.of("throttled")  # received with the reserve in use, as Lambda's pollers do
    assert run.of("throttled-returned")  # still throttled when its visibility timeout ran out
    dead = {json.loads(m["Body"])["n"] for m in aws.receive_all(dlq, expect=aws.depth(dlq))}
    seen = {int(line.split()[1]) for line in _lines(aws, function, "seen")}
    assert seen | dead == set(range(6))  # nothing lost: processed, or dead-lettered after 2 receives
    # A batch that got its slot just before its visibility timeout ran out may finish after the
    # message was received again: its delete is refused, as SQS refuses a stale receipt handle.
    assert all("ReceiptHandleIsInvalid" in error for error in run.runtime.errors), run.runtime.errors


def test_maximum_concurrency_within_the_reserve_throttles_nothing(aws: Aws, tmp_path: Path) -> None:
    function, url, dlq = _slow_consumer(
        aws, reserved=2, visibility=120, ScalingConfig={"MaximumConcurrency": 2}
    )
    run = Run(aws, tmp_path)
    assert run.until(_settled(aws, run, url, dlq), deadline=40)
    assert run.of("throttled") == []
    assert aws.depth(dlq) == 0
    assert {int(line.split()[1]) for line in _lines(aws, function, "seen")} == set(range(6))
    assert not run.runtime.errors
