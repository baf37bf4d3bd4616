"""The demo's accounting: every sent message in exactly one final place (pure)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from serverless_retry.consumer import RETRIES_PLANNED
from serverless_retry_tools.local.demos.accounting import (
    FinalRecord,
    SentMessage,
    account,
    parse_final,
    parse_log_lines,
)
from serverless_retry_tools.local.demos.scheduled_workload import DEFAULT_MIX, MALFORMED, build_workload

EVENTS = Path(__file__).resolve().parent.parent / "events"
SENT = [SentMessage(f"m{i}", "ok", f"o-{i}", "processed") for i in range(1, 5)]


def _log(message: str, **fields: Any) -> str:
    return json.dumps({"level": "INFO", "message": message, **fields})


def _emf(**metrics: float | list[float]) -> str:
    return json.dumps(
        {
            "_aws": {
                "Timestamp": 1,
                "CloudWatchMetrics": [
                    {
                        "Namespace": "ServerlessRetry",
                        "Dimensions": [["service"]],
                        "Metrics": [{"Name": n, "Unit": "Count"} for n in metrics],
                    }
                ],
            },
            "service": "orders",
            **metrics,
        }
    )


def test_log_lines_give_successes_retries_and_emf_counts() -> None:
    evidence = parse_log_lines(
        [
            "START RequestId: x Version: $LATEST",
            # The consumer's line for a batch: every retried message's decision.
            _log(
                RETRIES_PLANNED,
                count=2,
                retries=[
                    {"retry_id": "m1", "attempt": 1, "transport": "sqs-delay"},
                    {"retry_id": "m5", "attempt": 1, "transport": "visibility"},
                ],
            ),
            # The grouped line: one group per decision, each message's delay by its id.
            _log(
                RETRIES_PLANNED,
                count=2,
                retries=[
                    {
                        "error_type": "TimeoutError",
                        "error": "t",
                        "attempt": 2,
                        "transport": "sqs-hops",
                        "delays": {"c7": 30, "c8": 30},
                        "retry_ids": {"c7": "m7"},
                    }
                ],
            ),
            # One line per retry, as earlier versions wrote: still read.
            _log("processing failed; retry planned", retry_id="m1", attempt=2, transport="scheduler"),
            _log("order accepted", id="m1", attempt=3, order_id="o-1"),
            _log("order accepted", id="m2", attempt=1),
            _emf(Processed=2, RetryScheduled=1),
            # A batch's metrics line carrying its retries (the consumer's usual line for them).
            json.dumps(
                {
                    **json.loads(_emf(Processed=0)),
                    "message": RETRIES_PLANNED,
                    "count": 1,
                    "retries": [
                        {
                            "error_type": "E",
                            "error": "",
                            "attempt": 1,
                            "transport": "sqs-delay",
                            "delays": {"m9": 5},
                        }
                    ],
                }
            ),
            _emf(Processed=[1.0]),
            "{not json",
            "[1, 2]",
        ]
    )
    assert evidence.successes == {"m1": [3], "m2": [1]}
    assert evidence.retries == {
        "m1": {1: "sqs-delay", 2: "scheduler"},
        "m5": {1: "visibility"},
        "m7": {2: "sqs-hops"},
        "c8": {2: "sqs-hops"},
        "m9": {1: "sqs-delay"},
    }
    assert evidence.emf_processed == 3
    assert evidence.emf["RetryScheduled"] == 1


def _final(place: str, body: Any, message_id: str = "x", **extra: Any) -> FinalRecord:
    return parse_final(place, {"MessageId": message_id, "Body": json.dumps(body), **extra})


def test_final_envelope_names_the_first_message() -> None:
    record = _final(
        "exhausted",
        {
            "serverless_retry": {
                "v": 1,
                "id": "m3",
                "attempt": 6,
                "outcome": "exhausted",
                "reason": "attempt 6 >= max_attempts 6",
                "history": [{"transport": "sqs-delay"}, {"transport": "sqs-delay"}],
            },
            "body": "{}",
        },
    )
    assert (record.id, record.outcome, record.attempt, record.transports) == (
        "m3",
        "exhausted",
        6,
        ("sqs-delay", "sqs-delay"),
    )


def test_compact_attribute_form_is_read_too() -> None:
    record = parse_final(
        "exhausted",
        {
            "MessageId": "copy",
            "Body": "verbatim original",
            "MessageAttributes": {
                "serverless_retry": {
                    "DataType": "String",
                    "StringValue": json.dumps({"id": "m2", "attempt": 2, "outcome": "too-large-to-retry"}),
                }
            },
        },
    )
    assert (record.id, record.outcome, record.attempt) == ("m2", "too-large-to-retry", 2)


def test_every_form_the_consumer_writes_is_read_the_framed_one_included() -> None:
    """parse_final reads through serverless_retry.terminal.read_terminal: the framed form (header line,
    then the original body verbatim) names its id, outcome and attempt like an envelope does."""
    samples = json.loads((EVENTS / "exhausted-messages.json").read_text())
    by_form = {s["form"]: s for s in samples if s["form"] in ("envelope", "framed", "original+meta")}
    assert set(by_form) == {"envelope", "framed", "original+meta"}
    for form, sample in by_form.items():
        record = parse_final("exhausted", sample["message"])
        expected = sample["expected"]
        assert (record.id, record.outcome, record.attempt) == (
            expected["id"],
            expected["outcome"],
            expected["attempt"],
        ), form
    framed = parse_final("exhausted", by_form["framed"]["message"])
    assert framed.reason == by_form["framed"]["expected"]["reason"]


def test_an_original_in_the_dlq_keeps_its_message_id() -> None:
    record = parse_final(
        "dlq",
        {"MessageId": "m4", "Body": '{"order_id": "o-4"}', "Attributes": {"ApproximateReceiveCount": "5"}},
    )
    assert (record.id, record.outcome, record.attempt, record.place) == ("m4", "dlq", 5, "dlq")


def test_balanced_when_every_message_is_in_exactly_one_place() -> None:
    evidence = parse_log_lines(
        [
            _log("order accepted", id="m1", attempt=1),
            _log(
                RETRIES_PLANNED, count=1, retries=[{"retry_id": "m2", "attempt": 1, "transport": "scheduler"}]
            ),
            _log("order accepted", id="m2", attempt=2),
            _log("order accepted", id="m2", attempt=2),  # at-least-once duplicate
        ]
    )
    finals = [
        _final(
            "exhausted",
            {"serverless_retry": {"id": "m3", "attempt": 1, "outcome": "non-retryable"}, "body": ""},
        ),
        _final("dlq", {"order_id": "o-4"}, message_id="m4"),
    ]
    accounting = account(SENT, finals, evidence)
    outcomes = {
        f.sent.message_id: (f.outcome, f.attempts, f.transports, f.evidence) for f in accounting.fates
    }
    assert outcomes == {
        "m1": ("processed", 1, (), "processor-log"),
        "m2": ("processed", 2, ("scheduler",), "processor-log"),
        "m3": ("non-retryable", 1, (), "exhausted-queue"),
        "m4": ("dlq", 0, (), "dlq"),
    }
    assert [f.deliveries for f in accounting.fates] == [1, 2, 1, 1]
    assert accounting.balanced
    assert (accounting.processed, accounting.exhausted_by_reason, accounting.dlq) == (
        2,
        {"non-retryable": 1},
        1,
    )


def test_a_message_nowhere_is_unaccounted() -> None:
    evidence = parse_log_lines([_log("order accepted", id=m.message_id, attempt=1) for m in SENT[:3]])
    accounting = account(SENT, [], evidence)
    assert accounting.totals["unaccounted"] == 1
    assert not accounting.balanced


def test_a_message_in_two_places_is_a_conflict() -> None:
    evidence = parse_log_lines([_log("order accepted", id=m.message_id, attempt=1) for m in SENT])
    finals = [
        _final(
            "exhausted", {"serverless_retry": {"id": "m1", "attempt": 1, "outcome": "exhausted"}, "body": ""}
        )
    ]
    accounting = account(SENT, finals, evidence)
    assert accounting.totals["conflict"] == 1
    assert not accounting.balanced


def test_a_final_message_we_never_sent_unbalances() -> None:
    evidence = parse_log_lines([_log("order accepted", id=m.message_id, attempt=1) for m in SENT])
    finals = [_final("dlq", {"x": 1}, message_id="stranger")]
    accounting = account(SENT, finals, evidence)
    assert accounting.unknown_finals
    assert not accounting.balanced


def test_without_success_logs_the_emf_count_must_cover_the_rest() -> None:
    covered = account(SENT, [], parse_log_lines([_emf(Processed=4)]))
    assert covered.balanced
    assert {f.evidence for f in covered.fates} == {"emf-count"}
    short = account(SENT, [], parse_log_lines([_emf(Processed=3)]))
    assert short.totals["unaccounted"] == 4
    assert not short.balanced


@pytest.mark.parametrize("orders", [6, 100, 250])
def test_workload_has_every_behaviour_and_one_malformed_envelope(orders: int) -> None:
    items = build_workload(orders, seed=1)
    labels = [i.label for i in items]
    assert len(items) == orders + 1
    assert set(labels) == {*DEFAULT_MIX, MALFORMED}
    assert labels.count(MALFORMED) == 1
    assert len({i.order_id for i in items}) == len(items)
    malformed = json.loads(next(i.body for i in items if i.label == MALFORMED))
    assert malformed["serverless_retry"]["attempt"] == -1
    assert build_workload(orders, seed=1) == items


def test_workload_rejects_too_few_orders() -> None:
    with pytest.raises(ValueError, match="too few"):
        build_workload(3)
