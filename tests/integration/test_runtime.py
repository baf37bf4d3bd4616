"""The local runtime against hand-made functions (no Terraform): Lambda's SQS rules, isolation of
functions, timeouts and crashes, and every schedule target."""

from __future__ import annotations

import io
import json
import textwrap
import time
import zipfile
from collections.abc import Callable, Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from botocore.config import Config
from serverless_retry_tools.local.emulator.emulator import Emulator
from serverless_retry_tools.local.runtime.runtime import Runtime, RuntimeEvent

from tests.integration.emulator_account import EmulatorAccount

CONFIG = Config(retries={"mode": "standard", "max_attempts": 3})


def _zip(files: dict[str, str]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for name, text in files.items():
            zf.writestr(name, textwrap.dedent(text))
    return buf.getvalue()


# Fails (in the way the test asks) on a record's first delivery, succeeds on the next.
FLAKY = """
import json, os, time
def handler(event, context):
    for record in event["Records"]:
        first = record["attributes"]["ApproximateReceiveCount"] == "1"
        mode = json.loads(record["body"]).get("mode")
        print("seen", record["messageId"], record["attributes"]["ApproximateReceiveCount"], mode)
        if first and mode == "crash":
            os._exit(3)
        if first and mode == "hang":
            time.sleep(30)
        if first and mode == "raise":
            raise RuntimeError("boom")
    return {"batchItemFailures": []}
"""


class Aws(EmulatorAccount):
    def __init__(self, emulator: Emulator) -> None:
        super().__init__(emulator, config=CONFIG)

    def function(self, files: dict[str, str], *, env: dict[str, str] | None = None, **extra: Any) -> str:
        name = self.name("fn")
        self.client("lambda").create_function(
            FunctionName=name,
            Role=self.role,
            Handler=extra.pop("Handler", "app.handler"),
            Runtime="python3.12",
            Code={"ZipFile": _zip(files)},
            Environment={"Variables": env or {}},
            **extra,
        )
        return name

    def mapping(self, function: str, queue_arn: str, **extra: Any) -> str:
        uuid: str = self.client("lambda").create_event_source_mapping(
            EventSourceArn=queue_arn,
            FunctionName=function,
            FunctionResponseTypes=["ReportBatchItemFailures"],
            **extra,
        )["UUID"]
        return uuid

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

    def logs(self, function: str) -> list[str]:
        logs = self.client("logs")
        try:
            events = logs.filter_log_events(logGroupName=f"/aws/lambda/{function}")["events"]
        except logs.exceptions.ResourceNotFoundException:
            return []
        return [e["message"] for e in events]

    def receive_all(self, url: str, *, wait: float = 5.0) -> list[dict[str, Any]]:
        sqs = self.client("sqs")
        found: list[dict[str, Any]] = []
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            got = sqs.receive_message(
                QueueUrl=url,
                MaxNumberOfMessages=10,
                WaitTimeSeconds=1,
                MessageAttributeNames=["All"],
                MessageSystemAttributeNames=["All"],
                VisibilityTimeout=300,
            ).get("Messages", [])
            found.extend(got)
            if found and not got:
                break
        return found


@pytest.fixture(scope="module")
def aws() -> Iterator[Aws]:
    with Emulator() as emulator:
        yield Aws(emulator)


@pytest.fixture(scope="module")
def fast() -> Iterator[Aws]:
    """An emulator whose clock runs 60 times faster: one logical minute per real second."""
    with Emulator(clock_scale=60) as emulator:
        yield Aws(emulator)


class Run:
    def __init__(self, aws: Aws, work_dir: Path) -> None:
        self.events: list[RuntimeEvent] = []
        self.runtime = Runtime(aws.emulator.url, work_dir=work_dir, on_event=self.events.append)
        assert self.runtime.clock == aws.emulator.clock  # read from the emulator itself

    def until(self, predicate: Callable[[], bool], deadline: float = 30.0) -> bool:
        return self.runtime.run(until=predicate, deadline_seconds=deadline, check_every=0.2)

    def of(self, kind: str) -> list[dict[str, Any]]:
        return [e.detail for e in self.events if e.kind == kind]


@pytest.mark.parametrize("mode", ["crash", "hang", "raise"])
def test_a_failed_invocation_returns_the_whole_batch_after_the_visibility_timeout(
    aws: Aws, tmp_path: Path, mode: str
) -> None:
    url, arn = aws.queue("flaky", VisibilityTimeout="2")
    function = aws.function({"app.py": FLAKY}, Timeout=2)
    aws.mapping(function, arn, BatchSize=10)
    sqs = aws.client("sqs")
    sqs.send_message(QueueUrl=url, MessageBody=json.dumps({"mode": mode}))
    sqs.send_message(QueueUrl=url, MessageBody=json.dumps({"mode": "fine"}))
    run = Run(aws, tmp_path)
    assert run.until(lambda: run.runtime.stats["messages_deleted"] == 2 and aws.depth(url) == 0)
    batches = run.of("batch")
    # The whole batch failed. Batches run concurrently: with a visibility timeout no longer than the
    # function's, the redelivered batch can end before the hanging one is stopped, as on AWS.
    (failed,) = [b for b in batches if b["why"]]
    assert failed["kept"] == failed["size"] == 2, batches
    assert {"crash": "exit", "hang": "Task timed out", "raise": "boom"}[mode] in failed["why"]
    assert sum(b["deleted"] for b in batches) == 2  # then each deleted exactly once
    seen = [line for line in aws.logs(function) if line.startswith("seen")]
    assert len(seen) >= 3  # the failing record was delivered twice


def test_functions_are_isolated_and_run_their_deployed_code(aws: Aws, tmp_path: Path) -> None:
    # Both zips have an `app` module and a `serverless_retry` package of their own; neither may
    # see the other's, nor this checkout's serverless_retry, nor the other's environment.
    code = """
    import os, serverless_retry
    STATE = []
    def handler(event, context):
        STATE.append(1)
        print("mark", os.environ["MARK"], serverless_retry.MARKER, len(STATE), "OTHER" in os.environ)
        return None
    """
    functions = []
    for mark in ("one", "two"):
        url, arn = aws.queue("iso")
        name = aws.function(
            {"app.py": code, "serverless_retry/__init__.py": f"MARKER = 'deployed-{mark}'\n"},
            env={"MARK": mark, **({"OTHER": "x"} if mark == "one" else {})},
        )
        aws.mapping(name, arn)
        aws.client("sqs").send_message(QueueUrl=url, MessageBody="{}")
        functions.append((name, url))
    run = Run(aws, tmp_path)
    assert run.until(lambda: all(aws.depth(u) == 0 for _, u in functions))
    assert [line for line in aws.logs(functions[0][0]) if line.startswith("mark")] == [
        "mark one deployed-one 1 True"
    ]
    assert [line for line in aws.logs(functions[1][0]) if line.startswith("mark")] == [
        "mark two deployed-two 1 False"
    ]
    report = [line for line in aws.logs(functions[0][0]) if line.startswith(("START", "END", "REPORT"))]
    assert [line.split()[0] for line in report] == ["START", "END", "REPORT"]


def test_json_logging_config_makes_info_records_visible(aws: Aws, tmp_path: Path) -> None:
    code = """
    import logging
    logger = logging.getLogger("orders")
    def handler(event, context):
        logger.info("order accepted", extra={"order_id": "o-1", "attempt": 1})
        logger.debug("not at INFO")
    """
    url, arn = aws.queue("logs")
    json_fn = aws.function(
        {"app.py": code}, LoggingConfig={"LogFormat": "JSON", "ApplicationLogLevel": "INFO"}
    )
    text_fn = aws.function({"app.py": code})
    aws.mapping(json_fn, arn)
    url2, arn2 = aws.queue("logs")
    aws.mapping(text_fn, arn2)
    for u in (url, url2):
        aws.client("sqs").send_message(QueueUrl=u, MessageBody="{}")
    run = Run(aws, tmp_path)
    assert run.until(lambda: aws.depth(url) == 0 and aws.depth(url2) == 0)
    records = [json.loads(line) for line in aws.logs(json_fn) if line.startswith("{")]
    assert [(r["level"], r["message"], r["order_id"], r["attempt"]) for r in records] == [
        ("INFO", "order accepted", "o-1", 1)
    ]
    assert records[0]["requestId"]
    # Text format: like Lambda, the root logger stays at WARNING, so INFO records are dropped.
    assert not [line for line in aws.logs(text_fn) if "order accepted" in line]


def test_disabled_and_filtered_mappings_are_not_consumed(aws: Aws, tmp_path: Path) -> None:
    function = aws.function({"app.py": "def handler(e, c):\n    return None\n"})
    disabled_url, disabled_arn = aws.queue("off")
    aws.mapping(function, disabled_arn, Enabled=False)
    filtered_url, filtered_arn = aws.queue("filter")
    aws.mapping(
        function, filtered_arn, FilterCriteria={"Filters": [{"Pattern": json.dumps({"body": {"a": [1]}})}]}
    )
    for u in (disabled_url, filtered_url):
        aws.client("sqs").send_message(QueueUrl=u, MessageBody="{}")
    run = Run(aws, tmp_path)
    run.until(lambda: False, deadline=3)
    assert aws.depth(disabled_url) == 1
    assert aws.depth(filtered_url) == 1
    assert any("FilterCriteria" in w["message"] for w in run.of("warning"))


def _at(runtime: Runtime, seconds: float) -> str:
    due = runtime.clock.now() + timedelta(seconds=seconds)
    return f"at({due:%Y-%m-%dT%H:%M:%S})"


def test_schedules_deliver_to_sqs_fifo_sns_and_lambda(fast: Aws, tmp_path: Path) -> None:
    aws = fast
    scheduler, sns = aws.client("scheduler"), aws.client("sns")
    group = aws.name("group")
    scheduler.create_schedule_group(Name=group)
    fifo_url, fifo_arn = aws.queue("fifo", FifoQueue="true", ContentBasedDeduplication="true")
    sub_url, sub_arn = aws.queue("sub")
    topic = sns.create_topic(Name=aws.name("topic"))["TopicArn"]
    sns.subscribe(TopicArn=topic, Protocol="sqs", Endpoint=sub_arn, Attributes={"RawMessageDelivery": "true"})
    target_fn = aws.function({"app.py": "def handler(e, c):\n    print('invoked with', e['n'])\n"})
    fn_arn = aws.client("lambda").get_function(FunctionName=target_fn)["Configuration"]["FunctionArn"]
    run = Run(aws, tmp_path)
    common = {"FlexibleTimeWindow": {"Mode": "OFF"}, "GroupName": group}
    scheduler.create_schedule(
        Name="to-fifo",
        ScheduleExpression=_at(run.runtime, 60),
        ActionAfterCompletion="DELETE",
        Target={
            "Arn": fifo_arn,
            "RoleArn": aws.role,
            "Input": '{"n": 1}',
            "SqsParameters": {"MessageGroupId": "g-7"},
        },
        **common,
    )
    scheduler.create_schedule(
        Name="to-topic",
        ScheduleExpression=_at(run.runtime, 90),
        ActionAfterCompletion="NONE",
        Target={"Arn": topic, "RoleArn": aws.role, "Input": '{"n": 2}'},
        **common,
    )
    scheduler.create_schedule(
        Name="to-lambda",
        ScheduleExpression=_at(run.runtime, 30),
        ActionAfterCompletion="DELETE",
        Target={"Arn": fn_arn, "RoleArn": aws.role, "Input": '{"n": 3}'},
        **common,
    )
    scheduler.create_schedule(
        Name="not-yet",
        ScheduleExpression=_at(run.runtime, 86_400),
        ActionAfterCompletion="DELETE",
        Target={"Arn": fifo_arn, "RoleArn": aws.role, "Input": "{}"},
        **common,
    )
    assert run.until(
        lambda: len(run.of("schedule-fired")) >= 3 and run.runtime.stats["async_invocations"] >= 1
    )
    (fifo_message,) = aws.receive_all(fifo_url)
    assert fifo_message["Body"] == '{"n": 1}'
    assert fifo_message["Attributes"]["MessageGroupId"] == "g-7"
    (topic_message,) = aws.receive_all(sub_url)
    assert topic_message["Body"] == '{"n": 2}'
    assert "invoked with 3" in aws.logs(target_fn)
    left = {s["Name"] for s in scheduler.list_schedules(GroupName=group)["Schedules"]}
    assert left == {"to-topic", "not-yet"}  # DELETE ones are gone; NONE stays but fired once
    assert sorted(f["schedule"] for f in run.of("schedule-fired")) == ["to-fifo", "to-lambda", "to-topic"]
    assert all(f["lateness_logical_s"] >= 0 for f in run.of("schedule-fired"))


def test_a_failing_schedule_is_retried_then_dead_lettered(fast: Aws, tmp_path: Path) -> None:
    aws = fast
    scheduler = aws.client("scheduler")
    dlq_url, dlq_arn = aws.queue("sched-dlq")
    missing = "arn:aws:sqs:us-east-1:123456789012:no-such-queue"
    run = Run(aws, tmp_path)
    name = aws.name("doomed")
    scheduler.create_schedule(
        Name=name,
        ScheduleExpression=_at(run.runtime, 0),
        FlexibleTimeWindow={"Mode": "OFF"},
        ActionAfterCompletion="DELETE",
        Target={
            "Arn": missing,
            "RoleArn": aws.role,
            "Input": '{"order": 9}',
            "RetryPolicy": {"MaximumRetryAttempts": 2, "MaximumEventAgeInSeconds": 3600},
            "DeadLetterConfig": {"Arn": dlq_arn},
        },
    )
    assert run.until(lambda: bool(run.of("schedule-dead-lettered")))
    assert len(run.of("schedule-retry")) == 2
    (dead,) = aws.receive_all(dlq_url)
    assert dead["Body"] == '{"order": 9}'
    attrs = {k: v["StringValue"] for k, v in dead["MessageAttributes"].items()}
    assert attrs["TARGET_ARN"] == missing
    assert attrs["RETRY_ATTEMPTS"] == "2"
    assert attrs["EXHAUSTED_RETRY_CONDITION"] == "MaximumRetryAttemptsExhausted"
    assert "NonExistentQueue" in attrs["ERROR_CODE"]
    assert name not in {s["Name"] for s in scheduler.list_schedules()["Schedules"]}  # DELETE after the DLQ


def test_a_pipe_enriches_and_puts_on_the_bus(aws: Aws, tmp_path: Path) -> None:
    source_url, source_arn = aws.queue("pipe-src")
    sink_url, sink_arn = aws.queue("pipe-sink")
    events = aws.client("events")
    bus = aws.name("bus")
    bus_arn = events.create_event_bus(Name=bus)["EventBusArn"]
    events.put_rule(Name="from-pipe", EventBusName=bus, EventPattern=json.dumps({"source": ["orders.pipe"]}))
    events.put_targets(Rule="from-pipe", EventBusName=bus, Targets=[{"Id": "sink", "Arn": sink_arn}])
    enrich = aws.function(
        {
            "app.py": """
            import json
            def handler(records, context):
                return [{"order": json.loads(r["body"]), "enriched": True} for r in records]
            """
        }
    )
    enrich_arn = aws.client("lambda").get_function(FunctionName=enrich)["Configuration"]["FunctionArn"]
    aws.client("pipes").create_pipe(
        Name=aws.name("pipe"),
        RoleArn=aws.role,
        Source=source_arn,
        SourceParameters={"SqsQueueParameters": {"BatchSize": 5}},
        Enrichment=enrich_arn,
        Target=bus_arn,
        TargetParameters={"EventBridgeEventBusParameters": {"Source": "orders.pipe", "DetailType": "order"}},
    )
    sqs = aws.client("sqs")
    for n in range(3):
        sqs.send_message(QueueUrl=source_url, MessageBody=json.dumps({"n": n}))
    run = Run(aws, tmp_path)
    assert run.until(lambda: run.runtime.stats["pipe_messages"] >= 3 and aws.depth(source_url) == 0)
    delivered = aws.receive_all(sink_url)
    details = sorted((json.loads(m["Body"])["detail"] for m in delivered), key=lambda d: d["order"]["n"])
    assert details == [{"order": {"n": n}, "enriched": True} for n in range(3)]
    assert {json.loads(m["Body"])["detail-type"] for m in delivered} == {"order"}
    assert all(p["ok"] for p in run.of("pipe"))


def test_a_function_runs_on_its_runtime_python_with_only_boto3_besides_its_zip(
    aws: Aws, tmp_path: Path
) -> None:
    from serverless_retry_tools.local.runtime.lambda_python import find_python

    if find_python("3.12") is None:
        pytest.skip("no Python 3.12 on this machine: the worker falls back (with a warning)")
    code = """
    import importlib.util, sys
    def handler(event, context):
        found = [m for m in ("boto3", "botocore", "moto", "pytest", "serverless_retry_tools") if importlib.util.find_spec(m)]
        print("python", "%d.%d" % sys.version_info[:2], ",".join(found))
    """
    url, arn = aws.queue("py")
    function = aws.function({"app.py": code})  # Runtime python3.12
    aws.mapping(function, arn)
    aws.client("sqs").send_message(QueueUrl=url, MessageBody="{}")
    run = Run(aws, tmp_path)
    assert run.until(lambda: aws.depth(url) == 0, deadline=120)  # the first run builds its boto3 once
    assert [line for line in aws.logs(function) if line.startswith("python")] == [
        "python 3.12 boto3,botocore"
    ]
    assert not [w for w in run.of("warning") if function in w["message"]]
