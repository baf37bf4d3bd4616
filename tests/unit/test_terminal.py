"""Terminal messages always carry their outcome and reason, fit the retry-exhausted queue, and read back
(read_terminal) to the exact original body and attributes, in every form ever written."""

from __future__ import annotations

import base64
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from serverless_retry.envelope import (
    ENVELOPE_KEY,
    Incoming,
    MessageAttribute,
    Outcome,
    RetryContext,
    encode,
    next_envelope,
    sqs_message_size,
    unwrap,
)
from serverless_retry.errors import RetryableError
from serverless_retry.policy import Decision
from serverless_retry.terminal import FRAME_OVERHEAD_BYTES, final_message, frame_header, read_terminal

EVENTS = Path(__file__).resolve().parent.parent / "events"
NOW = datetime(2026, 11, 30, 10, 0, 0, tzinfo=UTC)
SOURCE = "arn:aws:sqs:us-east-1:123456789012:orders"
OUTCOMES: tuple[Outcome, ...] = ("exhausted", "non-retryable", "invalid-envelope", "too-large-to-retry")
# SQS refuses any other character in a body or an attribute value.
SQS_VALID = "[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]"
TEN_ATTRIBUTES: dict[str, MessageAttribute] = {
    **{f"a{i}": {"DataType": "String", "StringValue": f"value {i}"} for i in range(8)},
    "n": {"DataType": "Number", "StringValue": "42"},
    "blob": {"DataType": "Binary", "BinaryValue": base64.b64encode(b"\x00\xffraw").decode()},
}


def original(body: str, attributes: dict[str, MessageAttribute] | None = None, mid: str = "m-1") -> Incoming:
    context = RetryContext(mid, 1, None, (), SOURCE)
    return Incoming("original", body, dict(attributes or {}), context, None, None)


def as_received(attributes: dict[str, MessageAttribute]) -> dict[str, dict[str, Any]]:
    """Message attributes as boto3's ReceiveMessage returns them: binary values as bytes."""
    out: dict[str, dict[str, Any]] = {}
    for name, attr in attributes.items():
        value: dict[str, Any] = {"DataType": attr["DataType"]}
        if "BinaryValue" in attr:
            value["BinaryValue"] = base64.b64decode(attr["BinaryValue"])
        else:
            value["StringValue"] = attr["StringValue"]
        out[name] = value
    return out


def sendable(text: str) -> bool:
    import re

    return re.search(SQS_VALID, text) is None


def finish(
    incoming: Incoming,
    max_bytes: int,
    *,
    outcome: Outcome = "too-large-to-retry",
    reason: str = "the retry envelope does not fit",
    error: BaseException | None = None,
) -> tuple[str, dict[str, MessageAttribute], str]:
    return final_message(
        incoming,
        outcome,
        now=NOW,
        error=RetryableError("busy") if error is None else error,
        reason=reason,
        traceback_text="Traceback (most recent call last):\n  ...\nRetryableError: busy\n",
        max_bytes=max_bytes,
    )


# --- the forms, case by case ----------------------------------------------------------------------


def test_a_small_message_gets_the_full_final_envelope() -> None:
    incoming = original('{"order": 1}', {"tenant": {"DataType": "String", "StringValue": "acme"}})
    body, attributes, form = finish(
        incoming, 262_144, outcome="exhausted", reason="attempt 5 >= max_attempts 5"
    )
    assert (form, attributes) == ("envelope", {})
    view = read_terminal(body, {}, message_id="x-1")
    assert (view.form, view.outcome, view.reason) == ("envelope", "exhausted", "attempt 5 >= max_attempts 5")
    assert (view.id, view.attempt, view.error_type, view.error) == ("m-1", 1, "RetryableError", "busy")
    assert view.traceback.endswith("RetryableError: busy\n")
    assert (view.body, view.attributes) == (incoming.body, incoming.attributes)


def test_a_body_at_the_source_limit_with_ten_attributes_is_framed_and_fits() -> None:
    source_max = 4096
    exhausted_max = source_max + FRAME_OVERHEAD_BYTES
    padding = source_max - sqs_message_size("", TEN_ATTRIBUTES)
    incoming = original(
        '"' * (padding - 2) + "é", TEN_ATTRIBUTES
    )  # exactly at the limit; escaping doubles it
    assert sqs_message_size(incoming.body, incoming.attributes) == source_max

    body, attributes, form = finish(incoming, exhausted_max)

    assert form == "framed"
    assert attributes == TEN_ATTRIBUTES  # all ten kept, no room (and no need) for another
    assert sqs_message_size(body, attributes) <= exhausted_max
    assert body.endswith("\n" + incoming.body)
    view = read_terminal(body, as_received(attributes), message_id="x-1")
    assert (view.form, view.outcome) == ("framed", "too-large-to-retry")
    assert view.reason == "the retry envelope does not fit"
    assert (view.id, view.attempt, view.source) == ("m-1", 1, SOURCE)
    assert (view.error_type, view.error, view.exhausted_at) == (
        "RetryableError",
        "busy",
        "2026-11-30T10:00:00Z",
    )
    assert view.body == incoming.body
    assert view.attributes == TEN_ATTRIBUTES


