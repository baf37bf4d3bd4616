"""examples/native-retry's handler (src/native_orders) on in-process moto DynamoDB: the buggy release
fails every order and books nothing; the fix books each order_id exactly once, however many copies
arrive (a producer's resend, a redelivery after the write, a fix deployed between two deliveries)."""

from __future__ import annotations

import importlib
import io
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
from aws_lambda_powertools.utilities.batch.exceptions import BatchProcessingError
from moto import mock_aws
from serverless_retry.testing import lambda_context, sqs_event, sqs_record

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics to publish:UserWarning")

SRC = Path(__file__).resolve().parents[2] / "examples" / "native-retry" / "src"
LEDGER, IDEMPOTENCY = "native-orders-ledger", "native-orders-idempotency"
Handler = Callable[[dict[str, Any], Any], dict[str, Any]]


@pytest.fixture
def dynamodb(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    monkeypatch.syspath_prepend(str(SRC))
    monkeypatch.setenv("LEDGER_TABLE", LEDGER)
    monkeypatch.setenv("IDEMPOTENCY_TABLE", IDEMPOTENCY)
    monkeypatch.setenv("IDEMPOTENCY_EXPIRES_AFTER_SECONDS", "1555200")
    monkeypatch.setenv("POWERTOOLS_SERVICE_NAME", "native-orders")
    with mock_aws():
        client = boto3.client("dynamodb", region_name="us-east-1")
        client.create_table(
            TableName=IDEMPOTENCY,
            BillingMode="PAY_PER_REQUEST",
            KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
            AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"}],
        )
        client.create_table(
            TableName=LEDGER,
            BillingMode="PAY_PER_REQUEST",
            KeySchema=[
                {"AttributeName": "order_id", "KeyType": "HASH"},
                {"AttributeName": "entry_id", "KeyType": "RANGE"},
            ],
            AttributeDefinitions=[
                {"AttributeName": "order_id", "AttributeType": "S"},
                {"AttributeName": "entry_id", "AttributeType": "S"},
            ],
        )
        importlib.import_module("native_orders.ledger")._dynamodb.cache_clear()
        # The module is imported once; its Powertools logger keeps the stream it was given.
        importlib.import_module("native_orders.app").logger.registered_handler.stream = io.StringIO()
        yield client


@pytest.fixture
def logs(dynamodb: Any) -> io.StringIO:
    """The handler's log lines (JSON, one a line), as Lambda would ship them to CloudWatch Logs."""
    stream = importlib.import_module("native_orders.app").logger.registered_handler.stream
    assert isinstance(stream, io.StringIO)
    return stream


def release(name: str) -> Handler:
    """A fresh handler of ``native_orders.<name>`` (its parser, a new idempotency store)."""
    app = importlib.import_module("native_orders.app")
    parse = {
        "fixed": importlib.import_module("native_orders.orders").parse_order,
        "buggy": importlib.import_module("native_orders.buggy").parse_order_as_integer_cents,
    }[name]
    handler: Handler = app.make_handler(parse)
    return handler


def order(order_id: str, amount: str = "12.50", **extra: str) -> dict[str, str]:
    return {"order_id": order_id, "amount": amount, "currency": "EUR", **extra}


def record(body: dict[str, str] | str, message_id: str, receive_count: int = 1) -> dict[str, Any]:
    return sqs_record(body, message_id=message_id, receive_count=receive_count)


def invoke(handler: Handler, records: list[dict[str, Any]]) -> list[str]:
    """The message ids Lambda would leave in the queue: the batch item failures, or every record
    when the invocation fails (Powertools raises when the whole batch failed, so the function's
    Errors metric shows a bug that fails everything)."""
    try:
        response = handler(sqs_event(records), lambda_context("native-orders"))
    except BatchProcessingError:
        return [r["messageId"] for r in records]
    return [f["itemIdentifier"] for f in response["batchItemFailures"]]


def ledger(client: Any) -> dict[str, list[dict[str, Any]]]:
    entries: dict[str, list[dict[str, Any]]] = {}
    for item in client.scan(TableName=LEDGER)["Items"]:
        entries.setdefault(item["order_id"]["S"], []).append(item)
    return entries


def log_records(text: str, message: str) -> list[dict[str, Any]]:
    lines = [json.loads(line) for line in text.splitlines() if line.startswith("{")]
    return [r for r in lines if str(r.get("message", "")).startswith(message)]


def test_the_buggy_release_fails_every_order_and_books_nothing(dynamodb: Any, logs: io.StringIO) -> None:
    with pytest.raises(BatchProcessingError):  # every record failed: the invocation fails
        release("buggy")(
            sqs_event([record(order("o-1"), "m-1"), record(order("o-2", "7.00"), "m-2")]),
            lambda_context("native-orders"),
        )
    assert ledger(dynamodb) == {}
    assert dynamodb.scan(TableName=IDEMPOTENCY)["Items"] == []  # failed before the idempotent call
    failed = log_records(logs.getvalue(), "processing failed; retry")
    assert [(r["retry_id"], r["attempt"], r["transport"], r["error_type"]) for r in failed] == [
        ("m-1", 1, "visibility", "ValueError"),
        ("m-2", 1, "visibility", "ValueError"),
    ]


def test_the_fix_books_each_order_once_however_many_copies_arrive(dynamodb: Any, logs: io.StringIO) -> None:
    handler = release("fixed")
    # A producer sent o-1 twice (two SQS messages, one order_id), both in the same batch.
    first = invoke(
        handler, [record(order("o-1"), "m-1"), record(order("o-1"), "m-1b"), record(order("o-2"), "m-2")]
    )
    # ... and once more in a later batch, after the booking.
    later = invoke(handler, [record(order("o-1"), "m-1c")])
    assert first == later == []
    entries = ledger(dynamodb)
    assert {k: len(v) for k, v in entries.items()} == {"o-1": 1, "o-2": 1}
    assert entries["o-1"][0]["message_id"]["S"] == "m-1"
    accepted = log_records(logs.getvalue(), "order accepted")
    assert [(r["id"], r["replayed"]) for r in accepted] == [
        ("m-1", False),
        ("m-1b", True),
        ("m-2", False),
        ("m-1c", True),
    ]
    assert {r["entry_id"] for r in accepted if r["order_id"] == "o-1"} == {entries["o-1"][0]["entry_id"]["S"]}
    written = log_records(logs.getvalue(), "ledger entry written")
    assert sorted((r["order_id"], r["message_id"]) for r in written) == [("o-1", "m-1"), ("o-2", "m-2")]
    keys = [item["id"]["S"] for item in dynamodb.scan(TableName=IDEMPOTENCY)["Items"]]
    assert len(keys) == 2
    assert all(k.startswith("order#") for k in keys)


def test_a_redelivery_after_the_write_books_nothing_more(dynamodb: Any, logs: io.StringIO) -> None:
    handler = release("fixed")
    body = order("o-9", simulate="crash-after-write")
    # With another order in the batch, only the crashed record is handed back.
    crashed = invoke(handler, [record(body, "m-9", receive_count=3), record(order("o-10"), "m-10")])
    assert crashed == ["m-9"]  # booked, then died before the success was reported
    assert {k: len(v) for k, v in ledger(dynamodb).items()} == {"o-9": 1, "o-10": 1}
    assert invoke(handler, [record(body, "m-9", receive_count=4)]) == []
    assert {k: len(v) for k, v in ledger(dynamodb).items()} == {"o-9": 1, "o-10": 1}
    out = logs.getvalue()
    (failed,) = log_records(out, "processing failed; retry")
    assert (failed["attempt"], failed["error_type"]) == (3, "SimulatedCrash")
    accepted = log_records(out, "order accepted")
    assert [(r["id"], r["attempt"], r["replayed"]) for r in accepted] == [
        ("m-10", 1, False),
        ("m-9", 4, True),
    ]


def test_a_fix_deployed_between_deliveries_books_the_backlog(dynamodb: Any) -> None:
    assert invoke(release("buggy"), [record(order("o-1"), "m-1", receive_count=2)]) == ["m-1"]
    assert invoke(release("fixed"), [record(order("o-1"), "m-1", receive_count=3)]) == []
    assert {k: len(v) for k, v in ledger(dynamodb).items()} == {"o-1": 1}


def test_a_copy_with_another_amount_is_refused_not_booked(dynamodb: Any) -> None:
    handler = release("fixed")
    assert invoke(handler, [record(order("o-1"), "m-1")]) == []
    # Failing on every receive, it ends in the DLQ for a person: never a silent second booking.
    assert invoke(handler, [record(order("o-1", "99.99"), "m-x"), record(order("o-2"), "m-2")]) == ["m-x"]
    assert {k: len(v) for k, v in ledger(dynamodb).items()} == {"o-1": 1, "o-2": 1}


@pytest.mark.parametrize("body", ["not json", json.dumps(["o-1"]), json.dumps({"order_id": "o-1"})])
def test_a_malformed_order_fails_and_books_nothing(dynamodb: Any, body: str) -> None:
    assert invoke(release("fixed"), [record(body, "m-bad"), record(order("o-2"), "m-2")]) == ["m-bad"]
    assert list(ledger(dynamodb)) == ["o-2"]


def test_each_release_module_builds_its_handler_at_import(dynamodb: Any) -> None:
    for name in ("buggy", "fixed"):
        module = importlib.import_module(f"native_orders.{name}")
        assert callable(module.handler)
