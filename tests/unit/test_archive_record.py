"""The archive's record (serverless-retry-archive/1): every field for each terminal form, the
deterministic key, key safety, and the reader's errors.

Messages are the Lambda SQS event records the archiver receives, built from the ReceiveMessage-shaped
samples of tests/events/exhausted-messages.json (each form written so far) and the envelope samples."""

from __future__ import annotations

import base64
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from serverless_retry.archive.record import (
    ARCHIVE_FORMAT,
    DLQ_REASON,
    ArchiveFormatError,
    ArchiveRecord,
    ArchiveSource,
    archive_record,
    encode_record,
    key_safe,
    object_key,
    object_metadata,
    parse_archive_record,
    parse_object_key,
)
from serverless_retry.terminal import read_terminal

EVENTS = Path(__file__).resolve().parent.parent / "events"
PREFIX = "serverless-retry/"
ACCOUNT = "123456789012"
ORDERS = f"arn:aws:sqs:us-east-1:{ACCOUNT}:orders"
EXHAUSTED_QUEUE = f"arn:aws:sqs:us-east-1:{ACCOUNT}:orders-exhausted"
DLQ = f"arn:aws:sqs:us-east-1:{ACCOUNT}:orders-dlq"
SELFHEAL_QUEUE = f"arn:aws:sqs:us-east-1:{ACCOUNT}:orders-selfheal-exhausted"
NOW = datetime(2026, 12, 4, 5, 0, 0, tzinfo=UTC)
SENT_MS = "1764496800000"  # 2025-11-30T10:00:00Z
SENT_AT = "2025-11-30T10:00:00Z"

EXHAUSTED = ArchiveSource(place="exhausted", source_queue_arn=ORDERS, deployment="orders")
AT_DLQ = ArchiveSource(place="dlq", source_queue_arn=ORDERS, deployment="orders")
SELFHEAL = ArchiveSource(place="selfheal-exhausted", source_queue_arn=None, deployment="orders")
QUEUES = {"exhausted": EXHAUSTED_QUEUE, "dlq": DLQ, "selfheal-exhausted": SELFHEAL_QUEUE}


def event_attributes(api: dict[str, Any]) -> dict[str, Any]:
    """Message attributes of the API form as a Lambda SQS event record carries them."""
    out: dict[str, Any] = {}
    for name, value in api.items():
        attr: dict[str, Any] = {"dataType": value["DataType"], "stringListValues": [], "binaryListValues": []}
        if "BinaryValue" in value:
            raw = value["BinaryValue"]
            attr["binaryValue"] = raw if isinstance(raw, str) else base64.b64encode(raw).decode()
        else:
            attr["stringValue"] = value["StringValue"]
        out[name] = attr
    return out


def sqs_record(
    body: str,
    attributes: dict[str, Any] | None = None,
    *,
    message_id: str = "0d7c4f1e-1111-4000-8000-00000000000a",
    queue: str = EXHAUSTED_QUEUE,
    receive_count: int = 1,
) -> dict[str, Any]:
    """One record of a Lambda SQS event, as Lambda builds it."""
    return {
        "messageId": message_id,
        "receiptHandle": f"rh-{message_id}",
        "body": body,
        "attributes": {
            "ApproximateReceiveCount": str(receive_count),
            "SentTimestamp": SENT_MS,
            "SenderId": "AIDAIENQZJOLO23YVJ4VO",
            "ApproximateFirstReceiveTimestamp": SENT_MS,
        },
        "messageAttributes": event_attributes(attributes or {}),
        "md5OfBody": "ignored",
        "eventSource": "aws:sqs",
        "eventSourceARN": queue,
        "awsRegion": "us-east-1",
    }


def sample(form: str, index: int = 0) -> dict[str, Any]:
    samples = [s for s in json.loads((EVENTS / "exhausted-messages.json").read_text()) if s["form"] == form]
    return samples[index]


