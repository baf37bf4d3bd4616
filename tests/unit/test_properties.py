"""Properties that must hold for every input, not just the examples we thought of."""

from __future__ import annotations

import base64
import json
import math
import random
from datetime import UTC, datetime, timedelta
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from serverless_retry.backoff import JITTERS, MAX_DELAY_SECONDS, STRATEGIES, Backoff
from serverless_retry.consumer.delivery import Outgoing, send_delay
from serverless_retry.envelope import (
    ENVELOPE_KEY,
    HISTORY_LIMIT,
    Incoming,
    MessageAttribute,
    RetryContext,
    encode,
    encode_next_envelope,
    next_envelope,
    original,
    sqs_message_size,
    unwrap,
)
from serverless_retry.errors import HttpError, NonRetryableError, RetryableError
from serverless_retry.message import first_delivery, original_incoming
from serverless_retry.policy import (
    SQS_MAX_DELAY_SECONDS,
    TRANSPORTS,
    VISIBILITY_MAX_SECONDS,
    Decision,
    RetryPolicy,
    Rule,
)

FAST = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
NOW = datetime(2026, 11, 30, 10, 0, 0, tzinfo=UTC)

seconds = st.floats(min_value=0, max_value=MAX_DELAY_SECONDS, allow_nan=False)


@st.composite
def backoffs(draw: st.DrawFn) -> Backoff:
    base = draw(st.one_of(st.integers(0, 3600), seconds))
    cap = draw(st.one_of(st.just(base), st.floats(min_value=base, max_value=MAX_DELAY_SECONDS)))
    return Backoff(
        strategy=draw(st.sampled_from(STRATEGIES)),
        base_seconds=base,
        multiplier=draw(st.floats(min_value=1, max_value=1000)),
        max_seconds=cap,
        jitter=draw(st.sampled_from(JITTERS)),
    )


retry_numbers = st.integers(min_value=1, max_value=10**7)
previous_delays = st.one_of(st.none(), st.floats(allow_nan=True, allow_infinity=True))


@FAST
@given(backoffs(), retry_numbers, st.integers(0, 2**64), previous_delays)
def test_delay_is_always_within_zero_and_the_cap(
    backoff: Backoff, retry_number: int, seed: int, previous: float | None
) -> None:
    delay = backoff.delay(retry_number, random.Random(seed), previous)
    assert 0 <= delay <= backoff.max_seconds
    assert not math.isnan(delay)


class _Draw:
    """A Uniform that answers any value, NaN and infinities included, to reach the clamp itself."""

    def __init__(self, value: float) -> None:
        self.value = value

    def uniform(self, a: float, b: float) -> float:
        return self.value


@FAST
@given(backoffs(), retry_numbers, st.floats(allow_nan=True, allow_infinity=True), previous_delays)
def test_delay_clamps_any_draw_as_min_max_would(
    backoff: Backoff, retry_number: int, draw: float, previous: float | None
) -> None:
    # delay() clamps with comparisons instead of min(max(value, 0.0), cap): the same value, NaN too
    delay = backoff.delay(retry_number, _Draw(draw), previous)
    if backoff.jitter == "none":
        draw = backoff.base_delay(retry_number)
    elif backoff.jitter == "equal":
        draw = backoff.base_delay(retry_number) / 2 + draw
    expected = min(max(draw, 0.0), float(backoff.max_seconds))
    assert delay == expected or (math.isnan(delay) and math.isnan(expected))


@FAST
@given(
    st.integers(-10_000, 10_000),
    st.one_of(st.none(), st.integers(-2_000_000, 2_000_000)),
    st.one_of(st.none(), st.integers(-2_000_000_000, 2_000_000_000)),
)
def test_send_delay_is_the_time_left_clamped_as_min_max_would(
    delay_seconds: int, due_offset_ms: int | None, now_offset_us: int | None
) -> None:
    due_at = None if due_offset_ms is None else NOW + timedelta(milliseconds=due_offset_ms)
    now = None if now_offset_us is None else NOW + timedelta(microseconds=now_offset_us)
    delay = delay_seconds
    if due_at is not None and now is not None:
        delay = min(delay, math.ceil((due_at - now).total_seconds()))
    expected = max(0, min(delay, SQS_MAX_DELAY_SECONDS))
    assert send_delay(Outgoing("m", "b", delay_seconds=delay_seconds, due_at=due_at), now) == expected


