"""Self-healing failure records over 256 KiB, redriven from S3, on the emulator: modules/self-healing
with its defaults but for the source's on_failure = "s3" (tests/integration/fixtures/selfheal-large).
An async invoke of a ~400 KiB event fails; Lambda's record goes to the module's bucket, its S3 event to
the failure queue, the enrichment puts a pointer on the bus, and the redrive reads the event back from
S3 and invokes the source again, which then succeeds with the event intact. An event that can never
succeed ends in the retry-exhausted queue with its pointer and reason."""

from __future__ import annotations

import hashlib
import json
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.config import Config
from serverless_retry_tools.local.runtime.runtime import Runtime

from tests.integration.test_selfheal_emulator import Aws, aws  # noqa: F401 (aws is a fixture)
from tests.terraform.stack import Applied

pytestmark = pytest.mark.integration

CONFIG = Config(retries={"mode": "standard", "max_attempts": 5})
BLOB_BYTES = 400_000  # over the 262,144 bytes the failure queue (and SQS's old limit) takes
PREFIX = "aws/lambda/async/shl-source/"


class Drive:
    def __init__(self, stack: Applied, work_dir: Path) -> None:
        self.out = stack.outputs["source"]
        kwargs = stack.emulator.client_kwargs()
        self.sqs = boto3.client("sqs", config=CONFIG, **kwargs)
        self.lam = boto3.client("lambda", config=CONFIG, **kwargs)
        self.s3 = boto3.client("s3", config=CONFIG, **kwargs)
        self._stack, self._work_dir, self._runs = stack, work_dir, 0
        self.outcomes: list[dict[str, Any]] = []
        self.exhausted: list[dict[str, Any]] = []

    def invoke(self, event: dict[str, Any]) -> None:
        payload = json.dumps(event)
        assert len(payload.encode()) > 262_144
        response = self.lam.invoke(
            FunctionName=self.out["function_name"], InvocationType="Event", Payload=payload
        )
        assert response["StatusCode"] == 202

    def _drain(self, url: str, into: list[dict[str, Any]]) -> None:
        for _ in range(5):  # bounded
            got = self.sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, WaitTimeSeconds=0)
            messages = got.get("Messages", [])
            for m in messages:
                into.append(json.loads(m["Body"]))
                self.sqs.delete_message(QueueUrl=url, ReceiptHandle=m["ReceiptHandle"])
            if not messages:
                return

    def run_until(self, done: Any, *, deadline: float = 180.0) -> None:
        def until() -> bool:
            self._drain(self.out["outcomes_queue_url"], self.outcomes)
            self._drain(self.out["exhausted_queue_url"], self.exhausted)
            return bool(done())

        # A runtime runs once (run() stops it): one per wait.
        self._runs += 1
        work_dir = self._work_dir / f"run-{self._runs}"
        work_dir.mkdir()
        emulator = self._stack.emulator
        runtime = Runtime(emulator.url, region=emulator.region, work_dir=work_dir)
        assert runtime.run(until=until, deadline_seconds=deadline, check_every=0.5), (
            f"outcomes {self.outcomes}, exhausted {[e.get('outcome') for e in self.exhausted]}, "
            f"records {self.records()}"
        )

    def records(self) -> dict[str, int]:
        """The failure records Lambda wrote, by key, with their sizes."""
        listed = self.s3.list_objects_v2(Bucket=self.out["bucket"]["name"], Prefix=PREFIX)
        return {o["Key"]: o["Size"] for o in listed.get("Contents", [])}


@pytest.fixture(scope="module")
def drive(selfheal_large_stack: Applied, tmp_path_factory: pytest.TempPathFactory) -> Drive:
    # The stack applied once per run (tests/terraform/stack.py STACKS), in the background.
    return Drive(selfheal_large_stack, tmp_path_factory.mktemp("shl-runtime"))


