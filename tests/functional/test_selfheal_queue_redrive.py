"""The operator's tools on the self-healing pattern's retry-exhausted queue (in-process moto SQS, a
recording Lambda client): inspect summarises ExhaustedRecords, the filters select from them, and a
redrive re-invokes the function that failed, sending before deleting, never to a queue."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError
from moto import mock_aws
from serverless_retry.clock import FrozenClock
from serverless_retry.handlers import redrive_queue
from serverless_retry.redrive.options import OptionsError, options_from_mapping
from serverless_retry.redrive.queue import decode, inspect, redrive
from serverless_retry.selfheal.records import failure_detail
from serverless_retry.selfheal.state import read
from serverless_retry_tools import cli

from tests.functional.redrive_world import World, event, make_world

ARN = "arn:aws:lambda:us-east-1:123456789012:function"
NOW = datetime(2026, 11, 30, 10, 5, tzinfo=UTC)


@dataclass
class FakeLambda:
    """Records asynchronous invokes; ``errors`` (by call number, from 1) raise that AWS error code."""

    calls: list[dict[str, Any]] = field(default_factory=list)
    errors: dict[int, str] = field(default_factory=dict)

    def invoke(self, **params: Any) -> dict[str, Any]:
        code = self.errors.get(len(self.calls) + 1)
        if code is not None:
            self.calls.append({"failed": code, **params})
            raise ClientError({"Error": {"Code": code, "Message": "refused"}}, "Invoke")
        self.calls.append(params)
        return {"StatusCode": 202}

    @property
    def invoked(self) -> list[tuple[str, Any]]:
        return [(c["FunctionName"], json.loads(c["Payload"])) for c in self.calls if "failed" not in c]


def exhausted_record(destination: str, outcome: str, reason: str, message_id: str = "f-1") -> str:
    """An ExhaustedRecord as an exhausted rule's InputTransformer writes it, from a real-shaped record."""
    body = json.dumps(event(destination))
    detail = failure_detail({"messageId": message_id, "body": body}, NOW)
    return json.dumps({"outcome": outcome, "reason": reason, "detail": detail})


@pytest.fixture
def live() -> Iterator[World]:
    with mock_aws():
        yield make_world(boto3.client("sqs", region_name="us-east-1"), FrozenClock())


def _seed(world: World) -> None:
    """Four self-healing records (three functions, three outcomes) and one consumer final envelope."""
    sends = [
        ("destination-sns-redriven.json", "exhausted", "retry budget of orders-fn (3 retries) spent"),
        ("destination-sns-keyerror.json", "non-retryable", "the error type is in the do-not-retry list"),
        ("destination-eventbridge-redriven.json", "exhausted", "retry budget of orders-fn (3 retries) spent"),
        ("destination-direct-redriven.json", "exhausted", "retry budget of reindex-fn (2 retries) spent"),
    ]
    for n, (name, outcome, reason) in enumerate(sends):
        body = exhausted_record(name, outcome, reason, message_id=f"f-{n}")
        world.sqs.send_message(QueueUrl=world.exhausted, MessageBody=body)
        world.later(60)
    world.final("consumer-order", TimeoutError("slow"))


def _redrive(world: World, fake: FakeLambda, **given: Any) -> Any:
    world.tick()
    options = options_from_mapping({"from_queue_url": world.exhausted, **given})
    return redrive(world.sqs, options, clock=world.clock, wait_seconds=0, lambda_client=fake)


def test_inspect_summarises_self_healing_records_by_outcome_error_function_and_age(live: World) -> None:
    _seed(live)
    live.tick()
    seen = inspect(live.sqs, live.exhausted, clock=live.clock, wait_seconds=0)
    assert seen.by_outcome == {"exhausted": 4, "non-retryable": 1}
    assert seen.by_error_type == {"HTTPError": 1, "KeyError": 1, "ConnectionError": 1, "TimeoutError": 2}
    assert seen.by_source == {
        f"{ARN}:orders-fn": 2,
        f"{ARN}:invoices-fn": 1,
        f"{ARN}:reindex-fn": 1,
        "arn:aws:sqs:us-east-1:123456789012:orders": 1,  # the consumer's envelope: its source queue
    }
    assert seen.by_origin == {"self-healing": 4, "serverless-retry": 1}
    assert seen.by_age["< 1 h"] == 5
    oldest = seen.oldest[0]
    assert (oldest.kind, oldest.envelope_id, oldest.attempt, oldest.reason) == (
        "self-healing",
        "95df01b4-ee98-5cb9-9903-4c221d41eb5e",  # the SNS MessageId: the retry id
        3,
        "retry budget of orders-fn (3 retries) spent",
    )
    assert live.counts(live.exhausted) == (5, 0), "inspect leaves every message in place"