@FAST
@given(backoffs(), st.integers(min_value=1, max_value=10_000))
def test_unjittered_curves_never_decrease(backoff: Backoff, retry_number: int) -> None:
    assert backoff.base_delay(retry_number) <= backoff.base_delay(retry_number + 1)
    assert backoff.base_delay(retry_number) <= backoff.max_seconds


@FAST
@given(
    base=st.integers(0, 3600),
    multiplier=st.floats(min_value=1, max_value=10),
    numbers=st.lists(st.integers(1, 500), min_size=2, max_size=10),
)
def test_exponential_without_jitter_is_monotonic_in_the_attempt(
    base: int, multiplier: float, numbers: list[int]
) -> None:
    backoff = Backoff("exponential", base, multiplier, 3600, "none")
    rand = random.Random(0)
    ordered = sorted(numbers)
    delays = [backoff.delay(n, rand) for n in ordered]
    assert delays == sorted(delays)


# --- policies -------------------------------------------------------------------------------------

error_names = st.sampled_from(
    ["TimeoutError", "ConnectionError", "ValueError", "KeyError", "HttpError", "mod.Error"]
)


@st.composite
def rules(draw: st.DrawFn) -> Rule:
    errors = tuple(draw(st.lists(error_names, max_size=3)))
    statuses = tuple(draw(st.lists(st.integers(100, 599), max_size=3)))
    regex = draw(st.one_of(st.none(), st.sampled_from(["timeout", "^db", "(a|b)+", ""])))
    if not errors and not statuses and regex is None:
        errors = ("RuntimeError",)
    return Rule(
        errors=errors,
        http_status=statuses,
        message_regex=regex,
        retry=draw(st.booleans()),
        max_attempts=draw(st.one_of(st.none(), st.integers(1, 10_000))),
        backoff=draw(st.one_of(st.none(), backoffs())),  # complete, as a parsed rule's is
        honor_retry_after=draw(st.booleans()),
    )


@st.composite
def policies(draw: st.DrawFn) -> RetryPolicy:
    return RetryPolicy(
        max_attempts=draw(st.integers(1, 10_000)),
        max_age_seconds=draw(st.one_of(st.none(), st.integers(1, 10**9))),
        backoff=draw(backoffs()),
        rules=tuple(draw(st.lists(rules(), max_size=4))),
        unmatched=draw(st.sampled_from(["retry", "dead-letter"])),
        transport=draw(st.sampled_from(TRANSPORTS)),
        honor_retry_after=draw(st.booleans()),
    )


@FAST
@given(policies())
def test_policy_to_dict_round_trips_through_json(policy: RetryPolicy) -> None:
    assert RetryPolicy.from_json(json.dumps(policy.to_dict())) == policy


errors = st.one_of(
    st.builds(TimeoutError, st.text(max_size=20)),
    st.builds(ValueError, st.text(max_size=20)),
    st.builds(KeyError, st.text(max_size=20)),
    st.builds(NonRetryableError, st.text(max_size=20)),
    st.builds(
        HttpError,
        st.integers(100, 599),
        st.text(max_size=20),
        retry_after=st.one_of(st.none(), st.integers(-10, 10**7), st.text(max_size=30)),
    ),
    st.builds(RetryableError, st.text(max_size=20), retry_after=st.one_of(st.none(), st.floats())),
)


@FAST
@given(
    policy=policies(),
    error=errors,
    attempt=st.integers(1, 10_000),
    age=st.integers(0, 10**8),
    seed=st.integers(0, 2**32),
    previous=previous_delays,
)
def test_decide_always_returns_a_consistent_decision(
    *, policy: RetryPolicy, error: Exception, attempt: int, age: int, seed: int, previous: float | None
) -> None:
    decision = policy.decide(
        error,
        attempt=attempt,
        first_failed_at=NOW - timedelta(seconds=age),
        now=NOW,
        rand=random.Random(seed),
        previous_delay=previous,
    )
    assert isinstance(decision, Decision)
    assert decision.attempt == attempt
    assert decision.error_type == type(error).__name__
    if decision.action != "retry":
        assert (decision.delay_seconds, decision.transport) == (0, None)
        return
    rule = policy.rules[decision.rule_index] if decision.rule_index is not None else None
    budget = rule.max_attempts if rule is not None and rule.max_attempts is not None else policy.max_attempts
    assert attempt < budget
    assert not isinstance(error, NonRetryableError)
    cap = (rule.backoff if rule is not None and rule.backoff is not None else policy.backoff).max_seconds
    assert 0 <= decision.delay_seconds <= math.ceil(cap)
    if decision.transport == "sqs-delay":
        assert decision.delay_seconds <= SQS_MAX_DELAY_SECONDS
    if decision.transport == "visibility":
        assert decision.delay_seconds <= VISIBILITY_MAX_SECONDS
    if policy.transport == "auto":
        assert decision.transport == ("sqs-delay" if decision.delay_seconds <= 900 else "scheduler")


