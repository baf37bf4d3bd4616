"""Each moto compatibility patch: raw moto still has the gap, and the patched emulator behaves like AWS.

The "raw" half is the alarm: when a moto upgrade fixes a gap, that test fails, and the patch (and
the test) can be deleted. Both halves talk to a real emulator child through boto3, the path
Terraform and the runtime take.
"""

from __future__ import annotations

import contextlib
import io
import json
import time
import urllib.request
import zipfile
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from botocore.config import Config
from botocore.exceptions import ClientError
from serverless_retry_tools.local.emulator.emulator import Emulator
from serverless_retry_tools.local.emulator.moto_patches import PATCHES

NO_RETRIES = Config(retries={"max_attempts": 1, "mode": "standard"})
TLS_ONLY = {
    "Version": "2012-10-17",
    "Statement": [
        {
            "Sid": "tls",
            "Effect": "Deny",
            "Principal": "*",
            "Action": "sqs:*",
            "Resource": "*",
            "Condition": {"Bool": {"aws:SecureTransport": "false"}},
        }
    ],
}


class Aws:
    """boto3 clients aimed at one emulator, with unique names per test."""

    def __init__(self, emulator: Emulator) -> None:
        self.emulator = emulator
        self._n = 0

    def client(self, service: str) -> Any:
        return boto3.client(service, config=NO_RETRIES, **self.emulator.client_kwargs())  # type: ignore[call-overload]

    def name(self, prefix: str) -> str:
        self._n += 1
        return f"{prefix}-{self._n}"

    def queue(self, prefix: str, **attributes: str) -> tuple[str, str]:
        sqs = self.client("sqs")
        url = sqs.create_queue(QueueName=self.name(prefix), Attributes=attributes)["QueueUrl"]
        arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
        return url, arn

    def function(self, **extra: Any) -> str:
        role = self.client("iam").create_role(
            RoleName=self.name("role"), AssumeRolePolicyDocument=json.dumps({"Version": "2012-10-17"})
        )["Role"]["Arn"]
        name = self.name("fn")
        self.client("lambda").create_function(
            FunctionName=name,
            Role=role,
            Handler="app.handler",
            Runtime="python3.12",
            Code={"ZipFile": ZIP},
            **extra,
        )
        return name


def _zip() -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr("app.py", "def handler(event, context):\n    return None\n")
    return buf.getvalue()


ZIP = _zip()


@pytest.fixture(scope="module")
def raw() -> Iterator[Aws]:
    with Emulator(patches=()) as emulator:
        assert emulator.applied_patches == []
        yield Aws(emulator)


@pytest.fixture(scope="module")
def patched() -> Iterator[Aws]:
    with Emulator() as emulator:
        assert sorted(emulator.applied_patches) == sorted(PATCHES)
        yield Aws(emulator)


# --- sqs_drops_redrive_allow_policy ------------------------------------------------------------

ALLOW = json.dumps(
    {"redrivePermission": "byQueue", "sourceQueueArns": ["arn:aws:sqs:us-east-1:123456789012:src"]}
)


def test_raw_moto_drops_redrive_allow_policy(raw: Aws) -> None:
    url, _ = raw.queue("dlq", RedriveAllowPolicy=ALLOW)
    sqs = raw.client("sqs")
    assert (
        "RedriveAllowPolicy"
        not in sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["All"])["Attributes"]
    )
    with pytest.raises(ClientError, match="InvalidAttributeName"):
        sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["RedriveAllowPolicy"])


def test_patched_redrive_allow_policy_round_trips(patched: Aws) -> None:
    url, _ = patched.queue("dlq", RedriveAllowPolicy=ALLOW)
    plain, _ = patched.queue("plain")
    sqs = patched.client("sqs")
    got = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["RedriveAllowPolicy"])["Attributes"]
    assert json.loads(got["RedriveAllowPolicy"]) == json.loads(ALLOW)
    assert (
        "RedriveAllowPolicy"
        not in sqs.get_queue_attributes(QueueUrl=plain, AttributeNames=["All"])["Attributes"]
    )


# --- sqs_redrive_policy_json_whitespace -----------------------------------------------------------


def _redrive(aws: Aws) -> tuple[str, str]:
    _, dlq_arn = aws.queue("dlq")
    compact = json.dumps({"deadLetterTargetArn": dlq_arn, "maxReceiveCount": 5}, separators=(",", ":"))
    url, _ = aws.queue("src", RedrivePolicy=compact)
    got = aws.client("sqs").get_queue_attributes(QueueUrl=url, AttributeNames=["RedrivePolicy"])
    return compact, got["Attributes"]["RedrivePolicy"]


def test_raw_moto_reformats_redrive_policy(raw: Aws) -> None:
    sent, got = _redrive(raw)
    assert got != sent
    assert json.loads(got) == json.loads(sent)


def test_patched_redrive_policy_comes_back_compact_as_on_aws(patched: Aws) -> None:
    sent, got = _redrive(patched)
    assert got == sent


# --- sqs_set_attributes_wipes_policy ------------------------------------------------------------------


def _policy_after_other_update(aws: Aws) -> dict[str, str]:
    url, _ = aws.queue("pol", Policy=json.dumps(TLS_ONLY))
    sqs = aws.client("sqs")
    sqs.set_queue_attributes(QueueUrl=url, Attributes={"VisibilityTimeout": "60"})
    attrs: dict[str, str] = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["All"])["Attributes"]
    attrs["_url"] = url
    return attrs


def test_raw_moto_wipes_policy_on_unrelated_set_queue_attributes(raw: Aws) -> None:
    assert "Policy" not in _policy_after_other_update(raw)


def test_patched_set_queue_attributes_keeps_policy_unless_named(patched: Aws) -> None:
    attrs = _policy_after_other_update(patched)
    assert attrs["VisibilityTimeout"] == "60"
    assert json.loads(attrs["Policy"]) == TLS_ONLY
    sqs = patched.client("sqs")
    sqs.set_queue_attributes(QueueUrl=attrs["_url"], Attributes={"Policy": ""})
    assert (
        "Policy" not in sqs.get_queue_attributes(QueueUrl=attrs["_url"], AttributeNames=["All"])["Attributes"]
    )


# --- sqs_message_move_task_not_implemented ---------------------------------------------------------