@pytest.mark.parametrize("char", ['"', "\\", "\n", "\t"])
def test_a_body_that_json_escaping_doubles_is_framed_not_escaped(char: str) -> None:
    source_max = 2048
    incoming = original(char * source_max)
    assert len(json.dumps(incoming.body, ensure_ascii=False)) > 2 * source_max  # "\"\"..." doubles
    body, attributes, form = finish(incoming, source_max + FRAME_OVERHEAD_BYTES)
    assert form == "framed"
    assert sqs_message_size(body, attributes) <= source_max + FRAME_OVERHEAD_BYTES
    assert read_terminal(body, attributes).body == incoming.body


def test_an_invalid_envelope_at_the_limit_keeps_its_raw_body() -> None:
    raw = json.dumps({ENVELOPE_KEY: {"v": 2}, "body": '"' * 3000, "attributes": {}})  # escaped twice over
    incoming = unwrap(raw, {}, message_id="m-9", source=SOURCE)
    assert incoming.kind == "invalid"
    body, _, form = finish(incoming, len(raw) + FRAME_OVERHEAD_BYTES, outcome="invalid-envelope", reason="")
    assert form == "framed"
    view = read_terminal(body, {})
    assert (view.outcome, view.reason, view.body) == ("invalid-envelope", incoming.problem, raw)


def test_the_header_never_exceeds_the_overhead_whatever_the_texts() -> None:
    """Every text at its worst: control characters (6 bytes each once escaped), 4-byte characters,
    characters SQS refuses, an absurd attempt."""
    nasty = '\x01\U0001f600\ud800\uffff"' * 4000
    context = RetryContext(nasty, 10**40, NOW, (), nasty)
    incoming = Incoming("original", "b", {}, context, None, None)
    error_class = type(nasty.replace("\ud800", "")[:300], (Exception,), {})  # a class name is encodable
    header = frame_header(incoming, "too-large-to-retry", now=NOW, reason=nasty, error=error_class(nasty))
    assert len(header.encode("utf-8")) + 1 <= FRAME_OVERHEAD_BYTES
    assert "\n" not in header
    assert sendable(header)
    summary = json.loads(header)[ENVELOPE_KEY]
    assert summary["reason"].startswith("\x01\U0001f600\ufffd\ufffd")  # cut, and made sendable
    assert summary["attempt"] == 10**18


def test_texts_that_sqs_would_refuse_are_made_sendable() -> None:
    incoming = original("order")
    error = ValueError("bad \ud800 and \uffff here")
    body, _, form = finish(incoming, 262_144, reason="why \udfff", error=error)
    assert form == "envelope"
    body.encode("utf-8")  # strict: no lone surrogate left
    assert sendable(body)
    view = read_terminal(body, {})
    assert (view.error, view.reason) == ("bad \ufffd and \ufffd here", "why \ufffd")


def test_an_exhausted_queue_smaller_than_required_still_gets_outcome_and_reason() -> None:
    incoming = original("z" * 4000, TEN_ATTRIBUTES)
    size = sqs_message_size(incoming.body, incoming.attributes)
    long_reason = "r" * 600
    body, attributes, form = finish(incoming, size + 80, reason=long_reason)
    assert form == "framed"
    assert sqs_message_size(body, attributes) <= size + 80
    view = read_terminal(body, as_received(attributes))
    assert view.outcome == "too-large-to-retry"
    assert long_reason.startswith(view.reason)
    assert view.reason
    assert (view.body, view.attributes) == (incoming.body, TEN_ATTRIBUTES)
    # Not even the outcome fits: the original goes as it is (read as "unknown").
    body, attributes, form = finish(incoming, size + 20)
    assert (form, body, attributes) == ("original", incoming.body, TEN_ATTRIBUTES)
    assert read_terminal(body, as_received(attributes)).outcome == "unknown"


# --- every form ever written reads back -------------------------------------------------------------