def from_sample(form: str, source: ArchiveSource = EXHAUSTED) -> tuple[dict[str, Any], ArchiveRecord]:
    message = sample(form)["message"]
    event = sqs_record(
        message["Body"],
        message["MessageAttributes"],
        message_id=message["MessageId"],
        queue=QUEUES[source.place],
    )
    return event, archive_record(event, source=source, now=NOW, prefix=PREFIX)


def check_common(record: ArchiveRecord, event: dict[str, Any], source: ArchiveSource) -> None:
    """The fields every form fills the same way, and the record's own consistency."""
    assert record["format"] == ARCHIVE_FORMAT
    assert record["place"] == source.place
    assert record["deployment"] == source.deployment
    assert record["archive_queue_arn"] == event["eventSourceARN"]
    assert record["source_queue_arn"] == source.source_queue_arn
    assert record["archived_at"] == "2026-12-04T05:00:00Z"
    assert record["message"] == {
        "message_id": event["messageId"],
        "body": event["body"],
        "attributes": event["messageAttributes"],
        "system_attributes": event["attributes"],
    }
    assert record["redriven"] == []
    assert record["key"] == object_key(record, PREFIX)
    assert parse_archive_record(encode_record(record)) == record


def test_exhausted_envelope_every_field() -> None:
    event, record = from_sample("envelope")
    check_common(record, event, EXHAUSTED)
    chain = "8a1f6c2e-4b1d-4f0a-9d7e-2c3b4a5d6e7f"
    assert record["outcome"] == "exhausted"
    assert record["reason"] == "attempt 5 >= max_attempts 5"
    assert record["error_type"] == "TimeoutError"
    assert record["error_message"] == "read timed out"
    assert record["retry_id"] == chain
    assert record["attempt"] == 5
    assert record["first_failed_at"] == "2026-11-30T10:00:00Z"
    assert record["terminal_at"] == "2026-11-30T10:21:20Z"  # the envelope's exhausted_at, not SentTimestamp
    assert record["history"] == [
        {"at": "2026-11-30T10:20:00Z", "delay_seconds": 80, "error": "read timed out",
         "error_type": "TimeoutError", "transport": "sqs-delay"}
    ]  # fmt: skip
    assert record["original"] == {
        "body": '{"order_id": "o-1"}',
        "attributes": {"tenant": {"DataType": "String", "StringValue": "acme"}},
    }
    assert record["key"].startswith(f"{PREFIX}dead/2026/11/30/exhausted/TimeoutError/{chain}.5.")


def test_envelope_record_matches_the_pinned_sample() -> None:
    """tests/events/archive-record-exhausted.json is the format as the CLI and the docs read it."""
    _, record = from_sample("envelope")
    assert record == json.loads((EVENTS / "archive-record-exhausted.json").read_text())


def test_framed_message_every_field() -> None:
    event, record = from_sample("framed")
    check_common(record, event, EXHAUSTED)
    assert record["outcome"] == "too-large-to-retry"
    assert (
        record["reason"] == "the retry envelope does not fit the queue's maximum message size of 262144 bytes"
    )
    assert (record["error_type"], record["error_message"]) == ("TimeoutError", "read timed out")
    assert (record["retry_id"], record["attempt"]) == ("8a1f6c2e-4b1d-4f0a-9d7e-2c3b4a5d6e7f", 5)
    assert record["first_failed_at"] == ""
    assert record["terminal_at"] == "2026-11-30T10:21:20Z"  # the header's "at"
    assert record["history"] == []
    # The original body after the header line, verbatim; the attributes verbatim (API form).
    assert record["original"]["body"] == event["body"].split("\n", 1)[1]
    assert record["original"]["attributes"] == sample("framed")["message"]["MessageAttributes"]
    assert "/too-large-to-retry/TimeoutError/" in record["key"]


