"""Redrive out of the retry-exhausted queue and a DLQ on in-process moto: every filter, dry run,
send-before-delete under failures, history kept or reset, FIFO destinations, and decoding every
kind of message an operator finds there."""

from __future__ import annotations

import json
from typing import Any

import pytest
from botocore.exceptions import ClientError
from serverless_retry.clock import FrozenClock
from serverless_retry.envelope import encode, unwrap
from serverless_retry.redrive.options import RedriveOptions, options_from_mapping
from serverless_retry.redrive.queue import ExhaustedMessage, OutgoingMessage, decode, redrive

from tests.functional.redrive_world import ORDERS_ARN, PAYMENTS_ARN, World, event, make_world


@pytest.fixture
def world(aws: None, clock: FrozenClock) -> World:
    import boto3

    return make_world(boto3.client("sqs", region_name="us-east-1"), clock)


def _options(world: World, **given: Any) -> RedriveOptions:
    return options_from_mapping({"from_queue_url": world.exhausted, "to_queue_url": world.source, **given})


def _run(world: World, **given: Any) -> Any:
    world.tick()
    return redrive(world.sqs, _options(world, **given), clock=world.clock, wait_seconds=0)


def _bodies(world: World, url: str) -> list[str]:
    return sorted(decode(m).body for m in world.all_messages(url))  # type: ignore[arg-type]


def _mixed(world: World) -> None:
    """Six messages, oldest first, 1 h apart: outcomes, error types and sources all differ."""
    world.final("a", TimeoutError("slow"))
    world.later(3600)
    world.final("b", TimeoutError("slow"), source=PAYMENTS_ARN)
    world.later(3600)
    world.final("c", ValueError("bad"), outcome="non-retryable")
    world.later(3600)
    world.final("d", ConnectionError("reset"))
    world.later(3600)
    world.final("e", KeyError("k"), outcome="non-retryable", source=PAYMENTS_ARN)
    world.later(3600)
    world.final("f", TimeoutError("slow"))
    world.later(60)  # f is a minute old, a is 5 h 1 min old


@pytest.mark.parametrize(
    ("filters", "moved"),
    [
        ({"outcome": "exhausted"}, ["a", "b", "d", "f"]),
        ({"outcome": ["non-retryable"]}, ["c", "e"]),
        ({"error_type": "TimeoutError"}, ["a", "b", "f"]),
        ({"error_type": ["ValueError", "KeyError"]}, ["c", "e"]),
        ({"source": "payments"}, ["b", "e"]),  # a queue name matches its ARN
        ({"source": ORDERS_ARN}, ["a", "c", "d", "f"]),
        ({"older_than": "3h"}, ["a", "b", "c"]),  # c is 3 h 1 min old
        ({"newer_than": "90m"}, ["e", "f"]),
        ({"older_than": "1h", "newer_than": "4h"}, ["c", "d", "e"]),
        ({"outcome": "exhausted", "error_type": "TimeoutError", "older_than": "2h"}, ["a", "b"]),
    ],
)
def test_each_filter_moves_exactly_what_it_selects(
    world: World, filters: dict[str, Any], moved: list[str]
) -> None:
    _mixed(world)
    report = _run(world, reset_attempts=True, **filters)
    assert sorted(m.body for m in report.moved) == moved
    assert _bodies(world, world.source) == moved
    rest = sorted(set("abcdef") - set(moved))
    assert _bodies(world, world.exhausted) == rest  # the others stayed, visible again
    assert world.counts(world.exhausted) == (len(rest), 0)
    assert (len(report.skipped), report.failed, report.complete) == (len(rest), [], True)


def test_max_moves_at_most_that_many(world: World) -> None:
    _mixed(world)
    report = _run(world, max=2)
    assert len(report.moved) == 2
    assert world.counts(world.source) == (2, 0)
    assert world.counts(world.exhausted) == (4, 0)


def test_dry_run_changes_nothing_and_lists_what_a_real_run_moves(world: World) -> None:
    _mixed(world)
    before = sorted((m["MessageId"], m["Body"]) for m in world.all_messages(world.exhausted))
    dry = _run(world, outcome="exhausted", older_than="2h", dry_run=True)
    assert world.counts(world.source) == (0, 0)
    assert world.counts(world.exhausted) == (6, 0)  # all visible again right after
    assert sorted((m["MessageId"], m["Body"]) for m in world.all_messages(world.exhausted)) == before
    real = _run(world, outcome="exhausted", older_than="2h")
    assert sorted(m.message_id for m in dry.moved) == sorted(m.message_id for m in real.moved)
    assert len(real.moved) == 3