def test_each_sample_message_of_the_exhausted_queue_reads_as_documented() -> None:
    """tests/events/exhausted-messages.json: ReceiveMessage-shaped messages in each form written so far
    (the legacy forms included); every tier that reads the exhausted queue reads this file."""
    samples = json.loads((EVENTS / "exhausted-messages.json").read_text())
    seen = set()
    for sample in samples:
        message, expected = sample["message"], sample["expected"]
        view = read_terminal(
            message["Body"],
            as_received(message.get("MessageAttributes", {})),
            message_id=message["MessageId"],
        )
        got = {key: getattr(view, key) for key in expected}
        assert got == expected, sample["form"]
        seen.add(view.form)
    assert seen == {"envelope", "framed", "original+meta", "self-healing", "bare"}


def test_a_self_healing_record_keeps_its_detail_for_the_redrive() -> None:
    """The self-healing form: the whole {payload, meta} detail comes back, so a redrive can re-invoke the
    function that failed with the event exactly as it first arrived."""
    sample = next(
        s for s in json.loads((EVENTS / "exhausted-messages.json").read_text()) if s["form"] == "self-healing"
    )
    view = read_terminal(sample["message"]["Body"], {}, message_id="m-9")
    record = json.loads(sample["message"]["Body"])
    assert view.detail == record["detail"]
    assert json.loads(view.body) == record["detail"]["payload"]
    assert view.traceback.endswith("raise HTTPError(response.status_code, response.text)\n")
    assert view.traceback.count("\n  File ") == 3  # one frame a line, no blank lines between


@pytest.mark.parametrize(
    ("meta", "payload", "expected"),
    [
        # An invalid failure record: the raw failure-queue body is the payload, no function is known.
        (
            {"function_arn": "unknown", "error_type": "InvalidFailureRecord", "retry_id": "", "attempt": 1},
            "not json {",
            ("invalid-failure-record", "m-8", "", "not json {"),
        ),
        # Odd types never raise: what is not a string or a number is left out.
        (
            {"function_arn": 7, "retry_id": None, "attempt": "2", "stack_trace": "x"},
            {"a": 1},
            ("invalid-failure-record", "m-8", "", '{"a":1}'),
        ),
    ],
)
def test_a_self_healing_record_with_little_to_say_still_reads(
    meta: dict[str, Any], payload: Any, expected: tuple[str, str, str, str]
) -> None:
    body = json.dumps(
        {"outcome": "invalid-failure-record", "reason": "r", "detail": {"payload": payload, "meta": meta}}
    )
    view = read_terminal(body, {}, message_id="m-8")
    assert (view.form, view.outcome, view.id, view.source, view.body) == ("self-healing", *expected)
    assert view.attempt in (0, 1)


@pytest.mark.parametrize(
    "document",
    [
        {"outcome": "exhausted", "detail": {"meta": {}}},  # no payload
        {"outcome": "exhausted", "detail": {"payload": 1, "meta": []}},  # meta not an object
        {"outcome": 3, "detail": {"payload": 1, "meta": {}}},  # outcome not a string
        {"outcome": "exhausted", "reason": 5, "detail": {"payload": 1, "meta": {}}},
    ],
)
def test_what_only_looks_like_a_self_healing_record_is_bare(document: dict[str, Any]) -> None:
    assert read_terminal(json.dumps(document), {}, message_id="m").form == "bare"


def test_the_framed_sample_is_what_the_writer_writes_today() -> None:
    """The framed sample in tests/events was written by final_message: if the writer changes, the sample
    (and so the reader's tests) must change with it, on purpose."""
    samples = json.loads((EVENTS / "exhausted-messages.json").read_text())
    [framed] = [s for s in samples if s["form"] == "framed"]
    expected = framed["expected"]
    attributes = {
        name: {"DataType": a["DataType"], "StringValue": a["StringValue"]}
        for name, a in framed["message"]["MessageAttributes"].items()
    }
    incoming = Incoming(
        "original",
        expected["body"],
        attributes,  # type: ignore[arg-type]
        RetryContext(expected["id"], expected["attempt"], None, (), expected["source"]),
        None,
        None,
    )
    written = framed["message"]["Body"]
    body, _, form = final_message(
        incoming,
        expected["outcome"],
        now=datetime(2026, 11, 30, 10, 21, 20, tzinfo=UTC),
        error=TimeoutError(expected["error"]),
        reason=expected["reason"],
        traceback_text="",
        max_bytes=sqs_message_size(written, attributes),  # type: ignore[arg-type]
    )
    assert form == "framed"  # the envelope would not fit exactly there
    assert body == written


