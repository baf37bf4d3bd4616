"""The self-healing demo's accounting (pure): every (message, subscribed function) ends in one known
place, as the example says, or the report says why not."""

from __future__ import annotations

import json

from serverless_retry_tools.local.demos.selfheal_accounting import (
    Expectation,
    Final,
    Invocation,
    Published,
    Redrive,
    account,
    parse_dead_letter,
    parse_exhausted,
    parse_redrive_logs,
)

from tests.selfheal_corpus import EVENTS, bus_event, load

ONE = (
    Expectation("fn-one", "exhausted", 4, "HTTPError"),
    Expectation("fn-healthy", "processed", 1),
)
TWO = (Expectation("fn-two", "non-retryable", 1, "KeyError"),)


def runs(function: str, message: str, *oks: bool) -> list[Invocation]:
    """Attempts 61, 122, 243 logical seconds apart (after backoffs of 60, 120, 240)."""
    at = [0, 61_000, 183_000, 426_000, 900_000]
    return [
        Invocation(function, message, ok, "" if ok else "HTTPError: 503", at[n]) for n, ok in enumerate(oks)
    ]


def test_a_run_as_the_example_says_balances() -> None:
    published = [Published("m1", "one", "o-1", ONE), Published("m2", "two", "o-2", TWO)]
    invocations = [
        *runs("fn-one", "m1", False, False, False, False),
        *runs("fn-healthy", "m1", True),
        *runs("fn-two", "m2", False),
    ]
    finals = [
        Final("exhausted-queue", "m1", "fn-one", "exhausted", attempt=4, error_type="HTTPError"),
        Final("exhausted-queue", "m2", "fn-two", "non-retryable", attempt=1, error_type="KeyError"),
    ]
    redrives = [
        Redrive("m1", 2, 60, "schedule"),
        Redrive("m1", 3, 120, "schedule"),
        Redrive("m1", 4, 240, "schedule"),
    ]
    result = account(published, invocations, finals, redrives)
    assert result.ok
    by = {(d.message.message_id, d.expected.function): d for d in result.deliveries}
    assert by[("m1", "fn-one")].delays == (60, 120, 240)
    assert by[("m1", "fn-healthy")].delays == ()
    assert by[("m1", "fn-healthy")].evidence == "ok run"
    assert by[("m1", "fn-one")].waited == (61, 122, 243)
    assert result.totals == {"exhausted": 1, "processed": 1, "non-retryable": 1}


def test_unaccounted_duplicate_conflict_and_unknown_are_reported() -> None:
    published = [Published("m1", "one", "o-1", ONE)]
    invocations = [*runs("fn-one", "m1", False, False), *runs("fn-healthy", "m1", True, True)]
    finals = [
        Final("rules-dlq", "m1", "", "dlq:rules-dlq"),
        Final("exhausted-queue", "other", "fn-one", "exhausted"),
    ]
    result = account(published, invocations, finals, [])
    assert not result.ok
    by = {d.expected.function: d for d in result.deliveries}
    assert by["fn-one"].outcome == "dlq:rules-dlq"  # the message-level DLQ record counts for each delivery
    assert "expected 4 attempt(s)" in by["fn-one"].problems
    assert by["fn-healthy"].outcome == "conflict"  # ran ok and a DLQ holds the message
    assert [f.message_id for f in result.unknown_finals] == ["other"]


def test_a_delivery_nowhere_is_unaccounted() -> None:
    result = account([Published("m1", "two", "o", TWO)], [], [], [])
    (delivery,) = result.deliveries
    assert delivery.outcome == "unaccounted"
    assert not result.ok


def test_parse_exhausted_record() -> None:
    detail = {
        "payload": load("sns-event.json"),
        "meta": {"retry_id": "m1", "function_name": "fn-one", "attempt": 4, "error_type": "HTTPError"},
    }
    final = parse_exhausted(json.dumps({"outcome": "exhausted", "reason": "budget spent", "detail": detail}))
    assert final == Final(
        "exhausted-queue",
        "m1",
        "fn-one",
        "exhausted",
        attempt=4,
        error_type="HTTPError",
        reason="budget spent",
    )
    assert parse_exhausted("not json").outcome == "unreadable"