def _dead_lettered(aws: Aws, count: int) -> tuple[str, str, str]:
    dlq_url, dlq_arn = aws.queue("dlq")
    redrive = json.dumps({"deadLetterTargetArn": dlq_arn, "maxReceiveCount": 1})
    src_url, _ = aws.queue("src", RedrivePolicy=redrive)
    sqs = aws.client("sqs")
    for i in range(count):
        sqs.send_message(QueueUrl=src_url, MessageBody=f"m{i}")
    # First receives use up the single allowed receive; the next receive moves them to the DLQ.
    for _ in range(3):
        sqs.receive_message(QueueUrl=src_url, MaxNumberOfMessages=10, VisibilityTimeout=0)
    return src_url, dlq_url, dlq_arn


def test_raw_moto_has_no_message_move_task(raw: Aws) -> None:
    _, _, dlq_arn = _dead_lettered(raw, 1)
    with pytest.raises(ClientError):
        raw.client("sqs").start_message_move_task(SourceArn=dlq_arn)
    with pytest.raises(ClientError):
        raw.client("sqs").list_message_move_tasks(SourceArn=dlq_arn)


def _tasks(sqs: Any, arn: str, limit: int = 10) -> list[dict[str, Any]]:
    return list(sqs.list_message_move_tasks(SourceArn=arn, MaxResults=limit)["Results"])


def _until_ended(sqs: Any, arn: str, deadline: float = 20.0) -> dict[str, Any]:
    end = time.monotonic() + deadline
    while time.monotonic() < end:
        (task,) = _tasks(sqs, arn, 1)
        if task["Status"] not in ("RUNNING", "CANCELLING"):
            return task
        time.sleep(0.05)
    raise AssertionError(f"the move task of {arn} still runs after {deadline} s")


def test_patched_message_move_task_runs_in_the_background_at_its_rate(patched: Aws) -> None:
    src_url, dlq_url, dlq_arn = _dead_lettered(patched, 6)
    sqs = patched.client("sqs")
    in_dlq = sqs.get_queue_attributes(QueueUrl=dlq_url, AttributeNames=["ApproximateNumberOfMessages"])
    assert in_dlq["Attributes"]["ApproximateNumberOfMessages"] == "6"
    started = time.monotonic()
    handle = sqs.start_message_move_task(SourceArn=dlq_arn, MaxNumberOfMessagesPerSecond=5)["TaskHandle"]
    (running,) = _tasks(sqs, dlq_arn)
    # Running: its handle is listed (for CancelMessageMoveTask), and not everything has moved yet.
    assert (running["Status"], running["TaskHandle"]) == ("RUNNING", handle)
    assert running["ApproximateNumberOfMessagesToMove"] == 6
    assert running["MaxNumberOfMessagesPerSecond"] == 5
    assert running["ApproximateNumberOfMessagesMoved"] < 6
    with pytest.raises(ClientError, match="already a task running"):
        sqs.start_message_move_task(SourceArn=dlq_arn)
    done = _until_ended(sqs, dlq_arn)
    # 6 messages at 5 a second: the last one moves 1 s after the first (the clock runs x1 here).
    assert time.monotonic() - started >= 0.9
    assert done["Status"] == "COMPLETED"
    assert done["ApproximateNumberOfMessagesMoved"] == 6
    assert "TaskHandle" not in done  # ListMessageMoveTasks gives a handle for running tasks only
    bodies = []
    for _ in range(5):
        bodies += [
            m["Body"] for m in sqs.receive_message(QueueUrl=src_url, MaxNumberOfMessages=10)["Messages"]
        ]
        if len(bodies) == 6:
            break
    assert sorted(bodies) == [f"m{i}" for i in range(6)]  # each back to its DeadLetterQueueSourceArn
    with pytest.raises(ClientError, match="Dead Letter Queue"):
        sqs.start_message_move_task(
            SourceArn=sqs.get_queue_attributes(QueueUrl=src_url, AttributeNames=["QueueArn"])["Attributes"][
                "QueueArn"
            ]
        )


def test_message_move_task_limits_and_cancel(patched: Aws) -> None:
    _, dlq_url, dlq_arn = _dead_lettered(patched, 5)
    sqs = patched.client("sqs")
    for rate in (0, 501):
        with pytest.raises(ClientError, match="MaxNumberOfMessagesPerSecond"):
            sqs.start_message_move_task(SourceArn=dlq_arn, MaxNumberOfMessagesPerSecond=rate)
    with pytest.raises(ClientError, match="MaxResults"):
        sqs.list_message_move_tasks(SourceArn=dlq_arn, MaxResults=11)
    fifo = sqs.create_queue(QueueName=patched.name("fifo") + ".fifo", Attributes={"FifoQueue": "true"})
    fifo_arn = sqs.get_queue_attributes(QueueUrl=fifo["QueueUrl"], AttributeNames=["QueueArn"])["Attributes"][
        "QueueArn"
    ]
    with pytest.raises(ClientError, match="same type"):
        sqs.start_message_move_task(SourceArn=dlq_arn, DestinationArn=fifo_arn)
    handle = sqs.start_message_move_task(SourceArn=dlq_arn, MaxNumberOfMessagesPerSecond=1)["TaskHandle"]
    time.sleep(0.3)  # the first message moves at once, the next after a second
    sqs.cancel_message_move_task(TaskHandle=handle)
    cancelled = _until_ended(sqs, dlq_arn)
    assert cancelled["Status"] == "CANCELLED"
    assert 1 <= cancelled["ApproximateNumberOfMessagesMoved"] < 5
    left = sqs.get_queue_attributes(QueueUrl=dlq_url, AttributeNames=["ApproximateNumberOfMessages"])
    assert (
        int(left["Attributes"]["ApproximateNumberOfMessages"])
        == 5 - cancelled["ApproximateNumberOfMessagesMoved"]
    )
    with pytest.raises(ClientError, match="not running"):
        sqs.cancel_message_move_task(TaskHandle=handle)


def test_a_message_with_no_source_fails_a_move_task_without_a_destination(patched: Aws) -> None:
    _, dlq_url, dlq_arn = _dead_lettered(patched, 0)
    sqs = patched.client("sqs")
    sqs.send_message(QueueUrl=dlq_url, MessageBody="put here by hand")  # no redrive policy moved it
    sqs.start_message_move_task(SourceArn=dlq_arn)
    failed = _until_ended(sqs, dlq_arn)
    assert failed["Status"] == "FAILED"
    assert "DeadLetterQueueSourceArn" in failed["FailureReason"]
    left = sqs.get_queue_attributes(QueueUrl=dlq_url, AttributeNames=["ApproximateNumberOfMessages"])
    assert left["Attributes"]["ApproximateNumberOfMessages"] == "1"  # nothing lost