def test_lambda_event_attribute_form_reads_the_same() -> None:
    legacy = {"outcome": "too-large-to-retry", "reason": "r", "id": "m-1", "attempt": 2, "v": 1}
    record_attributes = {
        "tenant": {
            "dataType": "String",
            "stringValue": "acme",
            "stringListValues": [],
            "binaryListValues": [],
        },
        "blob": {"dataType": "Binary", "binaryValue": "AP8=", "stringListValues": [], "binaryListValues": []},
        ENVELOPE_KEY: {"dataType": "String", "stringValue": json.dumps(legacy)},
    }
    view = read_terminal("body", record_attributes)
    assert (view.form, view.outcome, view.attempt) == ("original+meta", "too-large-to-retry", 2)
    assert view.attributes == {
        "tenant": {"DataType": "String", "StringValue": "acme"},
        "blob": {"DataType": "Binary", "BinaryValue": "AP8="},
    }


def test_a_retry_envelope_dead_lettered_by_sqs_reads_its_original() -> None:
    first = original('{"order": 2}', {"tenant": {"DataType": "String", "StringValue": "acme"}})
    decision = Decision("retry", 30, "sqs-delay", 1, None, "r", "TimeoutError")
    body = encode(next_envelope(first, decision, TimeoutError("slow"), now=NOW))
    view = read_terminal(body, {}, message_id="dlq-1")
    assert (view.form, view.outcome, view.id, view.attempt) == ("envelope", "unknown", "m-1", 2)
    assert (view.body, view.attributes) == (first.body, first.attributes)
    assert [h["error"] for h in view.history] == ["slow"]


def test_an_attribute_that_is_not_one_is_kept_and_named_never_dropped() -> None:
    document = {
        ENVELOPE_KEY: {"outcome": "exhausted", "reason": "r", "id": "m-1", "attempt": 5},
        "body": "b",
        "attributes": {
            "tenant": {"StringValue": "no data type"},
            "ok": {"DataType": "String", "StringValue": "v"},
        },
    }
    view = read_terminal(json.dumps(document))
    assert view.problem == "not SQS message attributes: tenant"
    assert view.attributes["tenant"] == {"StringValue": "no data type"}  # sending it fails, loudly
    assert view.attributes["ok"] == {"DataType": "String", "StringValue": "v"}
    assert read_terminal(encode({**document, "attributes": {}})).problem == ""  # type: ignore[typeddict-item]


@pytest.mark.parametrize(
    "body",
    [
        "",
        "plain",
        '{"serverless_retry": {"outcome": "exhausted"}}',  # a whole JSON body, not a frame
        '{"serverless_retry": {"outcome": "exhausted"}} tail',  # no newline after the header
        '{"serverless_retry": {"outcome": 5}}\nbody',  # outcome not a string
        '{"serverless_retry": {"outcome": "x"}, "more": 1}\nbody',  # other keys: not our header
        '{"serverless_retry": "x", "body": "b"}',
        '{"serverless_retry": {}, "body": 5}',
        "[" * 100_000,
    ],
)
def test_anything_else_is_bare_and_untouched(body: str) -> None:
    view = read_terminal(body, {"tenant": {"DataType": "String", "StringValue": "acme"}}, message_id="m-7")
    assert (view.form, view.outcome, view.id, view.body) == ("bare", "unknown", "m-7", body)
    assert view.attributes == {"tenant": {"DataType": "String", "StringValue": "acme"}}


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=300), st.dictionaries(st.text(max_size=5), st.from_type(object), max_size=3))
def test_read_terminal_never_raises(body: str, attributes: dict[str, Any]) -> None:
    view = read_terminal(body, attributes)
    assert view.outcome


# --- the property: whatever the message, the final copy fits and reads back exactly ---------------

sqs_chars = st.characters(
    codec="utf-8",
    exclude_characters="".join(chr(c) for c in range(32) if chr(c) not in "\t\n\r") + "\ufffe\uffff",
)
names = st.from_regex(r"[A-Za-z0-9_-]{1,10}(\.[A-Za-z0-9_-]{1,5})?", fullmatch=True).filter(
    lambda name: not name.lower().startswith(("aws.", "amazon."))
)


@st.composite
def attribute_values(draw: st.DrawFn) -> MessageAttribute:
    kind = draw(st.sampled_from(["String", "Number", "Binary", "String.json"]))
    if kind == "Binary":
        return {
            "DataType": kind,
            "BinaryValue": base64.b64encode(draw(st.binary(min_size=1, max_size=300))).decode(),
        }
    if kind == "Number":
        return {"DataType": kind, "StringValue": str(draw(st.integers()))}
    return {"DataType": kind, "StringValue": draw(st.text(sqs_chars, min_size=1, max_size=300))}


