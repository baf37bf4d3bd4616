"""The fidelity table (docs/local-emulator.md), row by row: the emulator and runtime refuse or do what AWS does, at the
same step. (Rows for moto gaps the emulator patches are proven in test_moto_patches.py: raw moto
accepts, the emulator refuses.) A test named in the table that does not exist fails
``test_every_fidelity_row_names_a_test``.
"""

from __future__ import annotations

import hashlib
import io
import json
import re
import textwrap
import time
import zipfile
from collections.abc import Callable, Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from botocore.config import Config
from botocore.exceptions import ClientError
from serverless_retry_tools.local.aws_rules.sqs_events import sqs_event
from serverless_retry_tools.local.emulator.emulator import Emulator
from serverless_retry_tools.local.runtime.runtime import Runtime, RuntimeEvent, ServiceError

from tests.integration.emulator_account import EmulatorAccount

NO_RETRIES = Config(retries={"mode": "standard", "max_attempts": 1})
ROOT = Path(__file__).resolve().parents[2]
FIDELITY_PAGE = ROOT / "docs" / "local-emulator.md"


class Aws(EmulatorAccount):
    def __init__(self, emulator: Emulator) -> None:
        super().__init__(emulator, config=NO_RETRIES, role_name="fidelity")

    def function(self, code: str, **extra: Any) -> str:
        buf = io.BytesIO()
        with zipfile.ZipFile(buf, "w") as zf:
            zf.writestr("app.py", textwrap.dedent(code))
        name = self.name("fn")
        self.client("lambda").create_function(
            FunctionName=name,
            Role=self.role,
            Handler="app.handler",
            Runtime="python3.12",
            Code={"ZipFile": buf.getvalue()},
            **extra,
        )
        return name

    def arn(self, function: str) -> str:
        return str(self.client("lambda").get_function(FunctionName=function)["Configuration"]["FunctionArn"])

    def receive_all(self, url: str, *, wait: float = 3.0, expect: int | None = None) -> list[dict[str, Any]]:
        sqs = self.client("sqs")
        found: list[dict[str, Any]] = []
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline and (expect is None or len(found) < expect):
            found += sqs.receive_message(
                QueueUrl=url,
                MaxNumberOfMessages=10,
                WaitTimeSeconds=1,
                VisibilityTimeout=43_200,
                MessageAttributeNames=["All"],
                MessageSystemAttributeNames=["All"],
            ).get("Messages", [])
        return found

    def depth(self, url: str) -> int:
        attrs = self.client("sqs").get_queue_attributes(QueueUrl=url, AttributeNames=["All"])["Attributes"]
        return sum(
            int(attrs[k])
            for k in (
                "ApproximateNumberOfMessages",
                "ApproximateNumberOfMessagesNotVisible",
                "ApproximateNumberOfMessagesDelayed",
            )
        )


@pytest.fixture(scope="module")
def real() -> Iterator[Aws]:
    with Emulator() as emulator:
        yield Aws(emulator)


@pytest.fixture(scope="module")
def fast() -> Iterator[Aws]:
    """Clock x100: 100 logical seconds per real second."""
    with Emulator(clock_scale=100) as emulator:
        yield Aws(emulator)


class Run:
    def __init__(self, aws: Aws, work_dir: Path) -> None:
        self.events: list[RuntimeEvent] = []
        self.runtime = Runtime(aws.emulator.url, work_dir=work_dir, on_event=self.events.append)

    def until(self, predicate: Callable[[], bool], deadline: float = 30.0) -> bool:
        return self.runtime.run(until=predicate, deadline_seconds=deadline, check_every=0.2)

    def of(self, kind: str) -> list[dict[str, Any]]:
        return [e.detail for e in self.events if e.kind == kind]


def _at(aws: Aws, seconds: float) -> str:
    due = aws.emulator.clock.now() + timedelta(seconds=seconds)
    return f"at({due:%Y-%m-%dT%H:%M:%S})"


# --- Scheduler ---------------------------------------------------------------------------------------