def test_move_tasks_run_on_the_logical_clock(tmp_path: Any) -> None:
    """At clock x100, a move task at 5 messages per (logical) second moves 20 messages in 0.04 real s
    per message: the same rate in the emulator's time as at x1."""
    with Emulator(clock_scale=100, log_path=tmp_path / "x100.log") as emulator:
        aws = Aws(emulator)
        _, _, dlq_arn = _dead_lettered(aws, 20)
        sqs = aws.client("sqs")
        started = time.monotonic()
        sqs.start_message_move_task(SourceArn=dlq_arn, MaxNumberOfMessagesPerSecond=5)
        done = _until_ended(sqs, dlq_arn, deadline=10)
        real = time.monotonic() - started
        assert done["Status"] == "COMPLETED"
        assert done["ApproximateNumberOfMessagesMoved"] == 20
        assert real < 3.0  # 3.8 logical seconds (19 gaps at 5/s) are 0.038 real seconds at x100


# --- lambda_ignores_logging_config ----------------------------------------------------------------------

LOGGING = {"LogFormat": "JSON", "ApplicationLogLevel": "INFO", "SystemLogLevel": "WARN"}


def test_raw_moto_drops_logging_config(raw: Aws) -> None:
    name = raw.function(LoggingConfig=LOGGING)
    assert "LoggingConfig" not in raw.client("lambda").get_function_configuration(FunctionName=name)


def test_patched_logging_config_round_trips_with_aws_defaults(patched: Aws) -> None:
    lam = patched.client("lambda")
    name = patched.function(LoggingConfig=LOGGING)
    assert lam.get_function_configuration(FunctionName=name)["LoggingConfig"] == {
        **LOGGING,
        "LogGroup": f"/aws/lambda/{name}",
    }
    plain = patched.function()
    assert lam.get_function(FunctionName=plain)["Configuration"]["LoggingConfig"] == {
        "LogFormat": "Text",
        "LogGroup": f"/aws/lambda/{plain}",
    }
    lam.update_function_configuration(FunctionName=plain, LoggingConfig={"LogFormat": "JSON"})
    assert (
        lam.get_function_configuration(FunctionName=plain)["LoggingConfig"]["ApplicationLogLevel"] == "INFO"
    )


# --- lambda_event_source_mapping_invokes_in_docker ------------------------------------------------------


def _receive_count_after_send(aws: Aws) -> str:
    name = aws.function()
    url, arn = aws.queue("esm")
    aws.client("lambda").create_event_source_mapping(EventSourceArn=arn, FunctionName=name, BatchSize=5)
    sqs = aws.client("sqs")
    sqs.send_message(QueueUrl=url, MessageBody="hello")
    (message,) = sqs.receive_message(QueueUrl=url, AttributeNames=["All"])["Messages"]
    return str(message["Attributes"]["ApproximateReceiveCount"])


def test_raw_moto_consumes_a_receive_when_an_esm_exists(raw: Aws) -> None:
    # moto received the message itself (and failed to run it in Docker) before we could.
    assert _receive_count_after_send(raw) == "2"


def test_patched_esm_leaves_the_queue_to_the_runtime(patched: Aws) -> None:
    assert _receive_count_after_send(patched) == "1"
    mappings = patched.client("lambda").list_event_source_mappings()["EventSourceMappings"]
    assert mappings, "the mapping itself must still exist for the runtime to read"


# --- lambda_code_location_unreachable -----------------------------------------------------------------------


def test_raw_moto_code_location_is_not_served_locally(raw: Aws) -> None:
    name = raw.function()
    code = raw.client("lambda").get_function(FunctionName=name).get("Code", {})
    assert not str(code.get("Location", "")).startswith(raw.emulator.url)


def test_patched_code_location_serves_the_deployed_zip(patched: Aws) -> None:
    name = patched.function()
    location = patched.client("lambda").get_function(FunctionName=name)["Code"]["Location"]
    assert location.startswith(patched.emulator.url)
    with urllib.request.urlopen(location, timeout=10) as response:
        assert response.read() == ZIP


# --- lambda_layer_content_unreachable -------------------------------------------------------------


def _layer_location(aws: Aws) -> str:
    arn = aws.client("lambda").publish_layer_version(LayerName=aws.name("layer"), Content={"ZipFile": ZIP})[
        "LayerVersionArn"
    ]
    name, version = arn.split(":")[-2:]
    content = aws.client("lambda").get_layer_version(LayerName=name, VersionNumber=int(version))["Content"]
    return str(content["Location"])


def test_raw_moto_layer_content_location_is_not_served_locally(raw: Aws) -> None:
    assert not _layer_location(raw).startswith(raw.emulator.url)


def test_patched_layer_content_location_serves_the_published_zip(patched: Aws) -> None:
    location = _layer_location(patched)
    assert location.startswith(patched.emulator.url)
    with urllib.request.urlopen(location, timeout=10) as response:
        assert response.read() == ZIP


# --- lambda_unknown_layer_version_is_not_found ---------------------------------------------------


MISSING_LAYER = "arn:aws:lambda:us-east-1:123456789012:layer:never-published:3"  # the emulator's account


def _function_with_missing_layer(aws: Aws) -> ClientError:
    with pytest.raises(ClientError) as caught:
        aws.function(Layers=[MISSING_LAYER])
    return caught.value


def test_raw_moto_unknown_layer_version_is_resource_not_found(raw: Aws) -> None:
    error = _function_with_missing_layer(raw).response
    assert (error["ResponseMetadata"]["HTTPStatusCode"], error["Error"]["Code"]) == (
        404,
        "ResourceNotFoundException",
    )


def test_patched_unknown_layer_version_is_an_invalid_parameter(patched: Aws) -> None:
    error = _function_with_missing_layer(patched).response
    assert error["ResponseMetadata"]["HTTPStatusCode"] == 400
    assert error["Error"]["Code"] == "InvalidParameterValueException"
    assert (
        error["Error"]["Message"] == f"Layer version {error['Error']['Message'].split()[2]} does not exist."
    )
    assert ":layer:never-published:3 does not exist." in error["Error"]["Message"]