# --- envelopes ------------------------------------------------------------------------------------

# any unicode, lone surrogates included: the envelope must not be what corrupts a body
any_text = st.text(alphabet=st.characters(exclude_categories=()), max_size=200)
# what SQS carries in a body or an attribute value: #x9 #xA #xD #x20-#xD7FF #xE000-#xFFFD #x10000-
sqs_chars = st.characters(
    codec="utf-8",
    exclude_characters="".join(chr(c) for c in range(32) if chr(c) not in "\t\n\r") + "\ufffe\uffff",
)
sqs_body = st.text(alphabet=sqs_chars, max_size=200)
sqs_attribute_names = st.from_regex(r"[A-Za-z0-9_-]{1,12}(\.[A-Za-z0-9_-]{1,6})?", fullmatch=True).filter(
    lambda name: not name.lower().startswith(("aws.", "amazon."))
)


@st.composite
def message_attributes(draw: st.DrawFn) -> MessageAttribute:
    kind = draw(st.sampled_from(["String", "Number", "Binary", "String.custom"]))
    if kind == "Binary":
        data = draw(st.binary(min_size=1, max_size=64))
        return {"DataType": kind, "BinaryValue": base64.b64encode(data).decode()}
    if kind == "Number":
        return {"DataType": kind, "StringValue": str(draw(st.integers()))}
    return {"DataType": kind, "StringValue": draw(st.text(alphabet=sqs_chars, min_size=1, max_size=200))}


attribute_maps = st.dictionaries(sqs_attribute_names, message_attributes(), max_size=10)


def _original(body: str, attributes: dict[str, MessageAttribute], message_id: str) -> Incoming:
    # built directly: an arbitrary body may itself look like an envelope, which unwrap would judge
    context = RetryContext(message_id, 1, None, (), "arn:aws:sqs:us-east-1:123456789012:q")
    return Incoming("original", body, attributes, context, None, None)


def _event_form(attribute: MessageAttribute) -> dict[str, Any]:
    """A message attribute as a Lambda SQS record carries it."""
    out: dict[str, Any] = {"dataType": attribute["DataType"], "stringListValues": [], "binaryListValues": []}
    if "StringValue" in attribute:
        out["stringValue"] = attribute["StringValue"]
    if "BinaryValue" in attribute:
        out["binaryValue"] = attribute["BinaryValue"]
    return out


@FAST
@given(sqs_body, attribute_maps, st.integers(1, 14), st.booleans())
def test_a_failed_original_s_incoming_is_what_envelope_original_makes_of_its_record(
    body: str, attributes: dict[str, MessageAttribute], attempt: int, read_first: bool
) -> None:
    # The consumer builds a failed original's Incoming from its Message (message.original_incoming)
    # instead of through envelope.original(): the same Incoming, whether or not the processor read
    # the attributes first.
    source = "arn:aws:sqs:us-east-1:123456789012:q"
    record = {
        "messageId": "m-1",
        "body": body,
        "messageAttributes": {n: _event_form(a) for n, a in attributes.items()},
    }
    message = first_delivery("m-1", body, record, source, attempt)
    if read_first:
        assert message.attributes == attributes
    expected = original(body, attributes, message_id="m-1", source=source, receive_count=attempt)
    assert original_incoming(message) == expected


@FAST
@given(sqs_body, attribute_maps, st.text(sqs_chars, min_size=1, max_size=80), st.integers(1, 14), any_text)
def test_envelope_round_trips_any_body_and_attributes(
    body: str, attributes: dict[str, MessageAttribute], message_id: str, retries: int, error_text: str
) -> None:
    incoming = _original(body, attributes, message_id)
    for n in range(1, retries + 1):
        decision = Decision("retry", n, "sqs-delay", n, None, "p", "ValueError")
        text = encode(
            next_envelope(incoming, decision, ValueError(error_text), now=NOW + timedelta(seconds=n))
        )
        assert sqs_message_size(text) >= len(text)  # counting never crashes, bytes >= characters
        incoming = unwrap(text, {}, message_id=f"copy-{n}", source="elsewhere")
        assert incoming.kind == "envelope", incoming.problem
        assert incoming.body == body
        assert incoming.attributes == attributes
        assert incoming.context.id == message_id
        assert incoming.context.attempt == n + 1
        assert incoming.context.first_failed_at == NOW + timedelta(seconds=1)
        assert len(incoming.context.history) == min(n, HISTORY_LIMIT)


