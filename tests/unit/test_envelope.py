"""The v1 envelope: unwrap/wrap round trips, strict validation, final envelopes, size and names."""

from __future__ import annotations

import base64
import copy
import json
import random
import re
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from serverless_retry.envelope import (
    ENVELOPE_KEY,
    ERROR_TEXT_LIMIT,
    HISTORY_LIMIT,
    MAX_ATTEMPT,
    Envelope,
    Incoming,
    MessageAttribute,
    attributes_from_record,
    encode,
    final_envelope,
    fits,
    format_time,
    next_envelope,
    parse_time,
    schedule_name,
    sqs_message_size,
    unwrap,
)
from serverless_retry.errors import HttpError
from serverless_retry.policy import Decision, RetryPolicy

EVENTS = Path(__file__).resolve().parent.parent / "events"
NOW = datetime(2026, 11, 30, 10, 0, 0, tzinfo=UTC)
SOURCE = "arn:aws:sqs:us-east-1:123456789012:orders"
ATTRS: dict[str, MessageAttribute] = {
    "tenant": {"DataType": "String", "StringValue": "acme"},
    "priority": {"DataType": "Number", "StringValue": "3"},
    "signature": {"DataType": "Binary", "BinaryValue": base64.b64encode(b"\xde\xad\xbe\xef").decode()},
}


def retry(delay: int = 30, transport: Any = "sqs-delay", attempt: int = 1) -> Decision:
    return Decision("retry", delay, transport, attempt, None, "test", "TimeoutError")


def original(
    body: str = '{"order_id": "o-1"}', attributes: dict[str, MessageAttribute] | None = None
) -> Incoming:
    incoming = unwrap(body, ATTRS if attributes is None else attributes, message_id="m-1", source=SOURCE)
    assert incoming.kind == "original"
    return incoming


def roundtrip(envelope: Envelope, message_id: str = "m-next") -> Incoming:
    return unwrap(encode(envelope), {}, message_id=message_id, source="arn:aws:sqs:us-east-1:1:other")


# --- originals ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "body",
    [
        "",
        "plain text",
        "not json {",
        "[1, 2, 3]",
        '["serverless_retry"]',
        '"serverless_retry"',
        "42",
        "null",
        '{"order_id": "o-1"}',
        '{"serverless_retry_v2": {}}',
        '{"body": "x", "attributes": {}}',
        "[" * 50_000,  # nested too deeply for the JSON parser
    ],
)
def test_anything_that_does_not_claim_to_be_an_envelope_is_an_original(body: str) -> None:
    incoming = unwrap(body, ATTRS, message_id="m-1", source=SOURCE)
    assert incoming.kind == "original"
    assert incoming.body == body
    assert incoming.attributes == ATTRS
    assert incoming.attributes is not ATTRS  # a copy
    assert incoming.context.id == "m-1"
    assert incoming.context.attempt == 1
    assert incoming.context.first_failed_at is None
    assert incoming.context.history == ()
    assert incoming.context.source == SOURCE
    assert (incoming.meta, incoming.problem) == (None, None)


def test_original_attempt_comes_from_receive_count() -> None:
    assert unwrap("x", {}, message_id="m", source=SOURCE, receive_count=4).context.attempt == 4
    assert unwrap("x", {}, message_id="m", source=SOURCE, receive_count=0).context.attempt == 1


# --- round trips ----------------------------------------------------------------------------------