@pytest.mark.parametrize(
    ("filters", "functions"),
    [
        ({"outcome": "non-retryable"}, ["invoices-fn"]),
        ({"error_type": ["HTTPError", "ConnectionError"]}, ["orders-fn", "orders-fn"]),
        ({"source": "reindex-fn"}, ["reindex-fn"]),  # a function's name matches its ARN
        ({"source": f"{ARN}:orders-fn", "error_type": "HTTPError"}, ["orders-fn"]),
    ],
)
def test_filters_select_self_healing_records(
    live: World, filters: dict[str, Any], functions: list[str]
) -> None:
    _seed(live)
    fake = FakeLambda()
    report = _redrive(live, fake, to_function=True, **filters)
    assert sorted(name.rsplit(":", 1)[1] for name, _ in fake.invoked) == sorted(functions)
    assert len(report.moved) == len(functions)
    assert report.failed == [], "the consumer's envelope is filtered out"


def test_redrive_to_function_continues_the_retry_state_and_deletes_after_the_invoke(live: World) -> None:
    _seed(live)
    fake = FakeLambda()
    report = _redrive(live, fake, to_function=True, error_type="HTTPError")
    ((function, payload),) = fake.invoked
    assert function == f"{ARN}:orders-fn"  # unqualified: as the pattern's own redrive invokes it
    assert fake.calls[0]["InvocationType"] == "Event"
    carried = read(payload)
    original = event("destination-sns-redriven.json")["requestPayload"]
    assert carried.state is not None
    assert (carried.state["id"], carried.state["attempt"], carried.state["first_failed_at"]) == (
        "95df01b4-ee98-5cb9-9903-4c221d41eb5e",
        4,  # the record was attempt 3: a failure now is exhausted at once, no second retry storm
        "2026-11-30T10:00:04Z",
    )
    assert read(original).event == carried.event, "the event exactly as it first arrived"
    assert (len(report.moved), report.complete) == (1, True)
    assert live.counts(live.exhausted) == (4, 0)


def test_reset_attempts_invokes_with_the_event_as_it_first_arrived(live: World) -> None:
    _seed(live)
    fake = FakeLambda()
    _redrive(live, fake, to_function=True, source="reindex-fn", reset_attempts=True)
    ((function, payload),) = fake.invoked
    original = read(event("destination-direct-redriven.json")["requestPayload"]).event
    assert (function, payload) == (f"{ARN}:reindex-fn", original)
    assert read(payload).state is None


def test_dry_run_invokes_nothing_and_changes_nothing(live: World) -> None:
    _seed(live)
    fake = FakeLambda()
    report = _redrive(live, fake, to_function=True, dry_run=True)
    assert fake.calls == []
    assert len(report.moved) == 4
    (refused,) = report.failed  # the consumer's envelope: not a failed invocation
    assert "not a record of a failed invocation" in refused[1]
    assert live.counts(live.exhausted) == (5, 0)


def test_a_queue_destination_refuses_self_healing_records_and_keeps_them(live: World) -> None:
    _seed(live)
    fake = FakeLambda()
    report = _redrive(live, fake, to_queue_url=live.source)
    assert [m.envelope_id for m in report.moved] == ["id-consumer-order"]
    assert len(report.failed) == 4
    assert {why for _, why in report.failed} == {
        "a self-healing record: no queue's consumer takes it; re-invoke the function that failed with "
        "serverless-retry redrive --to-function"
    }
    assert live.counts(live.exhausted) == (4, 0)
    assert live.counts(live.source) == (1, 0)
    assert fake.calls == []


def test_a_named_function_takes_only_its_own_records(live: World) -> None:
    _seed(live)
    fake = FakeLambda()
    report = _redrive(live, fake, to_function="orders-fn:live", outcome="exhausted")
    assert [name for name, _ in fake.invoked] == ["orders-fn:live", "orders-fn:live"]
    refused = sorted(why for _, why in report.failed)
    assert refused[0].startswith("failed in reindex-fn, not in orders-fn:live")
    assert live.counts(live.exhausted) == (3, 0)  # invoices-fn, reindex-fn and the consumer's stay


def test_an_invalid_failure_record_is_refused_with_the_reason(live: World) -> None:
    broken = failure_detail({"messageId": "f-9", "body": "not json"}, NOW)
    body = json.dumps({"outcome": "invalid-failure-record", "reason": "unreadable", "detail": broken})
    live.sqs.send_message(QueueUrl=live.exhausted, MessageBody=body)
    fake = FakeLambda()
    report = _redrive(live, fake, to_function=True)
    ((_, why),) = report.failed
    assert why.startswith("an invalid failure record: its payload is the raw failure-queue body")
    assert fake.calls == []
    assert live.counts(live.exhausted) == (1, 0)