# --- lambda_hides_reserved_concurrency_zero ---------------------------------------------------------------


def test_raw_moto_get_function_hides_reserved_concurrency_zero(raw: Aws) -> None:
    name = raw.function()
    lam = raw.client("lambda")
    lam.put_function_concurrency(FunctionName=name, ReservedConcurrentExecutions=0)
    assert lam.get_function_concurrency(FunctionName=name)["ReservedConcurrentExecutions"] == 0
    assert "Concurrency" not in lam.get_function(FunctionName=name)


def test_patched_get_function_shows_reserved_concurrency(patched: Aws) -> None:
    name = patched.function()
    lam = patched.client("lambda")
    assert "Concurrency" not in lam.get_function(FunctionName=name)  # none reserved: none shown, as AWS
    for reserved in (0, 3):
        lam.put_function_concurrency(FunctionName=name, ReservedConcurrentExecutions=reserved)
        shown = lam.get_function(FunctionName=name)["Concurrency"]
        assert shown == {"ReservedConcurrentExecutions": reserved}
    lam.delete_function_concurrency(FunctionName=name)
    assert "Concurrency" not in lam.get_function(FunctionName=name)


# --- events_rule_sns_target_not_implemented ---------------------------------------------------------------


def _rule_to_topic(aws: Aws) -> tuple[Any, str]:
    sns, events, sqs = aws.client("sns"), aws.client("events"), aws.client("sqs")
    topic = sns.create_topic(Name=aws.name("topic"))["TopicArn"]
    url, arn = aws.queue("sub")
    sns.subscribe(TopicArn=topic, Protocol="sqs", Endpoint=arn, Attributes={"RawMessageDelivery": "true"})
    rule = aws.name("rule")
    events.put_rule(Name=rule, EventPattern=json.dumps({"source": ["patch.test"]}))
    events.put_targets(Rule=rule, Targets=[{"Id": "topic", "Arn": topic}])
    return sqs, url


def test_raw_moto_put_events_fails_with_an_sns_target(raw: Aws) -> None:
    _rule_to_topic(raw)
    with pytest.raises(ClientError, match="500"):
        raw.client("events").put_events(Entries=[{"Source": "patch.test", "DetailType": "t", "Detail": "{}"}])


def test_patched_put_events_publishes_to_the_sns_target(patched: Aws) -> None:
    sqs, url = _rule_to_topic(patched)
    result = patched.client("events").put_events(
        Entries=[{"Source": "patch.test", "DetailType": "t", "Detail": json.dumps({"order": 7})}]
    )
    assert result["FailedEntryCount"] == 0
    deadline = time.monotonic() + 5
    messages: list[dict[str, Any]] = []
    while not messages and time.monotonic() < deadline:
        messages = sqs.receive_message(QueueUrl=url, WaitTimeSeconds=1).get("Messages", [])
    (message,) = messages
    event = json.loads(message["Body"])
    assert event["source"] == "patch.test"
    assert event["detail"] == {"order": 7}


# --- sqs_message_limits_unchecked -------------------------------------------------------------------


def _oversized_sends(aws: Aws) -> dict[str, Exception | None]:
    """Each send SQS refuses, with the error it got (None: accepted)."""
    sqs = aws.client("sqs")
    small, _ = aws.queue("small", MaximumMessageSize="1024")
    big, _ = aws.queue("big")
    attempts: dict[str, Any] = {
        # 600 characters, 1200 UTF-8 bytes
        "multibyte body": lambda: sqs.send_message(QueueUrl=small, MessageBody="é" * 600),
        # 1000 bytes of body + 9 + 6 + 100 bytes of attribute
        "attributes count": lambda: sqs.send_message(
            QueueUrl=small,
            MessageBody="x" * 1000,
            MessageAttributes={"attribute": {"DataType": "String", "StringValue": "v" * 100}},
        ),
        "11 attributes": lambda: sqs.send_message(
            QueueUrl=big,
            MessageBody="x",
            MessageAttributes={f"a{n}": {"DataType": "String", "StringValue": "v"} for n in range(11)},
        ),
        # two 600 KB (300k-character) messages: 1.2 MB in one batch
        "batch total": lambda: sqs.send_message_batch(
            QueueUrl=big, Entries=[{"Id": str(n), "MessageBody": "é" * 300_000} for n in range(2)]
        ),
    }
    outcome: dict[str, Exception | None] = {}
    for name, attempt in attempts.items():
        try:
            attempt()
            outcome[name] = None
        except ClientError as exc:
            outcome[name] = exc
    return outcome


def test_raw_moto_counts_characters_and_ignores_attributes(raw: Aws) -> None:
    assert _oversized_sends(raw) == dict.fromkeys(
        ("multibyte body", "attributes count", "11 attributes", "batch total")
    )


def test_patched_sqs_counts_utf8_bytes_and_attributes(patched: Aws) -> None:
    outcome = _oversized_sends(patched)
    codes = {k: v.response["Error"]["Code"].rsplit(".", 1)[-1] if v else None for k, v in outcome.items()}
    assert codes == {
        "multibyte body": "InvalidParameterValue",
        "attributes count": "InvalidParameterValue",
        "11 attributes": "InvalidParameterValue",
        "batch total": "BatchRequestTooLong",
    }
    assert "Message must be shorter than 1024 bytes" in str(outcome["multibyte body"])
    assert "exceeds the allowed maximum [10]" in str(outcome["11 attributes"])


# --- sqs_fifo_redelivers_group_last_first ------------------------------------------------------------


def _fifo_order_after_visibility_timeout(aws: Aws) -> list[str]:
    sqs = aws.client("sqs")
    name = aws.name("group") + ".fifo"
    url = sqs.create_queue(
        QueueName=name, Attributes={"FifoQueue": "true", "ContentBasedDeduplication": "true"}
    )["QueueUrl"]
    for n in range(3):
        sqs.send_message(QueueUrl=url, MessageBody=f"m{n}", MessageGroupId="g")
    first = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, VisibilityTimeout=1)["Messages"]
    assert [m["Body"] for m in first] == ["m0", "m1", "m2"]
    time.sleep(1.5)  # the batch is handed back (not deleted): its visibility timeout runs out
    again = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, VisibilityTimeout=30)["Messages"]
    return [m["Body"] for m in again]