def _schedule_to(aws: Aws, target_arn: str, dlq_arn: str, **target: Any) -> str:
    name = aws.name("sched")
    aws.client("scheduler").create_schedule(
        Name=name,
        ScheduleExpression=_at(aws, 0),
        FlexibleTimeWindow={"Mode": "OFF"},
        ActionAfterCompletion="DELETE",
        Target={
            "Arn": target_arn,
            "RoleArn": aws.role,
            "RetryPolicy": {"MaximumRetryAttempts": 1, "MaximumEventAgeInSeconds": 3600},
            "DeadLetterConfig": {"Arn": dlq_arn},
            **target,
        },
    )
    return name


def test_scheduler_fifo_target_without_content_based_deduplication_fails_delivery(
    fast: Aws, tmp_path: Path
) -> None:
    """The Scheduler passes only a MessageGroupId: a FIFO queue without content-based deduplication
    refuses the send at delivery time; the schedule's retry policy runs, then its DLQ gets the Input
    with the SQS error. With content-based deduplication the same schedule delivers."""
    strict_url, strict_arn = fast.queue("strict", FifoQueue="true", ContentBasedDeduplication="false")
    ok_url, ok_arn = fast.queue("cbd", FifoQueue="true", ContentBasedDeduplication="true")
    dlq_url, dlq_arn = fast.queue("sched-dlq")
    group = {"SqsParameters": {"MessageGroupId": "order-7"}}
    _schedule_to(fast, strict_arn, dlq_arn, Input='{"n": 1}', **group)
    _schedule_to(fast, ok_arn, dlq_arn, Input='{"n": 2}', **group)
    run = Run(fast, tmp_path)
    assert run.until(lambda: bool(run.of("schedule-dead-lettered")) and bool(run.of("schedule-fired")))
    assert fast.depth(strict_url) == 0
    (dead,) = fast.receive_all(dlq_url, expect=1)
    assert dead["Body"] == '{"n": 1}'
    attrs = {k: v["StringValue"] for k, v in dead["MessageAttributes"].items()}
    assert attrs["ERROR_CODE"] == "InvalidParameterValue"
    assert "ContentBasedDeduplication" in attrs["ERROR_MESSAGE"]
    assert (attrs["RETRY_ATTEMPTS"], attrs["EXHAUSTED_RETRY_CONDITION"]) == (
        "1",
        "MaximumRetryAttemptsExhausted",
    )
    (delivered,) = fast.receive_all(ok_url, expect=1)
    assert delivered["Attributes"]["MessageGroupId"] == "order-7"
    # The queue's own content hash, not an id the emulator made up.
    assert delivered["Attributes"]["MessageDeduplicationId"] == hashlib.sha256(b'{"n": 2}').hexdigest()


def test_scheduler_fifo_target_without_a_message_group_fails_delivery(fast: Aws, tmp_path: Path) -> None:
    _, fifo_arn = fast.queue("nogroup", FifoQueue="true", ContentBasedDeduplication="true")
    dlq_url, dlq_arn = fast.queue("sched-dlq")
    _schedule_to(fast, fifo_arn, dlq_arn, Input="{}")
    run = Run(fast, tmp_path)
    assert run.until(lambda: bool(run.of("schedule-dead-lettered")))
    (dead,) = fast.receive_all(dlq_url, expect=1)
    assert dead["MessageAttributes"]["ERROR_CODE"]["StringValue"] == "MissingParameter"


def test_scheduler_lambda_target_input_over_1_mb_fails_delivery(real: Aws, tmp_path: Path) -> None:
    function = real.function("def handler(event, context):\n    return None\n")
    runtime = Runtime(real.emulator.url, work_dir=tmp_path)
    try:
        with pytest.raises(ServiceError, match="RequestEntityTooLargeException"):
            runtime.invoke_async(real.arn(function), json.dumps({"pad": "x" * 1_048_576}))
        with pytest.raises(ServiceError, match="InvalidRequestContentException"):
            runtime.invoke_async(real.arn(function), "not json")
    finally:
        runtime.stop()