def test_wrap_unwrap_round_trip_keeps_body_attributes_and_id() -> None:
    first = original('{"order_id": "o-1", "note": "café ☕"}')
    error = TimeoutError("read timed out")
    envelope = next_envelope(first, retry(30), error, now=NOW)
    meta = envelope["serverless_retry"]
    assert meta == {
        "v": 1,
        "id": "m-1",
        "attempt": 2,
        "first_failed_at": "2026-11-30T10:00:00Z",
        "source": SOURCE,
        "history": [
            {
                "at": "2026-11-30T10:00:00Z",
                "error_type": "TimeoutError",
                "error": "read timed out",
                "delay_seconds": 30,
                "transport": "sqs-delay",
            }
        ],
    }
    second = roundtrip(envelope)
    assert second.kind == "envelope"
    assert second.body == first.body
    assert second.attributes == ATTRS
    assert second.context.id == "m-1"  # stable: the idempotency key, not the new message id
    assert second.context.attempt == 2
    assert second.context.first_failed_at == NOW
    assert second.context.source == SOURCE  # the original queue, not where this copy came from
    assert second.context.previous_delay == 30.0
    assert second.meta == meta

    later = NOW + timedelta(seconds=31)
    third = roundtrip(next_envelope(second, retry(1200, "scheduler", 2), HttpError(503), now=later), "m-3")
    assert third.kind == "envelope"
    assert (third.context.id, third.context.attempt, third.context.first_failed_at) == ("m-1", 3, NOW)
    assert [h["transport"] for h in third.context.history] == ["sqs-delay", "scheduler"]
    assert third.context.history[-1] == {
        "at": "2026-11-30T10:00:31Z",
        "error_type": "HttpError",
        "error": "HTTP 503",
        "delay_seconds": 1200,
        "transport": "scheduler",
    }
    assert third.body == first.body


def test_history_is_bounded_to_the_last_ten() -> None:
    incoming = original()
    for n in range(1, 16):
        incoming = roundtrip(next_envelope(incoming, retry(n, attempt=n), RuntimeError(f"fail {n}"), now=NOW))
        assert incoming.kind == "envelope"
    assert incoming.context.attempt == 16
    assert len(incoming.context.history) == HISTORY_LIMIT == 10
    assert [h["error"] for h in incoming.context.history] == [f"fail {n}" for n in range(6, 16)]


def test_error_text_is_cut_to_512_characters() -> None:
    envelope = next_envelope(original(), retry(), ValueError("x" * 5000), now=NOW)
    assert envelope["serverless_retry"]["history"][0]["error"] == "x" * ERROR_TEXT_LIMIT
    assert ERROR_TEXT_LIMIT == 512


def test_unprintable_error_still_makes_an_envelope() -> None:
    class Hostile(Exception):
        def __str__(self) -> str:
            raise RuntimeError("nope")

    entry = next_envelope(original(), retry(), Hostile(), now=NOW)["serverless_retry"]["history"][0]
    assert entry["error"] == "<unprintable Hostile>"


def test_next_envelope_refuses_non_retries_and_invalid_input() -> None:
    with pytest.raises(ValueError, match="retry decision"):
        next_envelope(original(), Decision("exhausted", 0, None, 5, None, "x", "E"), ValueError(), now=NOW)
    invalid = unwrap('{"serverless_retry": 1}', {}, message_id="m", source=SOURCE)
    with pytest.raises(ValueError, match="retry-exhausted"):
        next_envelope(invalid, retry(), ValueError(), now=NOW)


def test_decide_and_wrap_together_with_a_real_policy() -> None:
    policy = RetryPolicy()
    incoming = original()
    for attempt in range(1, 5):
        decision = policy.decide(
            ValueError("boom"),
            attempt=incoming.context.attempt,
            first_failed_at=incoming.context.first_failed_at or NOW,
            now=NOW,
            rand=random.Random(attempt),
            previous_delay=incoming.context.previous_delay,
        )
        assert decision.action == "retry"
        incoming = roundtrip(next_envelope(incoming, decision, ValueError("boom"), now=NOW))
        assert incoming.context.attempt == attempt + 1
    last = policy.decide(ValueError("boom"), attempt=5, first_failed_at=NOW, now=NOW, rand=random.Random(1))
    assert last.action == "exhausted"


# --- final envelopes ------------------------------------------------------------------------------


