"""planning.py: every decision a pure function of the record, the policy and the queue (issue 9
items 2, 3, 4 and 13), tested without AWS."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta, timezone
from email.utils import format_datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st
from serverless_retry.envelope import Incoming, parse_time, unwrap
from serverless_retry.errors import HttpError, RetryableError
from serverless_retry.planning import (
    VISIBILITY_TIMEOUT_CAP,
    Copy,
    Final,
    InPlace,
    QueueFacts,
    RecordFacts,
    Wait,
    arrival,
    decision_time,
    hop_limit,
    plan_failure,
)
from serverless_retry.policy import RetryPolicy

T0 = datetime(2026, 11, 30, 10, 0, 0, tzinfo=UTC)
SOURCE = "arn:aws:sqs:us-east-1:123456789012:orders"


def record(*, sent: datetime = T0, first: datetime | None = T0, receives: int = 1) -> RecordFacts:
    return RecordFacts("m-1", receives, sent, first, None)


def original(body: str = '{"order": 1}', receives: int = 1) -> Incoming:
    return unwrap(body, {}, message_id="m-1", source=SOURCE, receive_count=receives)


def policy(**fields: object) -> RetryPolicy:
    return RetryPolicy.from_dict(
        {"max_attempts": 5, "backoff": {"strategy": "fixed", "base_seconds": 30}, **fields}
    )


def test_the_same_record_decides_the_same_whatever_the_invocation_clock() -> None:
    rules = {"rules": [{"http_status": [503], "honor_retry_after": True}], "max_age_seconds": 3600}
    retry_at = format_datetime(T0 + timedelta(seconds=1200), usegmt=True)
    error = HttpError(503, "busy", retry_after=retry_at)
    facts = record(first=T0 + timedelta(seconds=2))
    steps = []
    for late in (0, 40, 600):  # the first delivery, then redeliveries minutes later
        clock_now = T0 + timedelta(seconds=2 + late)
        now = decision_time(facts, clock_now, in_place=False)
        steps.append(plan_failure(policy(**rules), QueueFacts(), facts, original(), error, now=now))
    first = steps[0]
    assert isinstance(first, Copy)
    assert all(step == first for step in steps)  # byte-identical copy, same due time
    assert first.delay_seconds == 1198  # the HTTP date, measured from the record's first receive
    assert first.due_at == T0 + timedelta(seconds=1200)
    assert first.transport == "scheduler"


def test_max_age_is_measured_from_the_records_own_time() -> None:
    envelope = json.dumps(
        {
            "serverless_retry": {
                "v": 1,
                "id": "m-0",
                "attempt": 2,
                "first_failed_at": "2026-11-30T09:00:00Z",
                "source": SOURCE,
                "history": [],
            },
            "body": "b",
            "attributes": {},
        }
    )
    incoming = unwrap(envelope, {}, message_id="m-1", source=SOURCE)
    young = record(first=T0 - timedelta(seconds=1))  # 3599 s after the first failure
    step = plan_failure(
        policy(max_age_seconds=3600),
        QueueFacts(),
        young,
        incoming,
        RetryableError("x"),
        now=young.first_received_at or T0,
    )
    assert isinstance(step, Copy)  # even if the invocation runs an hour later, it decides as then
    old = record(first=T0 + timedelta(seconds=1))
    step = plan_failure(
        policy(max_age_seconds=3600),
        QueueFacts(),
        old,
        incoming,
        RetryableError("x"),
        now=old.first_received_at or T0,
    )
    assert isinstance(step, Final)
    assert step.outcome == "exhausted"


@given(st.integers(min_value=0, max_value=3 * 86_400), st.integers(min_value=60, max_value=1_209_600))
def test_in_place_never_waits_past_the_messages_expiry(age: int, retention: int) -> None:
    queue = QueueFacts(in_place=True, retention_seconds=retention)
    now = T0 + timedelta(seconds=age)
    step = plan_failure(
        policy(backoff={"strategy": "fixed", "base_seconds": 7200, "max_seconds": 7200}),
        queue,
        record(receives=2),
        original(receives=2),
        RetryableError("busy"),
        now=now,
    )
    expires = T0 + timedelta(seconds=retention)
    if isinstance(step, InPlace):
        assert now + timedelta(seconds=step.timeout_seconds + 60) <= expires
    else:
        assert isinstance(step, Final)
        assert step.outcome == "exhausted"
        assert "after the message expires from the queue" in step.reason
        assert f"retention {retention} s" in step.reason


def test_in_place_visibility_stays_under_twelve_hours_from_the_receive() -> None:
    long = policy(backoff={"strategy": "fixed", "base_seconds": 86_400, "max_seconds": 86_400})
    step = plan_failure(long, QueueFacts(in_place=True), record(), original(), RetryableError("x"), now=T0)
    assert isinstance(step, InPlace)
    assert step.timeout_seconds == VISIBILITY_TIMEOUT_CAP < 43_200
    assert step.decision.transport == "visibility"
    assert "via visibility" in step.decision.reason


def test_a_delay_longer_than_the_retention_goes_as_hops() -> None:
    queue = QueueFacts(retention_seconds=300)
    step = plan_failure(
        policy(backoff={"strategy": "fixed", "base_seconds": 600}),
        queue,
        record(),
        original(),
        RetryableError("x"),
        now=T0,
    )
    assert isinstance(step, Copy)
    assert step.transport == "sqs-hops"
    assert hop_limit(300) == 240
    assert hop_limit(1_209_600) == 900


def test_fifo_copies_go_through_the_scheduler_or_hops() -> None:
    step = plan_failure(policy(), QueueFacts(fifo=True), record(), original(), RetryableError("x"), now=T0)
    assert isinstance(step, Copy)
    assert step.transport == "scheduler"
    step = plan_failure(
        policy(), QueueFacts(fifo=True, scheduler=False), record(), original(), RetryableError("x"), now=T0
    )
    assert isinstance(step, Copy)
    assert step.transport == "sqs-hops"


def test_sqs_hops_carry_their_due_time_and_early_copies_wait() -> None:
    hops = policy(
        transport="sqs-hops", backoff={"strategy": "fixed", "base_seconds": 7200, "max_seconds": 7200}
    )
    step = plan_failure(hops, QueueFacts(), record(), original(), RetryableError("x"), now=T0)
    assert isinstance(step, Copy)
    assert step.transport == "sqs-hops"
    copy = unwrap(step.body, {}, message_id="m-2", source=SOURCE)
    assert copy.meta is not None
    assert parse_time(copy.meta["due_at"]) == T0 + timedelta(seconds=7200)

    early = arrival(
        copy, record(first=T0 + timedelta(seconds=900)), QueueFacts(), now=T0 + timedelta(seconds=900)
    )
    assert early == Wait(T0 + timedelta(seconds=7200), 6300)
    assert arrival(copy, record(), QueueFacts(), now=T0 + timedelta(seconds=7199)) is None  # within 1 s: due
    hidden = arrival(copy, record(), QueueFacts(fifo=True), now=T0 + timedelta(seconds=900))
    assert hidden is not None
    assert hidden.hide_seconds == 6300  # FIFO: the very message waits, hidden
    # A copy that waited hidden is decided at its due time, not at its early first receive.
    assert decision_time(record(), T0, in_place=False, incoming=copy) == T0 + timedelta(seconds=7200)


def test_an_original_is_never_early() -> None:
    assert arrival(original(), record(), QueueFacts(), now=T0) is None


@pytest.mark.parametrize("attributes", [{}, {"SentTimestamp": "x"}, {"ApproximateReceiveCount": "many"}])
def test_record_facts_tolerate_odd_attributes(attributes: dict[str, str]) -> None:
    facts = RecordFacts.of({"messageId": "m", "attributes": attributes})
    assert facts.receive_count == 1
    assert facts.sent_at is None
    assert decision_time(facts, T0, in_place=False) == T0


def test_decision_time_reads_the_clock_only_when_the_decision_takes_it() -> None:
    reads: list[datetime] = []

    def clock_now() -> datetime:
        reads.append(T0 + timedelta(seconds=99))
        return reads[-1]

    own = record(first=T0 + timedelta(seconds=2))
    assert decision_time(own, clock_now, in_place=False) == T0 + timedelta(seconds=2)
    assert reads == []  # a copy's decision is the record's own time: the clock is not read
    timeless = RecordFacts("m-1", 1, None, None, None)
    assert decision_time(timeless, clock_now, in_place=False) == T0 + timedelta(seconds=99)
    assert decision_time(own, clock_now, in_place=True) == T0 + timedelta(seconds=99)  # in place: now
    assert len(reads) == 2


@pytest.mark.parametrize("micros", [0, 1, 999_999])
def test_a_copy_s_due_time_is_rounded_up_to_the_second_in_the_decision_s_own_zone(micros: int) -> None:
    paris = timezone(timedelta(hours=1))
    utc_now = T0.replace(microsecond=micros)
    for now in (utc_now, utc_now.astimezone(paris), utc_now):  # one moment in two zones, in turn
        step = plan_failure(policy(), QueueFacts(), record(), original(), RetryableError("x"), now=now)
        assert isinstance(step, Copy)
        expected = T0 + timedelta(seconds=30 + (1 if micros else 0))
        assert step.due_at == expected
        assert step.due_at.tzinfo is now.tzinfo  # not the zone the same moment was first seen in
        assert step.due_at.microsecond == 0