def test_history_is_kept_by_default_as_the_next_attempt(world: World) -> None:
    retry_id = world.final('{"order":"o-1"}', TimeoutError("slow"))
    report = _run(world)
    assert len(report.moved) == 1
    [sent] = world.all_messages(world.source)
    incoming = unwrap(sent["Body"], {}, message_id=sent["MessageId"], source=ORDERS_ARN)
    assert incoming.kind == "envelope"  # the consumer accepts it as a retry envelope
    assert incoming.context.id == retry_id  # the idempotency key survives
    assert incoming.context.attempt == 6  # past a budget of 5: a new failure is exhausted at once
    assert [h["transport"] for h in incoming.context.history] == ["sqs-delay", "redrive"]
    assert incoming.context.history[-1]["error_type"] == "TimeoutError"
    assert incoming.body == '{"order":"o-1"}'
    assert incoming.attributes == {"tenant": {"DataType": "String", "StringValue": "acme"}}


def test_reset_attempts_sends_the_original_message(world: World) -> None:
    world.final('{"order":"o-1"}', TimeoutError("slow"))
    _run(world, reset_attempts=True)
    [sent] = world.all_messages(world.source)
    assert sent["Body"] == '{"order":"o-1"}'
    assert sent["MessageAttributes"]["tenant"]["StringValue"] == "acme"


def test_compact_form_goes_back_as_the_original_with_a_note(world: World) -> None:
    world.compact('"' * 1000, TimeoutError("slow"))
    report = _run(world)
    assert [(m.kind, m.outcome) for m in report.moved] == [("compact", "too-large-to-retry")]
    assert report.notes
    assert "history not kept" in report.notes[0][1]
    [sent] = world.all_messages(world.source)
    assert sent["Body"] == '"' * 1000
    assert "MessageAttributes" not in sent  # the header stays behind


def test_a_message_level_failure_fails_that_message_only(world: World) -> None:
    corrupt = json.loads(encode(unwrap_final(world, "a")))
    corrupt["attributes"] = {"tenant": {"DataType": "Binary", "BinaryValue": "***not base64***"}}
    world.sqs.send_message(QueueUrl=world.exhausted, MessageBody=json.dumps(corrupt))
    world.final("b", TimeoutError("t"))
    report = _run(world, reset_attempts=True)
    assert (len(report.moved), len(report.failed), report.stopped) == (1, 1, None)
    assert _bodies(world, world.source) == ["b"]
    assert _bodies(world, world.exhausted) == ["a"]


def unwrap_final(world: World, body: str) -> Any:
    from serverless_retry.envelope import final_envelope

    incoming = unwrap(body, {}, message_id="m-x", source=ORDERS_ARN)
    return final_envelope(incoming, "exhausted", now=world.clock.now(), error=TimeoutError("t"), reason="r")


def test_a_send_failure_mid_run_loses_nothing_and_leaves_the_rest_in_place(world: World) -> None:
    for body in "abcdefgh":
        world.final(body, TimeoutError("t"))
    sent: list[str] = []

    def flaky(message: ExhaustedMessage, outgoing: OutgoingMessage) -> None:
        if len(sent) == 3:
            raise ClientError(
                {"Error": {"Code": "ThrottlingException", "Message": "slow down"}}, "SendMessage"
            )
        world.sqs.send_message(QueueUrl=world.source, MessageBody=outgoing.body)
        sent.append(message.body)

    report = redrive(
        world.sqs, _options(world, reset_attempts=True), clock=world.clock, sender=flaky, wait_seconds=0
    )
    assert report.stopped is not None
    assert "ThrottlingException" in report.stopped
    assert (len(report.moved), len(report.failed), report.complete) == (3, 1, False)
    # Every message is in exactly one place, and the ones left are visible again at once.
    assert _bodies(world, world.source) == sorted(sent)
    assert sorted(_bodies(world, world.exhausted) + sent) == list("abcdefgh")
    assert world.counts(world.exhausted) == (5, 0)


def test_a_delete_failure_after_a_send_duplicates_never_loses(world: World) -> None:
    world.final("a", TimeoutError("t"))
    world.final("b", TimeoutError("t"))
    original_delete = world.sqs.delete_message

    def failing_delete(**kwargs: Any) -> Any:
        raise ClientError({"Error": {"Code": "InternalError", "Message": "try later"}}, "DeleteMessage")

    world.sqs.delete_message = failing_delete
    try:
        report = _run(world, reset_attempts=True)
    finally:
        world.sqs.delete_message = original_delete
    assert len(report.duplicated) == 1
    assert report.stopped
    assert not report.complete
    [copy] = _bodies(world, world.source)
    assert copy in _bodies(world, world.exhausted)  # sent and still here: a duplicate at worst
    assert world.counts(world.exhausted) == (2, 0)