def test_final_envelope_carries_outcome_reason_and_last_error() -> None:
    second = roundtrip(next_envelope(original(), retry(30), TimeoutError("slow"), now=NOW))
    later = NOW + timedelta(minutes=2)
    traceback_text = "Traceback (most recent call last):\n" + "  frame\n" * 1000 + "KeyError: 'sku'\n"
    final = final_envelope(
        second,
        "exhausted",
        now=later,
        error=KeyError("sku"),
        reason="attempt 5 >= max_attempts 5",
        traceback_text=traceback_text,
    )
    meta = final["serverless_retry"]
    assert meta["outcome"] == "exhausted"
    assert meta["reason"] == "attempt 5 >= max_attempts 5"
    assert meta["exhausted_at"] == "2026-11-30T10:02:00Z"
    assert meta["first_failed_at"] == "2026-11-30T10:00:00Z"
    assert (meta["id"], meta["attempt"], meta["source"]) == ("m-1", 2, SOURCE)
    assert len(meta["history"]) == 1
    assert meta["final_error"]["type"] == "KeyError"
    assert meta["final_error"]["message"] == "'sku'"
    assert meta["final_error"]["traceback"].endswith("KeyError: 'sku'\n")  # the tail is kept
    assert len(meta["final_error"]["traceback"]) <= 2048
    assert final["body"] == second.body
    assert final["attributes"] == ATTRS
    # redriven to the source queue, a final envelope is its chain's next attempt, one generation on
    back = roundtrip(final)
    assert back.kind == "envelope"
    assert (back.context.id, back.context.attempt, back.context.generation) == (
        meta["id"],
        meta["attempt"] + 1,
        1,
    )
    assert back.problem is None
    assert back.meta is not None
    assert "outcome" not in back.meta


def test_final_envelope_of_an_invalid_message_keeps_the_raw_body_and_record_attributes() -> None:
    raw = json.dumps({"serverless_retry": {"v": 9}, "body": "x", "attributes": {}})
    invalid = unwrap(raw, ATTRS, message_id="m-9", source=SOURCE)
    assert invalid.kind == "invalid"
    final = final_envelope(invalid, "invalid-envelope", now=NOW, error=None, reason="")
    meta = final["serverless_retry"]
    assert final["body"] == raw  # verbatim: nothing is lost
    assert final["attributes"] == ATTRS
    assert (meta["id"], meta["attempt"], meta["outcome"]) == ("m-9", 1, "invalid-envelope")
    assert meta["reason"] == invalid.problem
    assert "final_error" not in meta


def test_final_envelope_of_a_first_failure_sets_first_failed_at_now() -> None:
    meta = final_envelope(original(), "non-retryable", now=NOW, error=ValueError("bad"), reason="r")[
        ENVELOPE_KEY
    ]
    assert meta["first_failed_at"] == "2026-11-30T10:00:00Z"
    assert meta["history"] == []


# --- malformed envelopes --------------------------------------------------------------------------


def valid_document() -> dict[str, Any]:
    return json.loads((EVENTS / "envelope-v1.json").read_text())


def test_sample_events_classify_as_documented() -> None:
    ok = unwrap((EVENTS / "envelope-v1.json").read_text(), {}, message_id="m", source=SOURCE)
    assert ok.kind == "envelope"
    assert ok.context.attempt == 3
    assert ok.attributes["signature"] == {"DataType": "Binary", "BinaryValue": "3q2+7w=="}
    assert json.loads(ok.body)["note"] == "café ☕"
    bad = unwrap((EVENTS / "envelope-invalid-attempt.json").read_text(), {}, message_id="m", source=SOURCE)
    assert (bad.kind, bad.problem) == (
        "invalid",
        "serverless_retry.attempt: must be between 1 and 10000, got -1",
    )
    text = (EVENTS / "envelope-final-exhausted.json").read_text()
    final = unwrap(text, {}, message_id="m", source=SOURCE)
    # redriven to the source: the next attempt of its chain, in its next generation
    stated = json.loads(text)["serverless_retry"]
    assert final.kind == "envelope"
    assert (final.context.attempt, final.context.generation) == (stated["attempt"] + 1, 1)


def _set(path: str, value: Any) -> Any:
    def mutate(doc: dict[str, Any]) -> None:
        *parents, last = path.split("/")
        target: Any = doc
        for part in parents:
            target = target[int(part)] if isinstance(target, list) else target[part]
        if value is _DELETE:
            del target[last]
        elif isinstance(target, list):
            target[int(last)] = value
        else:
            target[last] = value

    return mutate


_DELETE = object()
M = "serverless_retry"

