"""Lambda's recursive loop detection on the emulator (local/aws_rules/recursion.py): a function that sends to
the queue that invokes it stays in one chain of requests (its SDK's X-Amzn-Trace-Id header, kept by
SQS as AWSTraceHeader, read back by the poller), and Lambda's default (Terminate) stops its 17th
invocation; the message stays in the queue until the redrive policy moves it to the DLQ."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest
from serverless_retry_tools.local.aws_rules.recursion import (
    DROPPED_METRIC,
    LAMBDA_NAMESPACE,
    MAX_CHAIN_INVOCATIONS,
)
from serverless_retry_tools.local.emulator.emulator import Emulator

from tests.integration.test_runtime import Aws, Run

pytestmark = pytest.mark.integration

# Re-sends its message to its own queue with the hop count raised, until the count reaches "last".
RESENDER = """
import json, os
import boto3
sqs = boto3.client("sqs")
def handler(event, context):
    for record in event["Records"]:
        body = json.loads(record["body"])
        print("hop", body["hop"], os.environ.get("_X_AMZN_TRACE_ID", ""))
        if body["hop"] < body["last"]:
            body["hop"] += 1
            sqs.send_message(QueueUrl=os.environ["QUEUE_URL"], MessageBody=json.dumps(body))
    return {"batchItemFailures": []}
"""


@pytest.fixture(scope="module")
def aws() -> Iterator[Aws]:
    """x30: a 30 s visibility timeout is one real second."""
    with Emulator(clock_scale=30) as emulator:
        yield Aws(emulator)


def _resender(aws: Aws, *, max_receive_count: int = 2) -> tuple[str, str, str]:
    """(function, queue URL, DLQ URL): the re-sender mapped to a queue with a DLQ."""
    dlq_url, dlq_arn = aws.queue("loop-dlq")
    redrive = json.dumps({"deadLetterTargetArn": dlq_arn, "maxReceiveCount": max_receive_count})
    url, arn = aws.queue("loop", VisibilityTimeout="30", RedrivePolicy=redrive)
    function = aws.function({"app.py": RESENDER}, env={"QUEUE_URL": url}, Timeout=5)
    aws.mapping(function, arn, BatchSize=1)
    return function, url, dlq_url


def _hops(aws: Aws, function: str) -> list[int]:
    return [int(line.split()[1]) for line in aws.logs(function) if line.startswith("hop ")]


def test_a_plain_function_resending_to_its_queue_is_stopped_at_awss_count(aws: Aws, tmp_path: Path) -> None:
    function, url, dlq_url = _resender(aws, max_receive_count=2)
    assert (
        aws.client("lambda").get_function_recursion_config(FunctionName=function)["RecursiveLoop"]
        == "Terminate"
    )
    aws.client("sqs").send_message(QueueUrl=url, MessageBody=json.dumps({"hop": 1, "last": 40}))
    run = Run(aws, tmp_path)
    started = time.monotonic()
    assert run.until(lambda: aws.depth(dlq_url) == 1 and aws.depth(url) == 0, deadline=50)
    assert time.monotonic() - started < 50
    # Sixteen invocations ran, each one hop further; the message the 16th sent was never run.
    assert sorted(_hops(aws, function)) == list(range(1, MAX_CHAIN_INVOCATIONS + 1))
    (dead,) = aws.receive_all(dlq_url)
    assert json.loads(dead["Body"])["hop"] == MAX_CHAIN_INVOCATIONS + 1
    assert "AWSTraceHeader" in dead["Attributes"]  # the chain it belongs to, kept by SQS
    # Stopped at each of its two receives, then moved to the DLQ by the redrive policy.
    assert run.runtime.stats["recursive_invocations_dropped"] == 2
    stopped = run.of("recursion-stopped")
    assert len(stopped) == 2
    assert stopped[0]["function"] == function
    assert stopped[0]["error"].startswith("RecursiveInvocationException: Lambda has detected your function")
    now = run.runtime.clock.now()
    datapoints = aws.client("cloudwatch").get_metric_statistics(
        Namespace=LAMBDA_NAMESPACE,
        MetricName=DROPPED_METRIC,
        Dimensions=[{"Name": "FunctionName", "Value": function}],
        StartTime=now - timedelta(hours=1),
        EndTime=now + timedelta(minutes=5),
        Period=60,
        Statistics=["Sum"],
    )["Datapoints"]
    assert sum(d["Sum"] for d in datapoints) == 2


def test_the_same_function_set_to_allow_runs_its_chain_to_the_end(aws: Aws, tmp_path: Path) -> None:
    function, url, dlq_url = _resender(aws)
    lam = aws.client("lambda")
    lam.put_function_recursion_config(FunctionName=function, RecursiveLoop="Allow")
    assert lam.get_function_recursion_config(FunctionName=function)["RecursiveLoop"] == "Allow"
    aws.client("sqs").send_message(QueueUrl=url, MessageBody=json.dumps({"hop": 1, "last": 40}))
    run = Run(aws, tmp_path)
    assert run.until(
        lambda: sorted(_hops(aws, function)) == list(range(1, 41)) and aws.depth(url) == 0, deadline=50
    )
    assert aws.depth(dlq_url) == 0
    assert run.runtime.stats["recursive_invocations_dropped"] == 0


def test_a_message_sent_from_outside_lambda_starts_a_new_chain(aws: Aws, tmp_path: Path) -> None:
    """A producer outside Lambda (here the test; on AWS also the Scheduler, EventBridge, Pipes) sends
    no trace header of a chain: each of its messages starts one, however many there are."""
    function, url, dlq_url = _resender(aws)
    sqs = aws.client("sqs")
    for n in range(20):  # bounded: 20 sends, each one hop long
        sqs.send_message(QueueUrl=url, MessageBody=json.dumps({"hop": 1, "last": 1, "n": n}))
    run = Run(aws, tmp_path)
    assert run.until(lambda: len(_hops(aws, function)) == 20 and aws.depth(url) == 0, deadline=50)
    assert aws.depth(dlq_url) == 0
    assert run.runtime.stats["recursive_invocations_dropped"] == 0
    lines = [line for line in aws.logs(function) if line.startswith("hop ")]
    roots = {line.split()[2].split(";")[0] for line in lines}
    assert len(roots) == 20  # twenty chains, one invocation each


def test_unknown_functions_and_values_are_refused_as_lambda_does(aws: Aws) -> None:
    lam = aws.client("lambda")
    with pytest.raises(lam.exceptions.ResourceNotFoundException):
        lam.get_function_recursion_config(FunctionName="no-such-function")
    function = aws.function({"app.py": RESENDER})
    with pytest.raises(lam.exceptions.InvalidParameterValueException):
        lam.put_function_recursion_config(FunctionName=function, RecursiveLoop="allow")
