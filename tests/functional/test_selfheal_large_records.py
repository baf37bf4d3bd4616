"""Self-healing failure records too large for the failure queue, written by Lambda to S3: the
enrichment reads them through the bucket's S3 notification and puts a pointer on the bus, the redrive
reads the payload back through it and invokes the source with it (in-process moto)."""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any
from urllib.parse import quote_plus

import boto3
import pytest
from botocore.exceptions import ClientError
from serverless_retry.aws import AwsClients
from serverless_retry.selfheal.enrichment import (
    PUTEVENTS_MAX_BYTES,
    Enricher,
    EnrichmentDeliveryError,
    entry_bytes,
)
from serverless_retry.selfheal.redrive import Redriver
from serverless_retry.selfheal.state import read
from serverless_retry.selfheal.stored import RecordChanged, RecordGone
from serverless_retry.testing import record_calls

from tests.functional.test_selfheal_handlers import (  # noqa: F401 (stack is a fixture)
    REGION,
    Stack,
    enrichment_settings,
    redrive_settings,
    stack,
)
from tests.selfheal_corpus import REINDEX_ARN, bus_event, destination_record, pipe_record
from tests.unit.test_local_async_runner import FakeFunctions, FakeRuntime, failed, queued, runner

BUCKET = "orders-self-healing-failure-records"
KEY = "aws/lambda/async/reindex-fn/2026/11/30/2026-11-30T10.00.04-0b1c2d3e-4f50-6172-8394-a5b6c7d8e9f0"
LARGE = {"document": "d" * 400_000, "id": 7}  # over the 256 KiB a queue message and a bus entry take


def s3_event(bucket: str = BUCKET, key: str = KEY, size: int = 0) -> dict[str, Any]:
    """The S3 ObjectCreated notification SQS receives for ``key`` (keys URL-encoded, as S3 sends)."""
    return {
        "Records": [
            {
                "eventVersion": "2.1",
                "eventSource": "aws:s3",
                "awsRegion": REGION,
                "eventTime": "2026-11-30T10:00:04.600Z",
                "eventName": "ObjectCreated:Put",
                "s3": {
                    "s3SchemaVersion": "1.0",
                    "configurationId": "failure-records",
                    "bucket": {"name": bucket, "arn": f"arn:aws:s3:::{bucket}"},
                    "object": {"key": quote_plus(key), "size": size, "sequencer": "0065F1"},
                },
            }
        ]
    }


class World:
    def __init__(self, moto: Stack) -> None:
        self.stack = moto
        self.s3 = boto3.client("s3", region_name=REGION)
        self.s3.create_bucket(Bucket=BUCKET)
        clients = AwsClients.of(
            sqs=moto.sqs, scheduler=moto.scheduler, sns=moto.sns, lambda_=moto.lambda_, s3=self.s3
        )
        self.enricher = Enricher(enrichment_settings(moto), clients=clients, clock=moto.clock)
        self.redriver = Redriver(redrive_settings(moto), clients=clients, clock=moto.clock)

    def store(self, payload: Any, *, function: str = "reindex-fn", key: str = KEY) -> bytes:
        """What Lambda's S3 destination writes: the whole invocation record as one JSON object."""
        body = json.dumps(destination_record(payload, function=function)).encode()
        self.s3.put_object(Bucket=BUCKET, Key=key, Body=body)
        return body

    def enrich(self, key: str = KEY) -> list[Any]:
        return self.enricher([pipe_record(s3_event(key=key), "m-s3")])


@pytest.fixture
def world(stack: Stack) -> World:  # noqa: F811 (the imported fixture)
    return World(stack)


def test_a_record_over_256_kib_is_redriven_from_s3(world: World) -> None:
    body = world.store(LARGE)
    assert len(body) > 262_144
    [detail] = world.enrich()
    assert detail["payload"] is None  # the payload stays in S3
    assert detail["payload_ref"] == {
        "bucket": BUCKET,
        "key": KEY,
        "size": len(body),
        "sha256": hashlib.sha256(body).hexdigest(),
    }
    assert detail["meta"]["function_name"] == "reindex-fn"
    assert entry_bytes(len(json.dumps(detail))) < PUTEVENTS_MAX_BYTES
    calls = record_calls(world.stack.lambda_)
    plan = world.redriver(bus_event(detail))
    assert plan.action == "invoke"
    [(operation, params)] = calls
    assert (operation, params["FunctionName"], params["InvocationType"]) == ("Invoke", REINDEX_ARN, "Event")
    assert len(params["Payload"].encode()) > 262_144
    delivered = read(json.loads(params["Payload"]))
    assert delivered.event == LARGE
    assert delivered.state is not None
    assert delivered.state["attempt"] == 2


def test_a_small_record_in_s3_goes_inline_with_its_pointer(world: World) -> None:
    world.store({"id": 1})
    [detail] = world.enrich()
    assert detail["payload"] == {"id": 1}
    assert detail["payload_ref"]["key"] == KEY
    world.s3.delete_object(Bucket=BUCKET, Key=KEY)  # the inline payload is enough
    assert world.redriver(bus_event(detail)).action == "invoke"