def _trim(body: str, attributes: dict[str, MessageAttribute], limit: int) -> str:
    """The longest prefix of body with which the message stays within limit bytes."""
    over = sqs_message_size(body, attributes) - limit
    while over > 0 and body:
        cut = max(1, over // 4)
        body = body[:-cut]
        over = sqs_message_size(body, attributes) - limit
    return body


@st.composite
def arrived(
    draw: st.DrawFn, source_sizes: tuple[int, int] = (1024, 6144), at_limit: bool | None = None
) -> tuple[Incoming, int]:
    """A message that came through a source queue of maximum size source_max, as the consumer holds it."""
    source_max = draw(st.integers(*source_sizes))
    attributes = draw(st.dictionaries(names, attribute_values(), max_size=10))
    assume(sqs_message_size("", attributes) < source_max)
    # Characters JSON escaping doubles are frequent, so the final envelope often does not fit.
    text = draw(st.text(st.one_of(sqs_chars, st.sampled_from('"\\\n')), max_size=2000))
    if draw(st.booleans()) if at_limit is None else at_limit:  # at the limit, in quotes: the hard case
        text += '"' * source_max
    body = _trim(text, attributes, source_max)
    kind = draw(st.sampled_from(["original", "envelope", "invalid"] if at_limit is None else ["original"]))
    mid = draw(st.text(sqs_chars, min_size=1, max_size=100))
    first = original(body, attributes, mid)
    if kind == "original":
        return first, source_max
    if kind == "envelope":
        decision = Decision("retry", 30, "sqs-delay", 1, None, "r", "TimeoutError")
        wrapped = encode(next_envelope(first, decision, TimeoutError(draw(st.text(max_size=50))), now=NOW))
        assume(sqs_message_size(wrapped) <= source_max)  # it came through the queue
        incoming = unwrap(wrapped, {}, message_id="copy", source=SOURCE)
        assert incoming.kind == "envelope"
        return incoming, source_max
    raw = _trim(json.dumps({ENVELOPE_KEY: {"v": 0}, "body": text}), attributes, source_max)
    incoming = unwrap(raw, attributes, message_id=mid, source=SOURCE)
    assume(incoming.kind == "invalid")
    return incoming, source_max


@settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much]
)
@given(
    arrived(),
    st.sampled_from(OUTCOMES),
    st.text(st.characters(codec="ascii", min_codepoint=32), max_size=120),
    st.text(max_size=600),
    st.one_of(st.just(0), st.integers(0, 4096)),  # 0: the exhausted queue exactly as large as required
)
def test_every_final_copy_fits_and_reads_back_exactly(
    message: tuple[Incoming, int], outcome: Outcome, reason: str, error_text: str, spare: int
) -> None:
    check_final_copy(message, outcome, reason, error_text, spare)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    arrived(source_sizes=(6144, 16384), at_limit=True),
    st.sampled_from(OUTCOMES),
    st.text(st.characters(codec="ascii", min_codepoint=32), max_size=120),
    st.text(max_size=600),
    st.integers(0, 64),
)
def test_a_message_at_the_source_limit_is_framed_and_fits(
    message: tuple[Incoming, int], outcome: Outcome, reason: str, error_text: str, spare: int
) -> None:
    """Bodies at the source's limit whose escaping doubles them: the envelope cannot fit, the frame must."""
    assert check_final_copy(message, outcome, reason, error_text, spare) == "framed"


def check_final_copy(
    message: tuple[Incoming, int], outcome: Outcome, reason: str, error_text: str, spare: int
) -> str:
    incoming, source_max = message
    exhausted_max = source_max + FRAME_OVERHEAD_BYTES + spare
    body, attributes, form = final_message(
        incoming,
        outcome,
        now=NOW + timedelta(minutes=5),
        error=RuntimeError(error_text),
        reason=reason,
        traceback_text="Traceback ...\n" + error_text,
        max_bytes=exhausted_max,
    )
    assert form in ("envelope", "framed")
    assert sqs_message_size(body, attributes) <= exhausted_max
    assert len(attributes) <= 10
    assert sendable(body)
    view = read_terminal(body, as_received(attributes), message_id="received-id")
    assert view.outcome == outcome
    expected_reason = reason or incoming.problem or ""
    assert expected_reason.startswith(view.reason)
    assert view.reason == expected_reason or len(view.reason) >= 100  # long problems are cut, not lost
    assert view.body == incoming.body
    assert view.attributes == incoming.attributes
    return form