def test_parse_exhausted_reads_the_enrichments_last_resort_too() -> None:
    """An event too large for everything reaches the exhausted queue as the raw destination record with
    a compact serverless_retry attribute: read through read_terminal, it names its delivery."""
    (sample,) = [
        s
        for s in json.loads((EVENTS / "exhausted-messages.json").read_text())
        if s["expected"].get("outcome") == "too-large-for-bus"
    ]
    message = sample["message"]
    final = parse_exhausted(message["Body"], message["MessageAttributes"])
    assert (final.message_id, final.function, final.outcome, final.attempt, final.error_type) == (
        "95df01b4-ee98-5cb9-9903-4c221d41eb5e",
        "orders-fn",
        "too-large-for-bus",
        3,
        "HTTPError",
    )


def test_parse_dead_letters_of_each_place() -> None:
    record = load("destination-sns-retries-exhausted.json")
    failure = parse_dead_letter("failure-dlq", json.dumps(record))
    assert (failure.message_id, failure.function) == ("95df01b4-ee98-5cb9-9903-4c221d41eb5e", "orders-fn")
    event = bus_event({"payload": {}, "meta": {"retry_id": "m9", "function_name": "fn-one"}})
    assert parse_dead_letter("rules-dlq", json.dumps(event)).message_id == "m9"
    redrive_failure = {**record, "requestPayload": event}
    assert parse_dead_letter("redrive-dlq", json.dumps(redrive_failure)).function == "fn-one"
    scheduled = load("sns-event.json")
    assert (
        parse_dead_letter("schedule-dlq", json.dumps(scheduled)).message_id
        == scheduled["Records"][0]["Sns"]["MessageId"]
    )


def test_parse_redrive_logs() -> None:
    lines = [
        "START RequestId: x",
        json.dumps(
            {
                "level": "INFO",
                "message": "event redriven",
                "retry_id": "m1",
                "next_attempt": 2,
                "delay_seconds": 60,
                "action": "schedule",
            }
        ),
        json.dumps(
            {"level": "WARNING", "message": "event goes to the retry-exhausted queue", "retry_id": "m1"}
        ),
    ]
    assert parse_redrive_logs(lines) == [Redrive("m1", 2, 60, "schedule")]


def test_the_workload_expects_what_the_example_does() -> None:
    from serverless_retry_tools.local.demos.selfheal_workload import ExampleFunctions, build_messages

    names = ExampleFunctions(charge="c", invoice="i", audit="a")
    messages = build_messages(5, names)
    orders = [m for m in messages if m.topic == "orders"]
    invoices = [m for m in messages if m.topic == "invoices"]
    assert len(orders) == len(invoices) == 5
    assert all([e.function for e in m.expectations] == ["c", "a"] for m in orders)
    charge = sorted((m.expectations[0].outcome, m.expectations[0].attempts) for m in orders)
    assert charge == [("exhausted", 4)] * 4 + [("processed", 3)]  # one healed on attempt 3
    assert sorted(m.expectations[0].outcome for m in invoices) == ["non-retryable"] * 4 + ["processed"]
    healed = [json.loads(m.body) for m in orders if m.expectations[0].outcome == "processed"]
    assert healed[0]["succeed_on_attempt"] == 3
    assert all(
        "customer_id" not in json.loads(m.body) for m in invoices if m.expectations[0].outcome != "processed"
    )


def test_a_retry_before_its_backoff_is_a_problem() -> None:
    published = [Published("m1", "two", "o", (Expectation("fn", "exhausted", 2),))]
    early = [Invocation("fn", "m1", False, "E: x", 0), Invocation("fn", "m1", False, "E: x", 5_000)]
    final = [Final("exhausted-queue", "m1", "fn", "exhausted", attempt=2)]
    (delivery,) = account(published, early, final, [Redrive("m1", 2, 60, "schedule")]).deliveries
    assert delivery.waited == (5,)
    assert "attempt 2 came before its backoff" in delivery.problems
    on_time = [early[0], Invocation("fn", "m1", False, "E: x", 59_500)]  # whole-second tolerance
    (delivery,) = account(published, on_time, final, [Redrive("m1", 2, 60, "schedule")]).deliveries
    assert delivery.as_expected