def test_schedules_fire_on_the_logical_clock_within_the_window(fast: Aws, tmp_path: Path) -> None:
    url, arn = fast.queue("on-time")
    names = []
    for lead in (300, 600, 900):  # 3, 6 and 9 real seconds at x100
        name = fast.name("sched")
        names.append(name)
        fast.client("scheduler").create_schedule(
            Name=name,
            ScheduleExpression=_at(fast, lead),
            FlexibleTimeWindow={"Mode": "OFF"},
            ActionAfterCompletion="DELETE",
            Target={"Arn": arn, "RoleArn": fast.role, "Input": name},
        )
    run = Run(fast, tmp_path)
    assert run.until(lambda: len(run.of("schedule-fired")) == 3, deadline=30)
    lateness = [f["lateness_logical_s"] for f in run.of("schedule-fired")]
    assert all(0 <= late <= 60 for late in lateness), lateness
    assert sorted(m["Body"] for m in fast.receive_all(url, expect=3)) == sorted(names)


# --- SQS on the logical clock ------------------------------------------------------------------------


def test_sqs_delay_and_visibility_are_logical(fast: Aws) -> None:
    sqs = fast.client("sqs")
    url, _ = fast.queue("logical")
    clock = fast.emulator.clock
    sent = clock.now()
    sqs.send_message(QueueUrl=url, MessageBody="late", DelaySeconds=300)  # 3 real seconds
    assert not sqs.receive_message(QueueUrl=url).get("Messages")
    got = fast.receive_all(url, wait=10, expect=1)
    arrived = clock.now()
    assert len(got) == 1
    lateness = (arrived - sent).total_seconds() - 300
    assert 0 <= lateness <= 2 + 100 * 0.1, lateness  # 2 logical s, plus this client's own round trips
    sent_ms = int(got[0]["Attributes"]["SentTimestamp"])
    assert abs(sent_ms / 1000 - sent.timestamp()) < 10  # timestamps are logical too
    # A logical visibility timeout: 200 s hides the message for 2 real seconds.
    hidden = clock.now()  # before the call: the emulator starts the 200 s while handling it
    sqs.change_message_visibility(QueueUrl=url, ReceiptHandle=got[0]["ReceiptHandle"], VisibilityTimeout=200)
    again = fast.receive_all(url, wait=10, expect=1)
    assert len(again) == 1
    assert (clock.now() - hidden).total_seconds() >= 200


@pytest.mark.parametrize(
    ("case", "code"),
    [
        ("delay over 900 s", "InvalidParameterValue"),
        ("per-message delay on FIFO", "InvalidParameterValue"),
        ("FIFO without MessageGroupId", "MissingParameter"),
        ("FIFO without deduplication", "InvalidParameterValue"),
        ("visibility over 12 h", "InvalidParameterValue"),
        ("more than 10 batch entries", "TooManyEntriesInBatchRequest"),
        ("duplicate batch ids", "BatchEntryIdsNotDistinct"),
        ("receive more than 10", "InvalidParameterValue"),
    ],
)
def test_sqs_limits_moto_already_enforces(real: Aws, case: str, code: str) -> None:
    """Pinned: moto refuses these as SQS does; a moto upgrade that stops doing so fails here."""
    sqs = real.client("sqs")
    url, _ = real.queue("std")
    fifo, _ = real.queue("fifo", FifoQueue="true")
    calls: dict[str, Callable[[], Any]] = {
        "delay over 900 s": lambda: sqs.send_message(QueueUrl=url, MessageBody="x", DelaySeconds=901),
        "per-message delay on FIFO": lambda: sqs.send_message(
            QueueUrl=fifo, MessageBody="x", MessageGroupId="g", MessageDeduplicationId="d", DelaySeconds=5
        ),
        "FIFO without MessageGroupId": lambda: sqs.send_message(QueueUrl=fifo, MessageBody="x"),
        "FIFO without deduplication": lambda: sqs.send_message(
            QueueUrl=fifo, MessageBody="x", MessageGroupId="g"
        ),
        "visibility over 12 h": lambda: sqs.change_message_visibility(
            QueueUrl=url, ReceiptHandle=_received(sqs, url), VisibilityTimeout=43_201
        ),
        "more than 10 batch entries": lambda: sqs.send_message_batch(
            QueueUrl=url, Entries=[{"Id": str(n), "MessageBody": "x"} for n in range(11)]
        ),
        "duplicate batch ids": lambda: sqs.send_message_batch(
            QueueUrl=url, Entries=[{"Id": "same", "MessageBody": "x"}] * 2
        ),
        "receive more than 10": lambda: sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=11),
    }
    with pytest.raises(ClientError) as raised:
        calls[case]()
    assert raised.value.response["Error"]["Code"].rsplit(".", 1)[-1] == code