def test_original_meta_message() -> None:
    event, record = from_sample("original+meta")
    check_common(record, event, EXHAUSTED)
    assert (record["outcome"], record["error_type"], record["attempt"]) == (
        "too-large-to-retry",
        "RetryableError",
        3,
    )
    assert record["terminal_at"] == "2026-11-30T10:05:00Z"
    assert record["original"]["body"] == event["body"]
    assert list(record["original"]["attributes"]) == ["tenant"]  # the summary attribute is not re-sent


def test_bare_message_every_field() -> None:
    event, record = from_sample("bare")
    check_common(record, event, EXHAUSTED)
    assert record["outcome"] == "unknown"
    assert record["reason"] == ""
    assert (record["error_type"], record["error_message"]) == ("", "")
    assert record["retry_id"] == event["messageId"]  # no chain id of its own
    assert record["attempt"] == 1  # not the receive count: that is not deterministic
    assert record["first_failed_at"] == ""
    assert record["terminal_at"] == SENT_AT
    assert record["history"] == []
    assert record["original"] == {
        "body": event["body"],
        "attributes": sample("bare")["message"]["MessageAttributes"],
    }
    assert record["key"] == (
        f"{PREFIX}dead/2025/11/30/unknown/none/{event['messageId']}.1.{record['key'].split('.')[-2]}.json"
    )


def test_plain_dlq_message_every_field() -> None:
    event = sqs_record('{"order_id": "o-9"}', {"tenant": {"DataType": "String", "StringValue": "acme"}},
                       queue=DLQ, receive_count=7)  # fmt: skip
    record = archive_record(event, source=AT_DLQ, now=NOW, prefix=PREFIX)
    check_common(record, event, AT_DLQ)
    assert record["outcome"] == "dlq"
    assert record["reason"] == DLQ_REASON
    assert (record["error_type"], record["error_message"]) == ("", "")
    assert (record["retry_id"], record["attempt"]) == (event["messageId"], 1)
    assert record["first_failed_at"] == ""
    assert record["terminal_at"] == SENT_AT  # SentTimestamp, which a DLQ move keeps
    assert record["history"] == []
    assert record["original"] == {
        "body": '{"order_id": "o-9"}',
        "attributes": {"tenant": {"DataType": "String", "StringValue": "acme"}},
    }
    assert record["key"].startswith(f"{PREFIX}dead/2025/11/30/dlq/none/{event['messageId']}.1.")
    # The receive count is in the system attributes, never in the key.
    again = archive_record({**event, "attributes": {**event["attributes"], "ApproximateReceiveCount": "9"}},
                           source=AT_DLQ, now=NOW, prefix=PREFIX)  # fmt: skip
    assert again["key"] == record["key"]


def test_retry_envelope_moved_to_a_dlq() -> None:
    envelope = (EVENTS / "envelope-v1.json").read_text()
    event = sqs_record(envelope, queue=DLQ, message_id="5b0e-copy", receive_count=4)
    record = archive_record(event, source=AT_DLQ, now=NOW, prefix=PREFIX)
    check_common(record, event, AT_DLQ)
    meta = json.loads(envelope)
    assert record["outcome"] == "dlq"
    assert record["reason"] == DLQ_REASON
    # Its last error is its history's last entry; chain and attempt are the envelope's.
    assert (record["error_type"], record["error_message"]) == ("TimeoutError", "read timed out")
    assert (record["retry_id"], record["attempt"]) == ("8a1f6c2e-4b1d-4f0a-9d7e-2c3b4a5d6e7f", 3)
    assert record["first_failed_at"] == "2026-11-30T10:00:00Z"
    assert record["terminal_at"] == SENT_AT
    assert record["history"] == meta["serverless_retry"]["history"]
    assert record["original"] == {"body": meta["body"], "attributes": meta["attributes"]}
    assert "/dlq/TimeoutError/8a1f6c2e-4b1d-4f0a-9d7e-2c3b4a5d6e7f.3." in record["key"]