@FAST
@given(
    st.text(max_size=200),
    attribute_maps,
    st.text(min_size=1, max_size=40),
    st.lists(
        st.tuples(
            st.integers(0, 10**6),
            st.sampled_from(["sqs-delay", "sqs-hops", "scheduler", "visibility"]),
            st.text(alphabet=st.characters(exclude_categories=()), max_size=600),  # surrogates too
            st.booleans(),
            st.integers(0, 999_999),
        ),
        min_size=1,
        max_size=14,
    ),
)
def test_the_written_envelope_is_the_encoded_one(
    body: str,
    attributes: dict[str, MessageAttribute],
    message_id: str,
    steps: list[tuple[int, str, str, bool, int]],
) -> None:
    """encode_next_envelope writes the text directly: byte for byte what encode(next_envelope(...))
    gives, for any body, attributes, error text and history length (a redelivered record must make
    the same copy either way)."""
    incoming = _original(body, attributes, message_id)
    for n, (delay, transport, error_text, due, micros) in enumerate(steps, start=1):
        now = NOW + timedelta(seconds=n * 7, microseconds=micros)
        decision = Decision("retry", delay, transport, n, None, "p", "KeyError")  # type: ignore[arg-type]
        error = KeyError(error_text) if n % 2 else RuntimeError(error_text)
        due_at = now + timedelta(seconds=delay) if due else None
        written = encode_next_envelope(incoming, decision, error, now=now, due_at=due_at)
        assert written == encode(next_envelope(incoming, decision, error, now=now, due_at=due_at))
        # carried on as the next attempt's incoming copy (built directly: the text may hold characters
        # SQS would refuse, which unwrap rejects; equality must hold for them too)
        meta = json.loads(written)[ENVELOPE_KEY]
        context = RetryContext(
            message_id, meta["attempt"], NOW, tuple(meta["history"]), "arn:aws:sqs:us-east-1:1:q"
        )
        incoming = Incoming("envelope", body, attributes, context, meta, None)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=10),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=10), children, max_size=4)
    ),
    max_leaves=15,
)


def _valid_document() -> dict[str, Any]:
    return {
        ENVELOPE_KEY: {
            "v": 1,
            "id": "m",
            "attempt": 2,
            "first_failed_at": "2026-11-30T10:00:00Z",
            "source": "s",
            "history": [
                {
                    "at": "2026-11-30T10:00:00Z",
                    "error_type": "E",
                    "error": "",
                    "delay_seconds": 1,
                    "transport": "t",
                }
            ],
        },
        "body": "b",
        "attributes": {"a": {"DataType": "String", "StringValue": "v"}},
    }


@st.composite
def envelope_like(draw: st.DrawFn) -> str:
    """A valid envelope with one value somewhere replaced by arbitrary JSON."""
    document = _valid_document()
    target = draw(
        st.sampled_from(
            [
                (document, "body"),
                (document, "attributes"),
                (document["attributes"], "a"),
                (document["attributes"]["a"], "DataType"),
                *[(document[ENVELOPE_KEY], key) for key in document[ENVELOPE_KEY]],
                *[
                    (document[ENVELOPE_KEY]["history"][0], key)
                    for key in document[ENVELOPE_KEY]["history"][0]
                ],
            ]
        )
    )
    container, key = target
    container[key] = draw(json_values)
    return json.dumps(document)


@FAST
@given(
    st.one_of(
        any_text,
        json_values.map(json.dumps),
        json_values.map(lambda v: json.dumps({ENVELOPE_KEY: v})),
        envelope_like(),
    ),
    st.integers(-5, 10**6),
)
def test_unwrap_never_raises_and_always_classifies(body: str, receive_count: int) -> None:
    incoming = unwrap(body, {}, message_id="m-1", source="src", receive_count=receive_count)
    assert incoming.kind in ("original", "envelope", "invalid")
    assert incoming.context.attempt >= 1
    if incoming.kind == "invalid":
        assert incoming.problem
        assert incoming.body == body  # the raw body, verbatim
    elif incoming.kind == "original":
        assert incoming.body == body
    else:
        assert incoming.meta is not None
        assert 1 <= incoming.context.attempt <= 10_000
