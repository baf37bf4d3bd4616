"""DynamoDB JSON to plain Python: every type of the stream images, and what is refused."""

from __future__ import annotations

from decimal import Decimal

import pytest
from serverless_retry.streams.dynamodb_json import DynamoDBJsonError, deserialise, deserialise_item


def test_every_type_becomes_plain_python() -> None:
    item = {
        "s": {"S": "café"},
        "n": {"N": "10.50"},
        "big": {"N": "123456789012345678901234567890"},
        "b": {"B": "AAE="},
        "yes": {"BOOL": True},
        "none": {"NULL": True},
        "m": {"M": {"inner": {"N": "-1e3"}}},
        "l": {"L": [{"S": "a"}, {"N": "2"}, {"L": []}]},
        "ss": {"SS": ["x", "y"]},
        "ns": {"NS": ["1", "2.5"]},
        "bs": {"BS": ["YQ==", "Yg=="]},
    }
    assert deserialise_item(item) == {
        "s": "café",
        "n": Decimal("10.50"),
        "big": Decimal("123456789012345678901234567890"),
        "b": b"\x00\x01",
        "yes": True,
        "none": None,
        "m": {"inner": Decimal("-1E+3")},
        "l": ["a", Decimal(2), []],
        "ss": {"x", "y"},
        "ns": {Decimal(1), Decimal("2.5")},
        "bs": {b"a", b"b"},
    }


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        ({"S": 1}, "S must be a string"),
        ({"N": "one"}, "not a number"),
        ({"N": 1}, "a number must be a string"),
        ({"B": "!!"}, "not valid base64"),
        ({"BOOL": "true"}, "BOOL must be"),
        ({"NULL": False}, "NULL must be true"),
        ({"L": {}}, "L must be a list"),
        ({"SS": [1]}, "SS must hold strings"),
        ({"X": "?"}, "unknown attribute type"),
        ({"S": "a", "N": "1"}, "exactly one type key"),
        ("plain", "exactly one type key"),
    ],
)
def test_what_is_not_dynamodb_json_is_refused(value: object, problem: str) -> None:
    with pytest.raises(DynamoDBJsonError, match=problem):
        deserialise(value)


def test_nesting_deeper_than_dynamodb_allows_is_refused_not_a_recursion_error() -> None:
    value: dict[str, object] = {"S": "leaf"}
    for _ in range(40):
        value = {"L": [value]}
    with pytest.raises(DynamoDBJsonError, match="nested deeper"):
        deserialise(value)
    with pytest.raises(DynamoDBJsonError, match="an item must be an object"):
        deserialise_item([1])