def test_self_healing_exhausted_record_every_field() -> None:
    event, record = from_sample("self-healing", SELFHEAL)
    check_common(record, event, SELFHEAL)
    view = read_terminal(event["body"], event["messageAttributes"], message_id=event["messageId"])
    assert record["outcome"] == "exhausted"
    assert record["reason"] == "retry budget of orders-fn (3 retries) spent"
    assert (record["error_type"], record["error_message"]) == ("HTTPError", "HTTP 429 Too Many Requests")
    assert (record["retry_id"], record["attempt"]) == ("95df01b4-ee98-5cb9-9903-4c221d41eb5e", 3)
    assert record["first_failed_at"] == "2026-11-30T10:00:04Z"
    assert record["terminal_at"] == "2026-11-30T10:01:30Z"
    assert record["history"] == []
    assert record["source_queue_arn"] is None
    assert record["original"]["body"] == view.body
    assert json.loads(record["original"]["body"]) == json.loads(event["body"])["detail"]["payload"]


def test_a_message_that_cannot_be_read_is_archived_as_unknown() -> None:
    event = sqs_record("x")
    for broken in (
        {**event, "body": None},
        {**event, "body": {"not": "text"}},
        {"eventSourceARN": EXHAUSTED_QUEUE},
        {**event, "messageAttributes": "garbage", "attributes": ["garbage"]},
    ):
        record = archive_record(broken, source=EXHAUSTED, now=NOW, prefix=PREFIX)
        assert record["outcome"] == "unknown"
        assert record["key"] == object_key(record, PREFIX)
        assert parse_archive_record(encode_record(record)) == record
    kept = archive_record({**event, "body": {"not": "text"}}, source=AT_DLQ, now=NOW, prefix=PREFIX)
    assert kept["message"]["body"] == '{"not": "text"}'
    assert kept["outcome"] == "unknown"
    assert (
        archive_record({"eventSourceARN": DLQ}, source=AT_DLQ, now=NOW)["terminal_at"]
        == "2026-12-04T05:00:00Z"
    )


# --- keys -------------------------------------------------------------------------------------------


def test_same_message_twice_same_key() -> None:
    event, first = from_sample("envelope")
    later = archive_record(
        {**event, "attributes": {**event["attributes"], "ApproximateReceiveCount": "3"}},
        source=EXHAUSTED,
        now=datetime(2027, 1, 1, tzinfo=UTC),
        prefix=PREFIX,
    )
    assert later["key"] == first["key"]
    assert later["archived_at"] != first["archived_at"]


def test_different_bodies_same_chain_and_attempt_never_collide() -> None:
    one = archive_record(sqs_record("a", queue=DLQ, message_id="m-1"), source=AT_DLQ, now=NOW, prefix=PREFIX)
    two = archive_record(sqs_record("b", queue=DLQ, message_id="m-1"), source=AT_DLQ, now=NOW, prefix=PREFIX)
    assert one["retry_id"] == two["retry_id"]
    assert one["attempt"] == two["attempt"]
    assert one["key"] != two["key"]
    assert one["key"].rsplit("/", 1)[0] == two["key"].rsplit("/", 1)[0]


def test_key_safety() -> None:
    assert key_safe("TimeoutError") == "TimeoutError"
    assert key_safe("my.mod/Err or*ü") == "my.mod-Err-or--"
    assert key_safe("x" * 300) == "x" * 100
    event = sqs_record(
        json.dumps({"serverless_retry": {"outcome": "weird/out come", "reason": "r", "id": "a/b c",
                                         "attempt": 10**30, "error_type": "../" * 50, "v": 1}})
        + "\nbody"
    )  # fmt: skip
    record = archive_record(event, source=EXHAUSTED, now=NOW, prefix="")
    parts = parse_object_key(record["key"], "")
    assert parts is not None
    assert (parts.outcome, parts.chain_id, parts.attempt) == ("weird-out-come", "a-b-c", 10**18)
    assert parts.error_type == key_safe("../" * 50)
    assert len(parts.error_type) == 100
    assert len(record["key"].encode()) <= 1024
    assert all(v.isascii() for v in object_metadata(record).values())
    assert object_metadata(record)["attempt"] == str(10**18)