def test_send_to_a_missing_queue_stops_and_keeps_everything(world: World) -> None:
    world.final("a", TimeoutError("t"))
    world.final("b", TimeoutError("t"))
    options = options_from_mapping(
        {"from_queue_url": world.exhausted, "to_queue_url": world.source.replace("orders", "nope")}
    )
    report = redrive(world.sqs, options, clock=world.clock, wait_seconds=0)
    assert len(report.failed) == 1
    assert report.stopped
    assert report.moved == []
    assert world.counts(world.exhausted) == (2, 0)


def test_fifo_destination_gets_a_group_and_a_stable_deduplication_id(aws: None, clock: FrozenClock) -> None:
    import boto3

    world = make_world(boto3.client("sqs", region_name="us-east-1"), clock, fifo=True)
    calls: list[dict[str, Any]] = []
    world.sqs.meta.events.register(
        "provide-client-params.sqs.SendMessage", lambda params, **_: calls.append(dict(params))
    )
    world.sqs.send_message(
        QueueUrl=world.exhausted, MessageBody=encode(unwrap_final(world, "a")), MessageGroupId="g-1"
    )
    report = _run(world, reset_attempts=True)
    assert len(report.moved) == 1
    redriven = [c for c in calls if c["QueueUrl"] == world.source]
    assert redriven[0]["MessageGroupId"] == "g-1"  # the message's own group
    assert len(redriven[0]["MessageDeduplicationId"]) == 64


def test_plain_dlq_messages_go_back_verbatim(world: World) -> None:
    world.sqs.send_message(
        QueueUrl=world.dlq,
        MessageBody="plain text",
        MessageAttributes={"k": {"DataType": "String", "StringValue": "v"}},
    )
    options = options_from_mapping({"from_queue_url": world.dlq, "to_queue_url": world.source})
    world.tick()
    report = redrive(world.sqs, options, clock=world.clock, wait_seconds=0)
    assert [(m.kind, m.outcome) for m in report.moved] == [("plain", "unknown")]
    [sent] = world.all_messages(world.source)
    assert (sent["Body"], sent["MessageAttributes"]["k"]["StringValue"]) == ("plain text", "v")


def test_a_dead_lettered_retry_copy_is_unwrapped_on_reset(world: World) -> None:
    copy = event("envelope-v1.json")  # a retry copy, as SQS moves it after maxReceiveCount receives
    world.sqs.send_message(QueueUrl=world.dlq, MessageBody=json.dumps(copy))
    [message] = [decode(m) for m in world.all_messages(world.dlq)]  # type: ignore[arg-type]
    meta = copy["serverless_retry"]
    assert (message.kind, message.envelope_id, message.attempt, message.error_type) == (
        "retry-envelope",
        meta["id"],
        meta["attempt"],
        meta["history"][-1]["error_type"],
    )
    options = options_from_mapping(
        {"from_queue_url": world.dlq, "to_queue_url": world.source, "reset_attempts": True}
    )
    world.tick()
    redrive(world.sqs, options, clock=world.clock, wait_seconds=0)
    assert [m["Body"] for m in world.all_messages(world.source)] == [copy["body"]]


def test_decode_reads_destination_records_and_scheduler_dead_letters() -> None:
    record = decode({"MessageId": "m1", "Body": json.dumps(event("destination-record-on-failure.json"))})
    assert (record.origin, record.error_type, record.reason) == (
        "lambda-destination",
        "TimeoutError",
        "RetriesExhausted",
    )
    assert record.source.endswith("function:thumbnails:$LATEST")
    attrs = {
        "ERROR_CODE": {"DataType": "String", "StringValue": "AWS.SQS.AccessDenied"},
        "ERROR_MESSAGE": {"DataType": "String", "StringValue": "not allowed"},
        "SCHEDULE_ARN": {
            "DataType": "String",
            "StringValue": "arn:aws:scheduler:us-east-1:1:schedule/g/sr-1",
        },
        "TARGET_ARN": {"DataType": "String", "StringValue": ORDERS_ARN},
    }
    dead = decode({"MessageId": "m2", "Body": "{}", "MessageAttributes": attrs})  # type: ignore[typeddict-item]
    assert (dead.origin, dead.error_type) == ("scheduler-dlq", "AWS.SQS.AccessDenied")
    final = decode({"MessageId": "m3", "Body": json.dumps(event("envelope-final-exhausted.json"))})
    assert (final.kind, final.outcome, final.error_type, final.attempt) == (
        "envelope",
        "exhausted",
        "TimeoutError",
        5,
    )
    plain = decode({"MessageId": "m4", "Body": "not json", "Attributes": {"SentTimestamp": "1796032800000"}})  # type: ignore[typeddict-item]
    assert (plain.kind, plain.outcome, plain.origin, plain.sent_at is not None) == (
        "plain",
        "unknown",
        "unknown",
        True,
    )