MALFORMED: list[tuple[str, Any, str]] = [
    # (what, mutation, expected problem — matched as a prefix of "path: problem")
    ("version 2", _set(f"{M}/v", 2), "serverless_retry.v: unsupported version 2"),
    ("version string", _set(f"{M}/v", "1"), "serverless_retry.v: unsupported version '1'"),
    ("version bool", _set(f"{M}/v", True), "serverless_retry.v: unsupported version True"),
    ("version missing", _set(f"{M}/v", _DELETE), "serverless_retry.v: missing"),
    ("attempt zero", _set(f"{M}/attempt", 0), "serverless_retry.attempt: must be between 1 and 10000, got 0"),
    ("attempt negative", _set(f"{M}/attempt", -3), "serverless_retry.attempt: must be between 1 and 10000"),
    ("attempt absurd", _set(f"{M}/attempt", MAX_ATTEMPT + 1), "serverless_retry.attempt: must be between 1 and 10000, got 10001"),
    ("attempt huge", _set(f"{M}/attempt", 10**30), "serverless_retry.attempt: must be between"),
    ("attempt float", _set(f"{M}/attempt", 2.0), "serverless_retry.attempt: must be an integer, got number"),
    ("attempt string", _set(f"{M}/attempt", "2"), "serverless_retry.attempt: must be an integer, got string"),
    ("attempt bool", _set(f"{M}/attempt", True), "serverless_retry.attempt: must be an integer, got boolean"),
    ("attempt null", _set(f"{M}/attempt", None), "serverless_retry.attempt: must be an integer, got null"),
    ("attempt missing", _set(f"{M}/attempt", _DELETE), "serverless_retry.attempt: missing"),
    ("id empty", _set(f"{M}/id", ""), "serverless_retry.id: must not be empty"),
    ("id number", _set(f"{M}/id", 7), "serverless_retry.id: must be a string, got number"),
    ("id missing", _set(f"{M}/id", _DELETE), "serverless_retry.id: missing"),
    ("first_failed_at words", _set(f"{M}/first_failed_at", "yesterday"), "serverless_retry.first_failed_at: not an ISO-8601"),
    ("first_failed_at no Z", _set(f"{M}/first_failed_at", "2026-11-30T10:00:00"), "serverless_retry.first_failed_at: not an ISO-8601"),
    ("first_failed_at offset", _set(f"{M}/first_failed_at", "2026-11-30T10:00:00+00:00"), "serverless_retry.first_failed_at: not"),
    ("first_failed_at month 13", _set(f"{M}/first_failed_at", "2026-13-30T10:00:00Z"), "serverless_retry.first_failed_at: month must be"),
    ("first_failed_at number", _set(f"{M}/first_failed_at", 1764496800), "serverless_retry.first_failed_at: must be a string"),
    ("source number", _set(f"{M}/source", 5), "serverless_retry.source: must be a string"),
    ("history object", _set(f"{M}/history", {}), "serverless_retry.history: must be an array, got object"),
    ("history entry string", _set(f"{M}/history/0", "x"), "serverless_retry.history[0]: must be an object, got string"),
    ("history entry key missing", _set(f"{M}/history/1/at", _DELETE), "serverless_retry.history[1].at: missing"),
    ("history entry extra key", _set(f"{M}/history/0/extra", 1), "serverless_retry.history[0].extra: unexpected key"),
    ("history bad at", _set(f"{M}/history/0/at", "noon"), "serverless_retry.history[0].at: not an ISO-8601"),
    ("history negative delay", _set(f"{M}/history/0/delay_seconds", -1), "serverless_retry.history[0].delay_seconds: must be >= 0"),
    ("history delay string", _set(f"{M}/history/0/delay_seconds", "30"), "serverless_retry.history[0].delay_seconds: must be an integer"),
    ("history error number", _set(f"{M}/history/0/error", 429), "serverless_retry.history[0].error: must be a string"),
    ("history too long", _set(f"{M}/history", [valid_document()[M]["history"][0]] * 11), "serverless_retry.history: has 11 entries"),
    ("meta string", _set(M, "retry"), "serverless_retry: must be an object, got string"),
    ("meta array", _set(M, []), "serverless_retry: must be an object, got array"),
    ("meta null", _set(M, None), "serverless_retry: must be an object, got null"),
    ("meta unknown key", _set(f"{M}/retries", 3), "serverless_retry.retries: unexpected key"),
    # A final envelope (outcome present) is a redrive of its chain; its own fields are checked too.
    ("final outcome unknown", _set(f"{M}/outcome", "gone"), "serverless_retry.outcome: must be one of"),
    ("reason without outcome", _set(f"{M}/reason", "why"), "serverless_retry.outcome: missing"),
    ("final_error without outcome", _set(f"{M}/final_error", {}), "serverless_retry.outcome: missing"),
    ("exhausted_at without outcome", _set(f"{M}/exhausted_at", "2026-11-30T10:00:00Z"), "serverless_retry.outcome: missing"),
    ("top unknown key", _set("extra", 1), "extra: unexpected key"),
    ("body missing", _set("body", _DELETE), "body: missing"),
    ("body number", _set("body", 5), "body: must be a string, got number"),
    ("body object", _set("body", {"order_id": "o-1"}), "body: must be a string, got object"),
    ("attributes missing", _set("attributes", _DELETE), "attributes: missing"),
    ("attributes array", _set("attributes", []), "attributes: must be an object, got array"),
    ("attribute not object", _set("attributes/tenant", "acme"), "attributes.tenant: must be an object, got string"),
    ("attribute no DataType", _set("attributes/tenant/DataType", _DELETE), "attributes.tenant.DataType: missing"),
    ("attribute odd DataType", _set("attributes/tenant/DataType", "Text"), "attributes.tenant.DataType: must be String, Number or Binary"),
    ("attribute no value", _set("attributes/tenant/StringValue", _DELETE), "attributes.tenant.StringValue: missing"),
    ("attribute value number", _set("attributes/priority/StringValue", 3), "attributes.priority.StringValue: must be a string, got number"),
    ("attribute binary not base64", _set("attributes/signature/BinaryValue", "not base64!"), "attributes.signature.BinaryValue: must be base64"),
    ("attribute both values", _set("attributes/tenant/BinaryValue", "AA=="), "attributes.tenant.BinaryValue: does not go with DataType 'String'"),
    ("attribute unknown key", _set("attributes/tenant/StringListValues", []), "attributes.tenant.StringListValues: unexpected key"),
    ("attribute empty name", _set("attributes/", {"DataType": "String", "StringValue": "x"}), "attributes: an attribute name must not be empty"),
    # what SQS could not have carried: a body or attributes that a final copy or a redrive could not send
    ("body NUL", _set("body", "a\x00b"), "body: holds '\\x00' at 1, a character SQS does not carry"),
    ("body U+FFFF", _set("body", "\uffff"), "body: holds '\\uffff' at 0, a character SQS does not carry"),
    ("body lone surrogate", _set("body", "\ud800"), "body: holds '\\ud800' at 0"),
    ("id lone surrogate", _set(f"{M}/id", "m\udfff"), "serverless_retry.id: holds '\\udfff' at 1"),
    ("history error U+FFFE", _set(f"{M}/history/0/error", "\ufffe"), "serverless_retry.history[0].error: holds"),
    ("attribute value empty", _set("attributes/tenant/StringValue", ""), "attributes.tenant.StringValue: must not be empty"),
    ("attribute value control", _set("attributes/tenant/StringValue", "\x07"), "attributes.tenant.StringValue: holds '\\x07'"),
    ("attribute binary empty", _set("attributes/signature/BinaryValue", ""), "attributes.signature.BinaryValue: must not be empty"),
    ("attribute DataType too long", _set("attributes/tenant/DataType", "String." + "x" * 250), "attributes.tenant.DataType: is longer than"),
    ("eleven attributes", _set("attributes", {f"a{i}": {"DataType": "String", "StringValue": "v"} for i in range(11)}), "attributes: has 11 attributes, more than SQS's 10"),
    ("attribute name AWS.", _set("attributes/AWS.trace", {"DataType": "String", "StringValue": "v"}), "attributes.'AWS.trace': is not an SQS attribute name"),
    ("attribute name amazon.", _set("attributes/amazon.x", {"DataType": "String", "StringValue": "v"}), "attributes.'amazon.x': is not an SQS"),
    ("attribute name leading dot", _set("attributes/.a", {"DataType": "String", "StringValue": "v"}), "attributes.'.a': is not an SQS"),
    ("attribute name double dot", _set("attributes/a..b", {"DataType": "String", "StringValue": "v"}), "attributes.'a..b': is not an SQS"),
    ("attribute name space", _set("attributes/a b", {"DataType": "String", "StringValue": "v"}), "attributes.'a b': is not an SQS"),
    ("attribute name too long", _set("attributes/" + "n" * 257, {"DataType": "String", "StringValue": "v"}), "attributes.'nnnn"),
]  # fmt: skip