def test_a_standard_queue_takes_and_returns_a_message_group_id(real: Aws) -> None:
    """SQS fair queues (2025): a standard queue accepts MessageGroupId, with a per-message delay in the
    same batch entry, and returns it as a system attribute; the Lambda event record carries it."""
    sqs = real.client("sqs")
    url, arn = real.queue("fair")
    sqs.send_message(QueueUrl=url, MessageBody="a", MessageGroupId="tenant-a")
    sent = sqs.send_message_batch(
        QueueUrl=url,
        Entries=[{"Id": "0", "MessageBody": "b", "MessageGroupId": "tenant-b", "DelaySeconds": 1}],
    )
    assert not sent.get("Failed")
    got = real.receive_all(url, wait=10, expect=2)
    groups = {m["Body"]: m["Attributes"].get("MessageGroupId") for m in got}
    assert groups == {"a": "tenant-a", "b": "tenant-b"}
    [record] = sqs_event([got[0]], arn, "us-east-1")["Records"]
    assert record["attributes"]["MessageGroupId"] == groups[got[0]["Body"]]


def _received(sqs: Any, url: str) -> str:
    sqs.send_message(QueueUrl=url, MessageBody="x")
    return str(sqs.receive_message(QueueUrl=url)["Messages"][0]["ReceiptHandle"])


# --- Event source mappings ------------------------------------------------------------------------------

COUNTING = """
def handler(event, context):
    print("batch", len(event["Records"]))
    return {"batchItemFailures": []}
"""


def test_esm_batch_window_is_logical_and_collects_the_batch(fast: Aws, tmp_path: Path) -> None:
    url, arn = fast.queue("window", VisibilityTimeout="600")  # longer than the window, as advised
    function = fast.function(COUNTING)
    fast.client("lambda").create_event_source_mapping(
        EventSourceArn=arn,
        FunctionName=function,
        BatchSize=50,
        MaximumBatchingWindowInSeconds=100,  # 1 real second at x100
        FunctionResponseTypes=["ReportBatchItemFailures"],
    )
    sqs = fast.client("sqs")
    sqs.send_message_batch(QueueUrl=url, Entries=[{"Id": str(n), "MessageBody": "x"} for n in range(10)])
    started = time.monotonic()
    run = Run(fast, tmp_path)
    time.sleep(0.2)
    sqs.send_message_batch(QueueUrl=url, Entries=[{"Id": str(n), "MessageBody": "y"} for n in range(5)])
    assert run.until(lambda: fast.depth(url) == 0)
    sizes = [b["size"] for b in run.of("batch")]
    assert sizes == [15], sizes  # one invocation: the window gathered both sends
    assert time.monotonic() - started < 10


def test_esm_batch_over_6_mb_is_split_into_invocations(real: Aws, tmp_path: Path) -> None:
    url, arn = real.queue("big", MaximumMessageSize="1048576")
    function = real.function(COUNTING)
    real.client("lambda").create_event_source_mapping(
        EventSourceArn=arn,
        FunctionName=function,
        BatchSize=10,
        FunctionResponseTypes=["ReportBatchItemFailures"],
    )
    sqs = real.client("sqs")
    for n in range(8):  # 8 x 900 KB: 7.2 MB, more than one invocation may carry
        sqs.send_message(QueueUrl=url, MessageBody=str(n) * 900_000)
    run = Run(real, tmp_path)
    assert run.until(lambda: real.depth(url) == 0, deadline=60)
    sizes = [b["size"] for b in run.of("batch")]
    assert sum(sizes) == 8
    assert len(sizes) >= 2, sizes
    assert all(size <= 6 for size in sizes), sizes