def test_object_metadata() -> None:
    _, record = from_sample("envelope")
    assert object_metadata(record) == {
        "outcome": "exhausted",
        "error-type": "TimeoutError",
        "retry-id": "8a1f6c2e-4b1d-4f0a-9d7e-2c3b4a5d6e7f",
        "attempt": "5",
    }
    _, bare = from_sample("bare")
    assert object_metadata(bare)["error-type"] == "none"


def test_parse_object_key() -> None:
    _, record = from_sample("envelope")
    parts = parse_object_key(record["key"], PREFIX)
    assert parts is not None
    assert (parts.day.isoformat(), parts.outcome, parts.error_type, parts.attempt) == (
        "2026-11-30", "exhausted", "TimeoutError", 5,
    )  # fmt: skip
    for other in ("serverless-retry/dead/readme.txt", "other/dead/2026/11/30/a/b/c.1.d.json",
                  "serverless-retry/dead/2026/13/30/a/b/c.1.d.json", "serverless-retry/dead/2026/11/30/a/b/c.x.d.json"):  # fmt: skip
        assert parse_object_key(other, PREFIX) is None


# --- reading ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("change", "says"),
    [
        (lambda d: "not json", "not JSON"),
        (lambda d: "[1]", "not a JSON object"),
        (lambda d: {**d, "format": "serverless-retry-archive/2"}, "format 'serverless-retry-archive/2'"),
        (lambda d: {k: v for k, v in d.items() if k != "format"}, "format None"),
        (lambda d: {k: v for k, v in d.items() if k != "outcome"}, "outcome: missing"),
        (lambda d: {**d, "attempt": "5"}, "attempt: expected an integer, got str"),
        (lambda d: {**d, "attempt": True}, "attempt: expected an integer"),
        (lambda d: {**d, "attempt": 0}, "attempt: expected at least 1"),
        (lambda d: {**d, "place": "attic"}, "place: expected one of"),
        (lambda d: {**d, "source_queue_arn": 3}, "source_queue_arn: expected a string or null"),
        (lambda d: {**d, "terminal_at": "yesterday"}, "terminal_at: not an ISO-8601"),
        (lambda d: {**d, "message": {**d["message"], "body": None}}, "message.body: expected a string"),
        (
            lambda d: {**d, "message": {**d["message"], "attributes": []}},
            "message.attributes: expected an object",
        ),
        (lambda d: {**d, "original": {"attributes": {}}}, "original.body: missing"),
        (lambda d: {**d, "history": [1]}, "history: expected a list of objects"),
        (lambda d: {**d, "redriven": {}}, "redriven: expected a list"),
        (lambda d: {**d, "redriven": [{"at": "x", "to": "q"}]}, "redriven[0].message_id: missing"),
    ],
)
def test_parse_refuses_a_corrupt_or_foreign_object(change: Any, says: str) -> None:
    _, record = from_sample("envelope")
    changed = change(json.loads(encode_record(record)))
    text = changed if isinstance(changed, str) else json.dumps(changed)
    with pytest.raises(ArchiveFormatError, match=None) as raised:
        parse_archive_record(text)
    assert says in str(raised.value)


def test_parse_refuses_bytes_that_are_not_utf8() -> None:
    with pytest.raises(ArchiveFormatError, match="not UTF-8"):
        parse_archive_record(b"\xff\xfe")