def test_a_record_changed_since_enrichment_is_refused(world: World) -> None:
    world.store(LARGE)
    [detail] = world.enrich()
    world.store({**LARGE, "id": 8})  # same key, other bytes
    calls = record_calls(world.stack.lambda_)
    with pytest.raises(RecordChanged, match="changed since it was read"):
        world.redriver(bus_event(detail))
    assert calls == []
    assert world.stack.messages("exhausted") == []


def test_a_record_gone_before_the_redrive_raises_and_invokes_nothing(world: World) -> None:
    world.store(LARGE)
    [detail] = world.enrich()
    world.s3.delete_object(Bucket=BUCKET, Key=KEY)
    calls = record_calls(world.stack.lambda_)
    with pytest.raises(RecordGone, match="is gone"):
        world.redriver(bus_event(detail))
    assert calls == []


def test_a_record_gone_before_the_enrichment_is_an_invalid_record_with_its_reason(world: World) -> None:
    [detail] = world.enrich()  # the notification names an object that is not there
    assert detail["meta"]["error_type"] == "InvalidFailureRecord"
    assert f"s3://{BUCKET}/{KEY} is gone" in detail["meta"]["problem"]
    assert json.loads(detail["payload"]) == s3_event()  # the notification itself, kept for a person


def test_a_failed_get_object_fails_the_batch(world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    world.store(LARGE)

    def throttled(**_: Any) -> Any:
        raise ClientError({"Error": {"Code": "SlowDown", "Message": "reduce your rate"}}, "GetObject")

    monkeypatch.setattr(world.s3, "get_object", throttled)
    with pytest.raises(EnrichmentDeliveryError, match="GetObject"):
        world.enrich()
    assert world.stack.messages("exhausted") == []


def test_the_exhausted_path_keeps_the_pointer_and_reads_nothing(world: World) -> None:
    world.store(LARGE, function="unknown-fn", key=KEY.replace("reindex-fn", "unknown-fn"))
    [detail] = world.enrich(KEY.replace("reindex-fn", "unknown-fn"))
    world.s3.delete_object(Bucket=BUCKET, Key=KEY.replace("reindex-fn", "unknown-fn"))
    plan = world.redriver(bus_event(detail))
    assert plan.outcome == "unknown-source"
    [message] = world.stack.messages("exhausted")
    body = json.loads(message["Body"])
    assert body["outcome"] == "unknown-source"
    assert body["detail"]["payload"] is None
    assert body["detail"]["payload_ref"] == detail["payload_ref"]


def test_s3_test_events_are_skipped(world: World) -> None:
    test_event = {"Service": "Amazon S3", "Event": "s3:TestEvent", "Bucket": BUCKET}
    world.store({"id": 1})
    events = world.enricher([pipe_record(test_event, "m-test"), pipe_record(s3_event(), "m-s3")])
    assert [e["meta"]["failure_message_id"] for e in events] == ["m-s3"]


# --- the emulator's async path: S3 destinations, and records too large for a queue ------------------


def test_the_emulator_writes_a_failure_record_to_an_s3_destination_as_lambda_does() -> None:
    config = {
        "MaximumRetryAttempts": 0,
        "DestinationConfig": {"OnFailure": {"Destination": f"arn:aws:s3:::{BUCKET}"}},
    }
    rt = FakeRuntime(FakeFunctions([failed()]), config)
    payload = json.dumps(LARGE)
    runner(rt).handle(queued(payload=payload))
    [(operation, params)] = rt.calls
    assert (operation, params["Bucket"]) == ("put_object", BUCKET)
    # aws/lambda/async/<function-name>/YYYY/MM/DD/YYYY-MM-DDTHH.MM.SS-<random UUID>
    assert re.fullmatch(
        r"aws/lambda/async/fn/2026/11/30/2026-11-30T10\.00\.00-[0-9a-f-]{36}", params["Key"]
    ), params["Key"]
    record = json.loads(params["Body"])
    assert record["requestPayload"] == LARGE
    assert record["requestContext"]["condition"] == "RetriesExhausted"
    assert [k for k, _ in rt.events][-1] == "destination"


def test_a_notification_of_an_object_outside_lambdas_prefix_is_not_read(world: World) -> None:
    other = "uploads/2026/11/30/report.json"
    world.s3.put_object(Bucket=BUCKET, Key=other, Body=json.dumps(destination_record({"id": 1})).encode())
    [detail] = world.enrich(other)
    assert detail["meta"]["error_type"] == "InvalidFailureRecord"
    assert "not under aws/lambda/async/" in detail["meta"]["problem"]


def test_keys_are_read_decoded_as_s3_encodes_them(world: World) -> None:
    key = KEY.replace("0b1c2d3e", "0b1c 2d3e+")  # S3 sends "0b1c+2d3e%2B"
    world.store({"id": 3}, key=key)
    [detail] = world.enrich(key)
    assert detail["payload"] == {"id": 3}
    assert detail["payload_ref"]["key"] == key