@pytest.mark.parametrize(("what", "mutate", "problem"), MALFORMED, ids=[m[0] for m in MALFORMED])
def test_every_malformed_envelope_is_invalid_with_a_clear_problem(
    what: str, mutate: Any, problem: str
) -> None:
    document = valid_document()
    mutate(document)
    raw = json.dumps(document)
    record_attributes: dict[str, MessageAttribute] = {"trace": {"DataType": "String", "StringValue": "t-1"}}
    incoming = unwrap(raw, record_attributes, message_id="m-bad", source=SOURCE, receive_count=3)
    assert incoming.kind == "invalid", what
    assert incoming.problem is not None
    assert incoming.problem.startswith(problem), incoming.problem
    # nothing is lost: the raw body and the record's attributes travel on to the exhausted queue
    assert incoming.body == raw
    assert incoming.attributes == record_attributes
    assert (incoming.context.id, incoming.context.attempt, incoming.meta) == ("m-bad", 1, None)


def test_the_unmutated_sample_is_valid() -> None:
    # guards the table above: each case breaks exactly one thing of an otherwise valid envelope
    assert unwrap(json.dumps(valid_document()), {}, message_id="m", source=SOURCE).kind == "envelope"


def test_fractional_seconds_in_timestamps_are_accepted() -> None:
    document = valid_document()
    document[M]["first_failed_at"] = "2026-11-30T10:00:00.250Z"
    incoming = unwrap(json.dumps(document), {}, message_id="m", source=SOURCE)
    assert incoming.context.first_failed_at == NOW + timedelta(milliseconds=250)