def test_parse_keeps_a_redrive_mark_with_its_run() -> None:
    _, record = from_sample("envelope")
    marked = {
        **record,
        "redriven": [{"at": "2026-12-04T06:00:00Z", "to": "q", "message_id": "m", "run": "r1"}],
    }
    assert parse_archive_record(json.dumps(marked))["redriven"][0]["run"] == "r1"


# --- property: anything the queue can hold survives the trip ------------------------------------------

_TEXT = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=200)
_ATTRIBUTE = st.one_of(
    st.fixed_dictionaries(
        {"DataType": st.sampled_from(["String", "Number", "String.x"]), "StringValue": _TEXT}
    ),
    st.fixed_dictionaries(
        {
            "DataType": st.just("Binary"),
            "BinaryValue": st.binary(max_size=50).map(lambda b: base64.b64encode(b).decode()),
        }
    ),
)
_NAMES = st.from_regex(r"[A-Za-z0-9_-]{1,20}", fullmatch=True)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    body=st.one_of(_TEXT, st.text(max_size=200)),  # the second: lone surrogates too (SQS holds none)
    attributes=st.dictionaries(_NAMES, _ATTRIBUTE, max_size=10),
    place=st.sampled_from(["exhausted", "dlq", "selfheal-exhausted"]),
    prefix=st.sampled_from(["", "serverless-retry/", "a/b/"]),
)
def test_any_message_round_trips(body: str, attributes: dict[str, Any], place: str, prefix: str) -> None:
    source = {"exhausted": EXHAUSTED, "dlq": AT_DLQ, "selfheal-exhausted": SELFHEAL}[place]
    event = sqs_record(body, attributes, queue=QUEUES[place])
    record = archive_record(event, source=source, now=NOW, prefix=prefix)
    encoded = encode_record(record)
    encoded.decode("utf-8")  # always valid UTF-8, as S3 readers (and the CLI) expect
    back = parse_archive_record(encoded)
    assert back == record
    assert back["message"]["body"] == body
    assert back["message"]["attributes"] == event["messageAttributes"]
    assert back["key"] == object_key(back, prefix)
    assert parse_object_key(back["key"], prefix) is not None


def test_a_pointer_is_resolved_by_the_resolver_given() -> None:
    pointer = json.dumps({"serverless_retry": {"v": 1, "outcome": "exhausted", "reason": "r", "id": "c-1",
                          "attempt": 4, "at": "2026-11-30T10:00:00Z",
                          "payload": {"bucket": "bkt", "key": "serverless-retry/payloads/x.json", "bytes": 10,
                                      "sha256": "0" * 64}}})  # fmt: skip
    event = sqs_record(pointer)
    assert read_terminal(pointer).form == "pointer"
    unresolved = archive_record(event, source=EXHAUSTED, now=NOW, prefix=PREFIX)
    assert unresolved["original"] == {"body": "", "attributes": {}}
    seen: list[str] = []

    def resolve(view: Any) -> Any:
        seen.append(view.form)
        return view._replace(
            body="the original", attributes={"a": {"DataType": "String", "StringValue": "1"}}
        )

    resolved = archive_record(event, source=EXHAUSTED, now=NOW, prefix=PREFIX, resolve=resolve)
    assert seen == ["pointer"]
    assert resolved["original"]["body"] == "the original"
    assert resolved["key"] == unresolved["key"]  # a function of the message (the pointer) alone
    assert resolved["message"]["body"] == pointer
    # None from the resolver: not a pointer of this archive's; archived as the plain message it is.
    kept = archive_record(event, source=AT_DLQ, now=NOW, prefix=PREFIX, resolve=lambda view: None)
    assert kept["original"] == {"body": pointer, "attributes": {}}
    assert (kept["outcome"], kept["attempt"], kept["retry_id"]) == ("dlq", 1, event["messageId"])
    # Any other form never reaches the resolver.
    archive_record(sqs_record("plain"), source=EXHAUSTED, now=NOW, prefix=PREFIX, resolve=resolve)
    assert seen == ["pointer"]