# --- Pipes ------------------------------------------------------------------------------------------------

ENRICH = """
import json
def handler(records, context):
    mode = json.loads(records[0]["body"])["mode"]
    if mode == "filter":
        return []
    if mode == "explode":
        return [{"n": n} for n in range(11)]
    if mode == "huge":
        return ["x" * (6 * 1024 * 1024)]
    return [{"order": json.loads(r["body"])} for r in records]
"""


def _pipe(aws: Aws) -> tuple[str, str, str]:
    source_url, source_arn = aws.queue("pipe-src", VisibilityTimeout="1")
    sink_url, sink_arn = aws.queue("pipe-sink")
    events = aws.client("events")
    bus = aws.name("bus")
    bus_arn = events.create_event_bus(Name=bus)["EventBusArn"]
    rule = aws.name("rule")
    events.put_rule(Name=rule, EventBusName=bus, EventPattern=json.dumps({"source": ["fidelity.pipe"]}))
    events.put_targets(Rule=rule, EventBusName=bus, Targets=[{"Id": "sink", "Arn": sink_arn}])
    name = aws.name("pipe")
    aws.client("pipes").create_pipe(
        Name=name,
        RoleArn=aws.role,
        Source=source_arn,
        SourceParameters={"SqsQueueParameters": {"BatchSize": 10}},
        Enrichment=aws.arn(aws.function(ENRICH)),
        Target=bus_arn,
        TargetParameters={"EventBridgeEventBusParameters": {"Source": "fidelity.pipe", "DetailType": "t"}},
    )
    return name, source_url, sink_url


def test_pipe_enrichment_empty_response_filters_the_batch(real: Aws, tmp_path: Path) -> None:
    name, source, sink = _pipe(real)
    real.client("sqs").send_message(QueueUrl=source, MessageBody=json.dumps({"mode": "filter"}))
    run = Run(real, tmp_path)
    assert run.until(lambda: real.depth(source) == 0)
    (batch,) = [p for p in run.of("pipe") if p["pipe"] == name]
    assert batch["ok"]
    assert batch["items"] == 0
    assert real.receive_all(sink, wait=1.5) == []  # the target was not invoked


@pytest.mark.parametrize(("mode", "why"), [("explode", "at most 10"), ("huge", "larger than 6 MB")])
def test_pipe_enrichment_beyond_the_target_batch_or_6_mb_fails(
    real: Aws, tmp_path: Path, mode: str, why: str
) -> None:
    name, source, sink = _pipe(real)
    real.client("sqs").send_message(QueueUrl=source, MessageBody=json.dumps({"mode": mode}))
    run = Run(real, tmp_path)

    def ours() -> list[dict[str, Any]]:
        return [p for p in run.of("pipe") if p["pipe"] == name]

    run.until(lambda: len(ours()) >= 2, deadline=20)
    pipes = ours()
    assert pipes
    assert not any(p["ok"] for p in pipes)
    assert why in pipes[0]["why"]
    assert real.depth(source) == 1  # handed back to the queue, not lost
    assert real.receive_all(sink, wait=1.5) == []


# --- the table itself ----------------------------------------------------------------------------------------


def test_every_fidelity_row_names_a_test() -> None:
    text = FIDELITY_PAGE.read_text()
    table = text[text.index("## Fidelity") :]
    table = table[: table.index("\n\n", table.index("| constraint"))]
    rows = [
        line
        for line in table.splitlines()
        if line.startswith("|") and not line.startswith(("| constraint", "|---"))
    ]
    assert len(rows) >= 20
    root = ROOT
    for row in rows:
        tests = re.findall(r"`(tests/[\w/]+\.py)::(\w+)", row)
        if "planned" in row.split("|")[3]:
            continue
        assert tests, f"fidelity row without a test: {row}"
        for path, name in tests:
            assert re.search(rf"^def {name}\(", (root / path).read_text(), re.MULTILINE), f"{path}::{name}"