def test_raw_moto_redelivers_a_fifo_group_last_first(raw: Aws) -> None:
    assert _fifo_order_after_visibility_timeout(raw)[0] == "m2"


def test_patched_fifo_group_comes_back_in_order(patched: Aws) -> None:
    assert _fifo_order_after_visibility_timeout(patched) == ["m0", "m1", "m2"]


# --- sqs_dead_letter_source_arn_missing --------------------------------------------------------------


def _dead_letter_sources(aws: Aws) -> tuple[str, dict[str, str | None]]:
    """(the source's ARN, body -> the DeadLetterQueueSourceArn each DLQ message comes back with)."""
    src_url, dlq_url, _ = _dead_lettered(aws, 2)
    sqs = aws.client("sqs")
    sqs.send_message(QueueUrl=dlq_url, MessageBody="sent to the DLQ directly")
    src_arn = sqs.get_queue_attributes(QueueUrl=src_url, AttributeNames=["QueueArn"])["Attributes"][
        "QueueArn"
    ]
    found: dict[str, str | None] = {}
    for names in (["All"], ["DeadLetterQueueSourceArn"]):
        messages = sqs.receive_message(
            QueueUrl=dlq_url, MaxNumberOfMessages=10, VisibilityTimeout=0, MessageSystemAttributeNames=names
        )["Messages"]
        for m in messages:
            found[m["Body"] + (" (all)" if names == ["All"] else "")] = m.get("Attributes", {}).get(
                "DeadLetterQueueSourceArn"
            )
    return src_arn, found


def test_raw_moto_dead_letters_without_the_source_arn(raw: Aws) -> None:
    _, found = _dead_letter_sources(raw)
    assert set(found.values()) == {None}


def test_patched_dead_letter_carries_its_source_queue_arn(patched: Aws) -> None:
    src_arn, found = _dead_letter_sources(patched)
    assert found == {
        "m0 (all)": src_arn,
        "m1 (all)": src_arn,
        "sent to the DLQ directly (all)": None,
        "m0": src_arn,
        "m1": src_arn,
        "sent to the DLQ directly": None,
    }