def _blob(tag: str) -> str:
    return (tag * (BLOB_BYTES // len(tag) + 1))[:BLOB_BYTES]


def test_a_record_over_256_kib_is_redriven_from_s3(drive: Drive) -> None:
    blob = _blob("flaky-0123456789")
    started = time.monotonic()
    drive.invoke({"id": "flaky-1", "kind": "flaky", "blob": blob})
    drive.run_until(lambda: any(o["id"] == "flaky-1" for o in drive.outcomes))
    [outcome] = [o for o in drive.outcomes if o["id"] == "flaky-1"]
    # The second attempt (a redrive) got the event exactly as it was first sent.
    assert outcome == {
        "id": "flaky-1",
        "attempt": 2,
        "blob_bytes": BLOB_BYTES,
        "blob_sha256": hashlib.sha256(blob.encode()).hexdigest(),
    }
    # Its first failure is in the bucket as Lambda writes it: one object over 256 KiB.
    records = drive.records()
    assert len(records) == 1, records
    [(key, size)] = records.items()
    assert size > 262_144
    document = json.loads(drive.s3.get_object(Bucket=drive.out["bucket"]["name"], Key=key)["Body"].read())
    assert document["requestContext"]["condition"] == "RetriesExhausted"
    assert document["requestPayload"]["blob"] == blob
    assert [e for e in drive.exhausted if e["detail"]["meta"]["function_name"] == "shl-source"] == []
    print(f"redriven from S3 in {time.monotonic() - started:.1f} s")


def test_a_record_that_keeps_failing_is_exhausted_with_its_pointer_and_reason(drive: Drive) -> None:
    drive.invoke({"id": "broken-1", "kind": "broken", "blob": _blob("broken-")})

    def exhausted() -> list[dict[str, Any]]:
        return [e for e in drive.exhausted if (e["detail"].get("payload_ref") or {}).get("key", "") != ""]

    drive.run_until(exhausted)
    [record] = exhausted()
    assert record["outcome"] == "non-retryable"
    assert "NonRetryableError" in record["reason"]
    detail = record["detail"]
    assert detail["payload"] is None  # the event stays in S3: the pointer says where
    assert detail["meta"]["error_type"] == "NonRetryableError"
    assert "can never be processed" in detail["meta"]["error_message"]
    ref = detail["payload_ref"]
    assert ref["bucket"] == drive.out["bucket"]["name"]
    assert ref["key"].startswith(PREFIX)
    body = drive.s3.get_object(Bucket=ref["bucket"], Key=ref["key"])["Body"].read()
    assert (len(body), hashlib.sha256(body).hexdigest()) == (ref["size"], ref["sha256"])
    assert json.loads(body)["requestPayload"]["id"] == "broken-1"


# --- without the S3 option: a record over the queue's limit is lost, as on AWS -----------------------


def test_a_record_over_an_sqs_destinations_limit_is_lost_and_counted(aws: Aws) -> None:  # noqa: F811
    record_url, _ = aws.queue("record")
    # As modules/self-healing makes its failure queue (SQS's default is 1 MiB now; hashicorp/aws 5.x
    # stops at 262,144).
    destination_url, destination_arn = aws.queue("destination", MaximumMessageSize="262144")
    name, _ = aws.function(fail="x", record_url=record_url)
    aws.client("lambda").put_function_event_invoke_config(
        FunctionName=name,
        MaximumRetryAttempts=0,
        DestinationConfig={"OnFailure": {"Destination": destination_arn}},
    )
    payload = json.dumps({"blob": "b" * 300_000})
    aws.client("lambda").invoke(FunctionName=name, InvocationType="Event", Payload=payload)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and not [
        f for f in aws.of("destination-failed") if f["function"] == name
    ]:
        time.sleep(0.2)
    [failed] = [f for f in aws.of("destination-failed") if f["function"] == name]
    assert "Message must be shorter than 262144 bytes" in failed["error"]
    sqs = aws.client("sqs")
    assert sqs.receive_message(QueueUrl=destination_url, WaitTimeSeconds=0).get("Messages", []) == []
    now = aws.emulator.clock.now()
    datapoints: list[dict[str, Any]] = []
    for _ in range(20):  # bounded: the metric goes out from a thread
        datapoints = aws.client("cloudwatch").get_metric_statistics(
            Namespace="AWS/Lambda",
            MetricName="DestinationDeliveryFailures",
            Dimensions=[{"Name": "FunctionName", "Value": name}],
            StartTime=now - timedelta(days=1),
            EndTime=now + timedelta(days=1),
            Period=86_400,
            Statistics=["Sum"],
        )["Datapoints"]
        if datapoints:
            break
        time.sleep(0.25)
    assert sum(d["Sum"] for d in datapoints) == 1.0