def test_validation_is_on_a_copy_of_nothing_shared() -> None:
    document = valid_document()
    before = copy.deepcopy(document)
    unwrap(json.dumps(document), {}, message_id="m", source=SOURCE)
    assert document == before


# --- record attributes ----------------------------------------------------------------------------


def test_attributes_from_lambda_record_form() -> None:
    record = {
        "tenant": {
            "stringValue": "acme",
            "stringListValues": [],
            "binaryListValues": [],
            "dataType": "String",
        },
        "priority": {"stringValue": "3", "dataType": "Number"},
        "blob": {"binaryValue": "3q2+7w==", "dataType": "Binary"},
        "raw": {"BinaryValue": b"\xde\xad", "DataType": "Binary.gz"},  # boto3 ReceiveMessage form
        "api": {"DataType": "String", "StringValue": "as is"},
        "broken": "not a mapping",
        "typeless": {"stringValue": "x"},
    }
    assert attributes_from_record(record) == {
        "tenant": {"DataType": "String", "StringValue": "acme"},
        "priority": {"DataType": "Number", "StringValue": "3"},
        "blob": {"DataType": "Binary", "BinaryValue": "3q2+7w=="},
        "raw": {"DataType": "Binary.gz", "BinaryValue": "3q0="},
        "api": {"DataType": "String", "StringValue": "as is"},
    }


# --- size and names -------------------------------------------------------------------------------


def test_sqs_message_size_counts_body_and_every_attribute_part() -> None:
    assert sqs_message_size("héllo") == 6  # é is two bytes in UTF-8
    assert sqs_message_size("😀") == 4
    # tenant: 6 (name) + 6 (String) + 4 (acme) = 16; priority: 8 + 6 + 1 = 15;
    # signature: 9 + 6 (Binary) + 4 (decoded bytes, not base64 text) = 19
    assert sqs_message_size("héllo", ATTRS) == 6 + 16 + 15 + 19
    assert sqs_message_size("", {"ключ": {"DataType": "String", "StringValue": "значение"}}) == 8 + 6 + 16


def test_fits_is_inclusive_at_the_limit() -> None:
    body = "a" * 100
    assert fits(body, 100)
    assert not fits(body, 99)
    assert fits(body, 116, {"tenant": {"DataType": "String", "StringValue": "acme"}})
    assert not fits(body, 115, {"tenant": {"DataType": "String", "StringValue": "acme"}})