def test_an_invoke_failure_mid_run_loses_nothing(live: World) -> None:
    _seed(live)
    fake = FakeLambda(errors={2: "TooManyRequestsException"})
    report = _redrive(live, fake, to_function=True, outcome="exhausted")
    assert len(fake.invoked) == 1
    assert "TooManyRequestsException" in str(report.stopped)
    assert live.counts(live.exhausted) == (4, 0), "only the invoked record was deleted"


def test_a_deleted_function_fails_its_records_alone(live: World) -> None:
    _seed(live)
    fake = FakeLambda(errors={1: "ResourceNotFoundException"})
    report = _redrive(live, fake, to_function=True, outcome="exhausted")
    assert (len(report.failed), len(report.moved), report.stopped) == (2, 2, None)  # + the envelope
    assert live.counts(live.exhausted) == (3, 0)


def test_destination_records_and_the_enrichments_last_resort_go_back_to_their_function(live: World) -> None:
    raw = event("destination-sns-retries-exhausted.json")
    live.sqs.send_message(QueueUrl=live.dlq, MessageBody=json.dumps(raw))  # e.g. the failure queue's DLQ
    compact = {"outcome": "too-large-for-bus", "reason": "too large", "retry_id": "r-1", "attempt": 1}
    live.sqs.send_message(
        QueueUrl=live.dlq,
        MessageBody=json.dumps(event("destination-eventbridge-retries-exhausted.json")),
        MessageAttributes={"serverless_retry": {"DataType": "String", "StringValue": json.dumps(compact)}},
    )
    live.tick()
    kinds = sorted((m.kind, m.origin) for m in map(decode, live.all_messages(live.dlq)))  # type: ignore[arg-type]
    assert kinds == [("plain", "lambda-destination"), ("self-healing", "self-healing")]
    fake = FakeLambda()
    options = options_from_mapping({"from_queue_url": live.dlq, "to_function": True})
    live.tick()
    report = redrive(live.sqs, options, clock=live.clock, wait_seconds=0, lambda_client=fake)
    assert (len(report.moved), report.failed) == (2, [])
    states = sorted((f, read(p).state["attempt"]) for f, p in fake.invoked)  # type: ignore[index]
    assert states == [(f"{ARN}:orders-fn", 2), (f"{ARN}:orders-fn", 2)]


def test_the_lambda_form_refuses_to_function_and_says_where_to_do_it(live: World) -> None:
    """Its role may invoke no function (a grant on whatever a record names would be no scoped grant):
    refused before any message is touched, pointing to the command."""
    _seed(live)
    environ = {
        redrive_queue.ENV_FROM_QUEUE_URLS: live.exhausted,
        redrive_queue.ENV_TO_QUEUE_URL: live.source,
    }
    for value in (True, "invoices-fn"):
        with pytest.raises(OptionsError, match="to_function: this function re-invokes no function") as caught:
            redrive_queue.run({"to_function": value}, None, sqs=live.sqs, environ=environ)
        assert "serverless-retry redrive --from-queue-url URL --to-function" in str(caught.value)
    assert live.counts(live.exhausted) == (5, 0)


def test_the_cli_redrives_to_the_function_and_refuses_a_queue(
    live: World, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from serverless_retry_tools.commands import redrive as command

    _seed(live)
    fake = FakeLambda()
    monkeypatch.setattr(command, "lambda_client", lambda args: fake)
    common = ["redrive", "--from-queue-url", live.exhausted]
    assert cli.main([*common, "--to-queue-url", live.source, "--source", "invoices-fn", "--yes"]) == 1
    assert "a self-healing record: no queue's consumer takes it" in capsys.readouterr().err
    assert cli.main([*common, "--to-function", "--source", "invoices-fn", "--dry-run"]) == 0
    assert "dry run: would move 1, would skip 4 (to the function that failed: 1 history kept)" in (
        capsys.readouterr().out
    )
    assert cli.main([*common, "--to-function", "--source", "invoices-fn", "--yes"]) == 0
    assert "moved 1, skipped 4, failed 0" in capsys.readouterr().out
    assert [name for name, _ in fake.invoked] == [f"{ARN}:invoices-fn"]
    assert cli.main([*common, "--to-function", "--to-queue-url", live.source]) == 2
    assert "not both" in capsys.readouterr().err


def test_native_says_why_it_cannot_move_self_healing_records(live: World) -> None:
    from serverless_retry.redrive.native import check_native

    _seed(live)
    live.tick()
    check = check_native(live.sqs, live.exhausted, None)
    assert not check.applies
    assert any("self-healing records" in p and "--to-function" in p for p in check.problems)
    assert live.counts(live.exhausted) == (5, 0)