def test_a_fifo_dead_letter_takes_its_message_id_as_deduplication_id(patched: Aws) -> None:
    """SQS: "When a message is moved from a FIFO queue to a FIFO DLQ, the original message's
    deduplication ID will be replaced with the original message's ID"."""
    sqs = patched.client("sqs")
    fifo = {"FifoQueue": "true"}
    dlq = sqs.create_queue(QueueName=patched.name("dlq") + ".fifo", Attributes=fifo)["QueueUrl"]
    dlq_arn = sqs.get_queue_attributes(QueueUrl=dlq, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    redrive = json.dumps({"deadLetterTargetArn": dlq_arn, "maxReceiveCount": 1})
    src = sqs.create_queue(
        QueueName=patched.name("src") + ".fifo", Attributes={**fifo, "RedrivePolicy": redrive}
    )
    sent = sqs.send_message(
        QueueUrl=src["QueueUrl"], MessageBody="m", MessageGroupId="g", MessageDeduplicationId="d"
    )
    for _ in range(2):
        sqs.receive_message(QueueUrl=src["QueueUrl"], VisibilityTimeout=0)
    (moved,) = sqs.receive_message(QueueUrl=dlq, MessageSystemAttributeNames=["All"])["Messages"]
    assert moved["MessageId"] == sent["MessageId"]
    assert moved["Attributes"]["MessageDeduplicationId"] == sent["MessageId"]
    assert moved["Attributes"]["MessageGroupId"] == "g"
    assert moved["Attributes"]["DeadLetterQueueSourceArn"].endswith(".fifo")


# --- lambda_list_event_source_mappings_by_name_misses_arns ------------------------------------------------


def _listed_by_other_form(aws: Aws) -> tuple[int, int]:
    lam = aws.client("lambda")
    by_arn, by_name = aws.function(), aws.function()
    arn = lam.get_function(FunctionName=by_arn)["Configuration"]["FunctionArn"]
    name_arn = lam.get_function(FunctionName=by_name)["Configuration"]["FunctionArn"]
    lam.create_event_source_mapping(EventSourceArn=aws.queue("esm-a")[1], FunctionName=arn)
    lam.create_event_source_mapping(EventSourceArn=aws.queue("esm-n")[1], FunctionName=by_name)
    found_by_name = lam.list_event_source_mappings(FunctionName=by_arn)["EventSourceMappings"]
    found_by_arn = lam.list_event_source_mappings(FunctionName=name_arn)["EventSourceMappings"]
    return len(found_by_name), len(found_by_arn)


def test_raw_moto_lists_mappings_only_by_the_form_they_were_created_with(raw: Aws) -> None:
    assert _listed_by_other_form(raw) == (0, 0)


def test_patched_list_event_source_mappings_takes_a_name_or_an_arn(patched: Aws) -> None:
    assert _listed_by_other_form(patched) == (1, 1)


# --- lambda_event_source_mapping_skips_sqs_rules ----------------------------------------------------------


def _mapping_refusals(aws: Aws) -> dict[str, str | None]:
    lam = aws.client("lambda")
    slow = aws.function(Timeout=30)
    fast = aws.function(Timeout=3)
    fifo = aws.client("sqs").create_queue(
        QueueName=aws.name("esm") + ".fifo", Attributes={"FifoQueue": "true"}
    )["QueueUrl"]
    fifo_arn = aws.client("sqs").get_queue_attributes(QueueUrl=fifo, AttributeNames=["QueueArn"])[
        "Attributes"
    ]["QueueArn"]
    attempts: dict[str, dict[str, Any]] = {
        "visibility below function timeout": {
            "EventSourceArn": aws.queue("short", VisibilityTimeout="5")[1],
            "FunctionName": slow,
        },
        "batch above 10 without a window": {
            "EventSourceArn": aws.queue("wide")[1],
            "FunctionName": fast,
            "BatchSize": 20,
        },
        "window on a FIFO queue": {
            "EventSourceArn": fifo_arn,
            "FunctionName": fast,
            "MaximumBatchingWindowInSeconds": 5,
        },
    }
    out: dict[str, str | None] = {}
    for name, params in attempts.items():
        try:
            lam.create_event_source_mapping(**params)
            out[name] = None
        except ClientError as exc:
            out[name] = f"{exc.response['Error']['Code']}: {exc.response['Error']['Message']}"
    return out


def test_raw_moto_creates_mappings_lambda_refuses(raw: Aws) -> None:
    assert set(_mapping_refusals(raw).values()) == {None}


def test_patched_event_source_mappings_follow_lambdas_sqs_rules(patched: Aws) -> None:
    refusals = _mapping_refusals(patched)
    assert refusals == {
        "visibility below function timeout": "InvalidParameterValueException: Queue visibility timeout: "
        "5 seconds is less than Function timeout: 30 seconds",
        "batch above 10 without a window": "InvalidParameterValueException: Maximum batch window in "
        "seconds must be greater than 0 if maximum batch size is greater than 10",
        "window on a FIFO queue": "InvalidParameterValueException: Batching window is not supported "
        "for FIFO queues.",
    }


# --- scheduler_skips_request_validation -------------------------------------------------------------------


def _schedule_with_fifo_dlq(aws: Aws) -> Exception | None:
    _, target = aws.queue("sched-target")
    sqs = aws.client("sqs")
    dlq = sqs.create_queue(QueueName=aws.name("sched-dlq") + ".fifo", Attributes={"FifoQueue": "true"})
    dlq_arn = sqs.get_queue_attributes(QueueUrl=dlq["QueueUrl"], AttributeNames=["QueueArn"])["Attributes"][
        "QueueArn"
    ]
    try:
        aws.client("scheduler").create_schedule(
            Name=aws.name("fifo-dlq"),
            ScheduleExpression="at(2030-01-01T00:00:00)",
            FlexibleTimeWindow={"Mode": "OFF"},
            Target={
                "Arn": target,
                "RoleArn": "arn:aws:iam::123456789012:role/scheduler",
                "Input": "{}",
                "DeadLetterConfig": {"Arn": dlq_arn},
                "RetryPolicy": {"MaximumRetryAttempts": 186},
            },
        )
    except ClientError as exc:
        return exc
    return None


def test_raw_moto_accepts_a_fifo_dead_letter_queue_for_a_schedule(raw: Aws) -> None:
    assert _schedule_with_fifo_dlq(raw) is None


def test_patched_create_schedule_refuses_a_fifo_dead_letter_queue(patched: Aws) -> None:
    error = _schedule_with_fifo_dlq(patched)
    assert isinstance(error, ClientError)
    assert error.response["Error"]["Code"] == "ValidationException"
    message = error.response["Error"]["Message"]
    assert message.startswith("2 validation errors detected: Value 'arn:aws:sqs:us-east-1:123456789012:")
    assert (
        ".fifo' at 'target.deadLetterConfig.arn' failed to satisfy constraint: Member must satisfy "
        in message
    )
    assert (
        "at 'target.retryPolicy.maximumRetryAttempts' failed to satisfy constraint: Member must have "
        in message
    )


# --- scheduler_create_schedule_in_missing_group_fails ------------------------------------------------------


def _schedule_in_missing_group(aws: Aws) -> ClientError:
    _, target = aws.queue("sched-target")
    with pytest.raises(ClientError) as caught:
        aws.client("scheduler").create_schedule(
            Name=aws.name("lost"),
            GroupName="no-such-group",
            ScheduleExpression="at(2030-01-01T00:00:00)",
            FlexibleTimeWindow={"Mode": "OFF"},
            Target={"Arn": target, "RoleArn": "arn:aws:iam::123456789012:role/scheduler", "Input": "{}"},
        )
    return caught.value


def test_raw_moto_fails_a_schedule_in_a_missing_group_with_a_500(raw: Aws) -> None:
    assert _schedule_in_missing_group(raw).response["ResponseMetadata"]["HTTPStatusCode"] == 500


def test_patched_create_schedule_in_a_missing_group_is_resource_not_found(patched: Aws) -> None:
    error = _schedule_in_missing_group(patched).response
    assert error["ResponseMetadata"]["HTTPStatusCode"] == 404
    assert error["Error"]["Code"] == "ResourceNotFoundException"
    assert error["Error"]["Message"] == "Schedule group no-such-group does not exist."


def _notify_queue(aws: Aws, *, allow_s3: bool) -> None:
    """A bucket's ObjectCreated notification to a queue whose policy lets S3 in, or does not."""
    sqs, s3 = aws.client("sqs"), aws.client("s3")
    url = sqs.create_queue(QueueName=aws.name("records"))["QueueUrl"]
    arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    bucket = aws.name("records-bucket")
    s3.create_bucket(Bucket=bucket)
    if allow_s3:
        statement = {
            "Effect": "Allow",
            "Principal": {"Service": "s3.amazonaws.com"},
            "Action": "sqs:SendMessage",
            "Resource": arn,
            "Condition": {"ArnEquals": {"aws:SourceArn": f"arn:aws:s3:::{bucket}"}},
        }
        sqs.set_queue_attributes(
            QueueUrl=url,
            Attributes={"Policy": json.dumps({"Version": "2012-10-17", "Statement": [statement]})},
        )
    s3.put_bucket_notification_configuration(
        Bucket=bucket,
        NotificationConfiguration={
            "QueueConfigurations": [{"QueueArn": arn, "Events": ["s3:ObjectCreated:*"]}]
        },
    )


def test_raw_moto_takes_a_notification_to_a_queue_that_keeps_s3_out(raw: Aws) -> None:
    _notify_queue(raw, allow_s3=False)


def test_patched_notification_to_a_queue_that_keeps_s3_out_is_refused(patched: Aws) -> None:
    with pytest.raises(ClientError) as refused:
        _notify_queue(patched, allow_s3=False)
    assert refused.value.response["Error"]["Code"] == "InvalidArgument"
    assert (
        refused.value.response["Error"]["Message"]
        == "Unable to validate the following destination configurations"
    )
    _notify_queue(patched, allow_s3=True)  # the grant modules/self-healing gives: accepted


def test_every_patch_has_a_raw_and_a_patched_test() -> None:
    names = set(globals())
    # The self-healing patches (async_patches, events_patches) are tested in test_selfheal_emulator.py,
    # the S3 ones in test_s3_patches.py.
    from serverless_retry_tools.local.emulator import async_patches, events_patches, s3_patches

    theirs = {p.name for p in (*async_patches.patches(), *events_patches.patches(), *s3_patches.patches())}
    here = [n for n in PATCHES if n not in theirs]
    for patch in here:
        assert patch.startswith(
            ("sqs_", "lambda_", "events_", "scheduler_", "dynamodb_", "s3_notification")
        ), patch
    # One pair per patch, by count: a new patch without tests fails here.
    raw_tests = [n for n in names if n.startswith("test_raw_moto_")]
    patched_tests = [n for n in names if n.startswith("test_patched_")]
    assert len(raw_tests) == len(here)
    assert len(patched_tests) == len(here)


# --- Lambda's recursive loop detection (local/aws_rules/recursion.py) --------------------------------------


def _send_with_trace_header(aws: Aws) -> list[dict[str, Any]]:
    """A SendMessage and a SendMessageBatch whose requests carry X-Amzn-Trace-Id, as botocore sends
    them inside Lambda; the batch's second entry sets AWSTraceHeader itself. Received back."""
    sqs = aws.client("sqs")
    url = sqs.create_queue(QueueName=aws.name("traced"))["QueueUrl"]

    def header(request: Any, **_: Any) -> None:
        request.headers["X-Amzn-Trace-Id"] = "Root=1-00000000-000000000000000000000001;Lineage=aa:3"

    sqs.meta.events.register("before-send.sqs.*", header)
    sqs.send_message(QueueUrl=url, MessageBody="single")
    own = {
        "AWSTraceHeader": {"DataType": "String", "StringValue": "Root=1-00000000-000000000000000000000002"}
    }
    sqs.send_message_batch(
        QueueUrl=url,
        Entries=[
            {"Id": "a", "MessageBody": "batched"},
            {"Id": "b", "MessageBody": "own", "MessageSystemAttributes": own},
        ],
    )
    got: list[dict[str, Any]] = []
    for _ in range(5):  # bounded
        got += sqs.receive_message(
            QueueUrl=url, MaxNumberOfMessages=10, MessageSystemAttributeNames=["AWSTraceHeader"]
        ).get("Messages", [])
        if len(got) >= 3:
            break
    return got


def test_raw_moto_keeps_no_trace_header_of_the_request(raw: Aws) -> None:
    got = _send_with_trace_header(raw)
    assert len(got) == 3
    assert not any("AWSTraceHeader" in (m.get("Attributes") or {}) for m in got)


def test_patched_sqs_keeps_the_trace_header_and_an_entrys_own_attribute_wins(patched: Aws) -> None:
    got = {
        m["Body"]: (m.get("Attributes") or {}).get("AWSTraceHeader") for m in _send_with_trace_header(patched)
    }
    assert got == {
        "single": "Root=1-00000000-000000000000000000000001;Lineage=aa:3",
        "batched": "Root=1-00000000-000000000000000000000001;Lineage=aa:3",
        "own": "Root=1-00000000-000000000000000000000002",  # the system attribute overrides the header
    }


def test_raw_moto_has_no_recursion_config(raw: Aws) -> None:
    function = raw.function()
    with pytest.raises(ClientError):
        raw.client("lambda").get_function_recursion_config(FunctionName=function)


def test_patched_recursion_config_defaults_to_terminate_and_takes_allow(patched: Aws) -> None:
    lam = patched.client("lambda")
    function = patched.function()
    assert lam.get_function_recursion_config(FunctionName=function)["RecursiveLoop"] == "Terminate"
    assert (
        lam.put_function_recursion_config(FunctionName=function, RecursiveLoop="Allow")["RecursiveLoop"]
        == "Allow"
    )
    assert lam.get_function_recursion_config(FunctionName=function)["RecursiveLoop"] == "Allow"
    with pytest.raises(lam.exceptions.ResourceNotFoundException):
        lam.put_function_recursion_config(FunctionName="no-such-function", RecursiveLoop="Allow")


# --- dynamodb_item_writes_not_atomic ------------------------------------------------------------------

KEY_UPDATE = {
    "Key": {"id": {"S": "signing-key"}},
    "UpdateExpression": "SET #key = if_not_exists(#key, :key)",
    "ExpressionAttributeNames": {"#key": "key"},
    "ReturnValues": "ALL_NEW",
}


def _table(client: Any, name: str) -> None:
    client.create_table(
        TableName=name,
        KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
    )


def _keys_made_together(client_for: Any, table: str, writers: int) -> set[bytes]:
    """What ``writers`` threads, each making the key with its own value at once, are given back."""
    import threading

    results: list[bytes] = []
    start = threading.Barrier(writers)

    def make(n: int) -> None:
        client = client_for()
        start.wait(timeout=10)
        response = client.update_item(
            TableName=table, ExpressionAttributeValues={":key": {"B": bytes([n]) * 32}}, **KEY_UPDATE
        )
        results.append(bytes(response["Attributes"]["key"]["B"]))

    threads = [threading.Thread(target=make, args=(n,)) for n in range(writers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    assert len(results) == writers
    return set(results)


def _interleaved_reads(raw_moto: bool) -> set[bytes]:
    """In-process moto with each item read held until both writers have read: the interleaving a
    threaded server can take. Raw moto lets both write; the patched backend lets one at a time."""
    import threading

    from moto import mock_aws
    from moto.dynamodb.models import Table
    from serverless_retry_tools.local.emulator.moto_patches import patched as patches_applied

    both_read = threading.Barrier(2)
    get_item = Table.get_item

    def slow_get_item(self: Any, *args: Any, **kwargs: Any) -> Any:
        item = get_item(self, *args, **kwargs)
        with contextlib.suppress(threading.BrokenBarrierError):
            both_read.wait(timeout=1)  # patched: the other writer waits on the lock; go on alone
        return item

    names = () if raw_moto else ("dynamodb_item_writes_not_atomic",)
    with mock_aws(), patches_applied(*names), pytest.MonkeyPatch.context() as mp:
        mp.setattr(Table, "get_item", slow_get_item)

        def client() -> Any:
            return boto3.client("dynamodb", region_name="us-east-1")

        _table(client(), "claims")
        return _keys_made_together(client, "claims", 2)


def test_raw_moto_gives_two_writers_of_one_item_each_their_own_value() -> None:
    assert len(_interleaved_reads(raw_moto=True)) == 2


def test_patched_item_writes_are_atomic_one_value_for_every_writer() -> None:
    assert len(_interleaved_reads(raw_moto=False)) == 1


def test_emulator_gives_concurrent_key_makers_one_key(patched: Aws) -> None:
    for _ in range(3):  # a new table each time: the race is on the item's first write
        table = patched.name("claims")
        _table(patched.client("dynamodb"), table)
        assert len(_keys_made_together(lambda: patched.client("dynamodb"), table, 12)) == 1


# --- lambda_stream_event_source_mapping_runs_in_docker -------------------------------------------------


def _stream_table(aws: Aws) -> tuple[str, str]:
    ddb = aws.client("dynamodb")
    name = aws.name("streamed")
    ddb.create_table(
        TableName=name,
        KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
        StreamSpecification={"StreamEnabled": True, "StreamViewType": "NEW_AND_OLD_IMAGES"},
    )
    return name, ddb.describe_table(TableName=name)["Table"]["LatestStreamArn"]


def _stream_records_after_a_mapped_write(aws: Aws) -> int:
    table, stream = _stream_table(aws)
    aws.client("lambda").create_event_source_mapping(
        EventSourceArn=stream, FunctionName=aws.function(), StartingPosition="TRIM_HORIZON"
    )
    aws.client("dynamodb").put_item(TableName=table, Item={"id": {"S": "1"}})
    streams = aws.client("dynamodbstreams")
    (shard,) = streams.describe_stream(StreamArn=stream)["StreamDescription"]["Shards"]
    iterator = streams.get_shard_iterator(
        StreamArn=stream, ShardId=shard["ShardId"], ShardIteratorType="TRIM_HORIZON"
    )["ShardIterator"]
    return len(streams.get_records(ShardIterator=iterator)["Records"])


def test_raw_moto_empties_a_mapped_dynamodb_stream_trying_to_run_the_function(raw: Aws) -> None:
    # moto "delivered" the record (a failed Docker run) and dropped it from the stream.
    assert _stream_records_after_a_mapped_write(raw) == 0


def test_patched_stream_mapping_leaves_the_records_to_the_runtime(patched: Aws) -> None:
    assert _stream_records_after_a_mapped_write(patched) == 1


# --- lambda_stream_record_times_not_logical ---------------------------------------------------------------


def _arrival_against_the_clock(patches: tuple[str, ...] | None) -> tuple[float, float, float]:
    """(logical now before, the Kinesis record's arrival, logical now after) on an emulator whose
    clock runs 50 times faster."""
    with Emulator(patches=patches, clock_scale=50) as emulator:
        aws = Aws(emulator)
        kinesis = aws.client("kinesis")
        name = aws.name("stream")
        kinesis.create_stream(StreamName=name, ShardCount=1)
        time.sleep(0.5)  # 25 logical seconds: real and logical time are far apart by now
        before = emulator.clock.now().timestamp()
        shard = kinesis.put_record(StreamName=name, Data=b"x", PartitionKey="k")["ShardId"]
        after = emulator.clock.now().timestamp()
        iterator = kinesis.get_shard_iterator(
            StreamName=name, ShardId=shard, ShardIteratorType="TRIM_HORIZON"
        )["ShardIterator"]
        (record,) = kinesis.get_records(ShardIterator=iterator)["Records"]
        return before, record["ApproximateArrivalTimestamp"].timestamp(), after


def test_raw_moto_stamps_stream_records_with_real_time() -> None:
    before, arrival, _ = _arrival_against_the_clock(())
    assert before - arrival > 20


def test_patched_stream_records_arrive_on_the_logical_clock() -> None:
    before, arrival, after = _arrival_against_the_clock(None)
    assert before - 1 <= arrival <= after + 1


# --- lambda_event_source_mapping_skips_stream_rules ---------------------------------------------------


def _stream_mapping_refusals(aws: Aws) -> dict[str, str | None]:
    kinesis = aws.client("kinesis")
    name = aws.name("stream")
    kinesis.create_stream(StreamName=name, ShardCount=1)
    arn = kinesis.describe_stream(StreamName=name)["StreamDescription"]["StreamARN"]
    function = aws.function()
    # botocore checks the API's own ranges: send what another client could.
    lam = boto3.client(
        "lambda",
        config=Config(parameter_validation=False, retries={"max_attempts": 1}),
        **aws.emulator.client_kwargs(),
    )
    attempts: dict[str, dict[str, Any]] = {
        "no starting position": {},
        "batch of 0": {"StartingPosition": "LATEST", "BatchSize": 0},
        "record age 30 s": {"StartingPosition": "LATEST", "MaximumRecordAgeInSeconds": 30},
        "parallelization 11": {"StartingPosition": "LATEST", "ParallelizationFactor": 11},
    }
    out: dict[str, str | None] = {}
    for label, params in attempts.items():
        try:
            lam.create_event_source_mapping(EventSourceArn=arn, FunctionName=function, **params)
            out[label] = None
        except ClientError as exc:
            out[label] = str(exc.response["Error"]["Code"])
    return out


def test_raw_moto_creates_stream_mappings_lambda_refuses(raw: Aws) -> None:
    assert set(_stream_mapping_refusals(raw).values()) == {None}


def test_patched_stream_mappings_follow_lambdas_limits(patched: Aws) -> None:
    assert set(_stream_mapping_refusals(patched).values()) == {"InvalidParameterValueException"}


# --- lambda_event_source_mapping_drops_starting_position_timestamp --------------------------------------


def _starting_position_timestamp(aws: Aws) -> Any:
    kinesis = aws.client("kinesis")
    name = aws.name("stream")
    kinesis.create_stream(StreamName=name, ShardCount=1)
    arn = kinesis.describe_stream(StreamName=name)["StreamDescription"]["StreamARN"]
    lam = aws.client("lambda")
    uuid = lam.create_event_source_mapping(
        EventSourceArn=arn,
        FunctionName=aws.function(),
        StartingPosition="AT_TIMESTAMP",
        StartingPositionTimestamp=1_800_000_000,
    )["UUID"]
    return lam.get_event_source_mapping(UUID=uuid).get("StartingPositionTimestamp")


def test_raw_moto_forgets_the_starting_position_timestamp(raw: Aws) -> None:
    assert _starting_position_timestamp(raw) is None


def test_patched_mapping_returns_its_starting_position_timestamp(patched: Aws) -> None:
    assert _starting_position_timestamp(patched).timestamp() == 1_800_000_000