def test_encode_is_compact_deterministic_and_keeps_unicode_raw() -> None:
    envelope = next_envelope(original("café"), retry(), ValueError("x"), now=NOW)
    text = encode(envelope)
    assert text == encode(json.loads(text))
    assert text.startswith('{"attributes":')
    assert ", " not in text
    assert "café" in text  # not \u00e9: SQS counts UTF-8 bytes, escapes would inflate the size


def test_schedule_name_is_deterministic_short_and_safe() -> None:
    name = schedule_name("8a1f6c2e-4b1d-4f0a-9d7e-2c3b4a5d6e7f", 3)
    assert name == schedule_name("8a1f6c2e-4b1d-4f0a-9d7e-2c3b4a5d6e7f", 3)
    assert name != schedule_name("8a1f6c2e-4b1d-4f0a-9d7e-2c3b4a5d6e7f", 4)
    assert name.startswith("sr-")
    assert len(name) == 64
    long_prefix = schedule_name("ключ 🔑 with spaces", 10_000, prefix="orders-prod_eu.west-1")
    for candidate in (name, long_prefix):
        assert len(candidate) <= 64
        assert re.fullmatch(r"[0-9a-zA-Z_.-]+", candidate)
    assert long_prefix.startswith("orders-prod_eu.west-1-")


@pytest.mark.parametrize("prefix", ["", "has space", "x" * 33, "ünï"])
def test_schedule_name_rejects_unusable_prefixes(prefix: str) -> None:
    with pytest.raises(ValueError, match="prefix"):
        schedule_name("id", 1, prefix=prefix)


def test_time_format_round_trip() -> None:
    assert format_time(NOW) == "2026-11-30T10:00:00Z"
    assert format_time(datetime(2026, 11, 30, 10, 0, 0, 999_999)) == "2026-11-30T10:00:00Z"  # naive = UTC
    assert (
        format_time(datetime(2026, 11, 30, 12, 0, tzinfo=timezone(timedelta(hours=2))))
        == "2026-11-30T10:00:00Z"
    )
    assert parse_time("2026-11-30T10:00:00Z") == NOW
    with pytest.raises(ValueError, match="ISO-8601"):
        parse_time("2026-11-30 10:00:00Z")


def test_the_unsendable_class_is_the_complement_of_what_sqs_allows() -> None:
    """The short spelling of the unsendable characters (cheap to compile at cold start) matches
    exactly what SQS's documented allowed ranges leave out, over every code point."""
    from serverless_retry.envelope import _UNSENDABLE

    allowed = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")
    every = "".join(map(chr, range(0x110000)))
    assert [m.start() for m in _UNSENDABLE.compiled.finditer(every)] == [
        m.start() for m in allowed.finditer(every)
    ]


@pytest.mark.parametrize(
    "moment",
    [
        datetime(2026, 11, 30, 10, 0, 0, tzinfo=UTC),
        datetime(2026, 11, 30, 10, 0, 0, 999_999, tzinfo=UTC),
        datetime(2026, 11, 30, 23, 30, 5, tzinfo=timezone(timedelta(hours=-5))),
        datetime(2026, 2, 28, 23, 59, 59),  # naive: UTC
        datetime(1, 1, 1, 0, 0, 0, tzinfo=UTC),
        datetime(9999, 12, 31, 23, 59, 59, tzinfo=UTC),
    ],
)
def test_format_time_writes_what_strftime_writes(moment: datetime) -> None:
    aware = moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)
    assert format_time(moment) == aware.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def test_an_unsigned_envelope_runs_in_a_chain_apart_keeping_its_claimants() -> None:
    from serverless_retry.signing import EnvelopeSigner

    doc = {
        "serverless_retry": {
            "v": 1, "id": "real", "attempt": 4, "first_failed_at": "2026-11-30T10:00:00Z",
            "source": SOURCE, "history": [], "claimants": ["carrier-1"], "sig": "forged",
        },
        "body": "b",
        "attributes": {},
    }  # fmt: skip
    got = unwrap(
        json.dumps(doc), {}, message_id="m", source=SOURCE, signer=EnvelopeSigner.from_key(b"k" * 32)
    )
    assert got.kind == "envelope"
    assert got.context.id == "unsigned:real"  # never the signed chain "real"
    assert got.meta is not None
    # the ids it was carried in keep its own claims in that chain (else a waiting copy is lost)
    assert got.meta["claimants"] == ["carrier-1"]
    assert "sig" not in got.meta
