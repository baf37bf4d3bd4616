"""The emulator's EventBridge pattern matcher against AWS's documented semantics, one row per rule.

Rows cite the behaviour they pin (EventBridge user guide "Event patterns" / "Content filtering", and
Event Ruler's README, the library EventBridge matches with). The same matcher answers
TestEventPattern and routes PutEvents in the emulator (tests/integration/test_selfheal_emulator.py).
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from serverless_retry_tools.local.aws_rules.event_pattern import (
    MAX_PATTERN_CHARS,
    InvalidEventPattern,
    matches,
    parse_pattern,
)

EVENT: dict[str, Any] = {
    "version": "0",
    "id": "ddddd4-aaaa-7777-4444-345dd43cc333",
    "detail-type": "EC2 Instance State-change Notification",
    "source": "aws.ec2",
    "account": "012345679012",
    "time": "2017-10-02T16:24:49Z",
    "region": "us-east-1",
    "resources": ["arn:aws:ec2:us-east-1:123456789012:instance/i-000000aaaaaa00000"],
    "detail": {
        "c-count": 5,
        "d-count": 3,
        "x-limit": 301.8,
        "source-ip": "10.0.0.33",
        "instance-id": "i-000000aaaaaa00000",
        "state": "running",
        "flag": True,
        "nothing": None,
        "tags": ["blue", "green"],
        "nested": {"deep": "value"},
        "empty": [],
        "employees": [
            {"firstName": "John", "lastName": "Doe"},
            {"firstName": "Anna", "lastName": "Smith"},
        ],
        "text": "5",
        "mixed": "Hello World",
    },
}


def d(**fields: Any) -> dict[str, Any]:
    return {"detail": fields}


# (name, pattern, expected match against EVENT)
CASES: list[tuple[str, dict[str, Any], bool]] = [
    # exact values
    ("exact string", d(state=["running"]), True),
    ("exact string, one of several", d(state=["initializing", "running"]), True),
    ("exact string, other value", d(state=["stopped"]), False),
    (
        "top-level fields",
        {"source": ["aws.ec2"], "detail-type": ["EC2 Instance State-change Notification"]},
        True,
    ),
    ("string never matches a number", d(**{"c-count": ["5"]}), False),
    ("number never matches a string", d(text=[5]), False),
    ("number equals whatever its notation", d(**{"x-limit": [3.018e2]}), True),
    ("integer equals float", d(**{"c-count": [5.0]}), True),
    ("boolean literal", d(flag=[True]), True),
    ("boolean is not 1", d(flag=[1]), False),
    ("null literal", d(nothing=[None]), True),
    ("null does not match a missing field", d(absent=[None]), False),
    ("case-sensitive by default", d(state=["RUNNING"]), False),
    # arrays in events
    ("array value: any element", d(tags=["green"]), True),
    ("array value: none", d(tags=["red"]), False),
    (
        "resources array",
        {"resources": ["arn:aws:ec2:us-east-1:123456789012:instance/i-000000aaaaaa00000"]},
        True,
    ),
    ("array of objects: field of one element", d(employees={"firstName": ["Anna"]}), True),
    (
        "array-consistent: both fields from one element",
        d(employees={"firstName": ["Anna"], "lastName": ["Smith"]}),
        True,
    ),
    (
        "array-consistent: fields from different elements",
        d(employees={"firstName": ["Anna"], "lastName": ["Doe"]}),
        False,
    ),
    # missing fields
    ("missing field", d(absent=["x"]), False),
    ("missing parent object", {"detail": {"nope": {"deeper": ["x"]}}}, False),
    ("all fields must match", d(state=["running"], absent=["x"]), False),
    # prefix / suffix / equals-ignore-case / wildcard
    ("prefix", {"time": [{"prefix": "2017-10-02"}]}, True),
    ("prefix, no", {"time": [{"prefix": "2018"}]}, False),
    ("prefix on a number never matches", d(**{"c-count": [{"prefix": "5"}]}), False),
    ("prefix ignoring case", d(mixed=[{"prefix": {"equals-ignore-case": "hello"}}]), True),
    ("suffix", {"source": [{"suffix": "ec2"}]}, True),
    ("suffix, no", {"source": [{"suffix": "ec3"}]}, False),
    ("suffix ignoring case", d(mixed=[{"suffix": {"equals-ignore-case": "WORLD"}}]), True),
    ("equals-ignore-case", {"source": [{"equals-ignore-case": "AWS.EC2"}]}, True),
    ("equals-ignore-case, no", {"source": [{"equals-ignore-case": "aws.ec"}]}, False),
    ("wildcard", {"source": [{"wildcard": "aws.*"}]}, True),
    ("wildcard must cover the whole value", {"source": [{"wildcard": "aws"}]}, False),
    ("wildcard in the middle", d(**{"instance-id": [{"wildcard": "i-*00000"}]}), True),
    # numeric
    ("numeric range", d(**{"c-count": [{"numeric": [">", 0, "<=", 5]}]}), True),
    ("numeric upper bound exclusive", d(**{"c-count": [{"numeric": ["<", 5]}]}), False),
    ("numeric upper bound inclusive", d(**{"c-count": [{"numeric": ["<=", 5]}]}), True),
    ("numeric lower bound", d(**{"d-count": [{"numeric": [">=", 3]}]}), True),
    ("numeric equals", d(**{"x-limit": [{"numeric": ["=", 301.8]}]}), True),
    ("numeric never matches a numeric string", d(text=[{"numeric": ["=", 5]}]), False),
    ("numeric on a missing field", d(absent=[{"numeric": [">", 0]}]), False),
    # anything-but
    ("anything-but string", d(state=[{"anything-but": "initializing"}]), True),
    ("anything-but string, excluded", d(state=[{"anything-but": "running"}]), False),
    ("anything-but list", d(state=[{"anything-but": ["stopped", "overloaded"]}]), True),
    ("anything-but list, excluded", d(state=[{"anything-but": ["stopped", "running"]}]), False),
    ("anything-but numbers", d(**{"x-limit": [{"anything-but": [100, 200, 300]}]}), True),
    ("anything-but numbers, excluded", d(**{"x-limit": [{"anything-but": [301.8]}]}), False),
    ("anything-but prefix", d(state=[{"anything-but": {"prefix": "init"}}]), True),
    ("anything-but prefix, excluded", d(state=[{"anything-but": {"prefix": "run"}}]), False),
    ("anything-but suffix, excluded", d(state=[{"anything-but": {"suffix": "ning"}}]), False),
    (
        "anything-but equals-ignore-case, excluded",
        d(state=[{"anything-but": {"equals-ignore-case": "RUNNING"}}]),
        False,
    ),
    ("anything-but matches a value of another type", d(**{"c-count": [{"anything-but": "5"}]}), True),
    ("anything-but never matches a missing field", d(absent=[{"anything-but": "x"}]), False),
    ("anything-but never matches an object", d(nested=[{"anything-but": "x"}]), False),
    ("anything-but on an array: some element not excluded", d(tags=[{"anything-but": ["blue"]}]), True),
    (
        "anything-but on an array: every element excluded",
        d(tags=[{"anything-but": ["blue", "green"]}]),
        False,
    ),
    # exists
    ("exists true", d(**{"c-count": [{"exists": True}]}), True),
    ("exists true on null", d(nothing=[{"exists": True}]), True),
    ("exists false on a present field", d(**{"c-count": [{"exists": False}]}), False),
    ("exists false on a missing field", d(absent=[{"exists": False}]), True),
    ("exists false under a missing parent", {"detail": {"nope": {"deeper": [{"exists": False}]}}}, True),
    ("exists only sees leaves: object field absent", d(nested=[{"exists": False}]), True),
    ("exists only sees leaves: object field not present", d(nested=[{"exists": True}]), False),
    ("exists false on an empty array", d(empty=[{"exists": False}]), True),
    ("exists true on an empty array", d(empty=[{"exists": True}]), False),
    ("exists or a value", d(absent=[{"exists": False}, "x"]), True),
    # cidr
    ("cidr", d(**{"source-ip": [{"cidr": "10.0.0.0/24"}]}), True),
    ("cidr, other network", d(**{"source-ip": [{"cidr": "10.0.1.0/24"}]}), False),
    # $or
    (
        "$or: one alternative",
        {"source": ["aws.ec2"], "$or": [d(state=["stopped"]), d(**{"c-count": [5]})]},
        True,
    ),
    ("$or: none", {"$or": [d(state=["stopped"]), d(**{"c-count": [6]})]}, False),
    ("$or nested in detail", {"detail": {"$or": [{"state": ["x"]}, {"flag": [True]}]}}, True),
    ("$or with exists false", {"$or": [d(absent=[{"exists": False}]), d(state=["x"])]}, True),
]


@pytest.mark.parametrize(("name", "pattern", "expected"), CASES, ids=[c[0] for c in CASES])
def test_semantics(name: str, pattern: dict[str, Any], expected: bool) -> None:
    parsed = parse_pattern(json.dumps(pattern))
    assert matches(parsed, EVENT) is expected


INVALID: list[tuple[str, str, str]] = [
    ("not JSON", "{", "not valid JSON"),
    ("not an object", "[]", "must be an object"),
    ("a scalar leaf", json.dumps({"source": "aws.ec2"}), "must be an object or an array"),
    ("an empty array", json.dumps({"source": []}), "Empty arrays"),
    ("an unknown operator", json.dumps({"source": [{"regex": "a"}]}), "Unrecognized match type"),
    ("two keys in a match object", json.dumps({"a": [{"prefix": "a", "suffix": "b"}]}), "exactly one key"),
    ("numeric without a list", json.dumps({"a": [{"numeric": 5}]}), "must be a list"),
    ("numeric unknown operator", json.dumps({"a": [{"numeric": ["!=", 5]}]}), "operator"),
    ("numeric bottom above top", json.dumps({"a": [{"numeric": [">", 5, "<", 1]}]}), "bottom must be less"),
    ("numeric out of range", json.dumps({"a": [{"numeric": [">", 1e10]}]}), "-5.0e9"),
    ("numeric string value", json.dumps({"a": [{"numeric": [">", "5"]}]}), "is not a number"),
    ("exists not boolean", json.dumps({"a": [{"exists": "yes"}]}), "true or false"),
    ("prefix not a string", json.dumps({"a": [{"prefix": 5}]}), "string literal"),
    ("anything-but mixed list", json.dumps({"a": [{"anything-but": ["a", 1]}]}), "mixed types"),
    ("anything-but empty list", json.dumps({"a": [{"anything-but": []}]}), "Empty arrays"),
    (
        "anything-but of an object",
        json.dumps({"a": [{"anything-but": {"numeric": [">", 1]}}]}),
        "takes a string",
    ),
    ("wildcard with consecutive stars", json.dumps({"a": [{"wildcard": "a**b"}]}), "consecutive"),
    ("cidr not a network", json.dumps({"a": [{"cidr": "not-an-ip"}]}), "IP address"),
    ("too long", json.dumps({"a": ["x" * MAX_PATTERN_CHARS]}), "at most 2048"),
]


@pytest.mark.parametrize(("name", "text", "reason"), INVALID, ids=[c[0] for c in INVALID])
def test_invalid_patterns_are_refused_with_a_reason(name: str, text: str, reason: str) -> None:
    with pytest.raises(InvalidEventPattern) as caught:
        parse_pattern(text)
    assert reason in str(caught.value)
    assert str(caught.value).startswith("Event pattern is not valid. Reason: ")


def test_a_pattern_at_the_limit_is_accepted() -> None:
    text = json.dumps({"a": ["x"]})
    text = text.replace('"x"', '"' + "x" * (MAX_PATTERN_CHARS - len(text) + 1) + '"')
    assert len(text) == MAX_PATTERN_CHARS
    assert parse_pattern(text) == json.loads(text)


def test_dollar_or_with_one_object_is_a_field_name() -> None:
    # Event Ruler: "$or" is Or only for an array of two or more objects; otherwise a plain field name.
    pattern = parse_pattern(json.dumps({"$or": {"x": ["1"]}}))
    assert matches(pattern, {"$or": {"x": "1"}})
    assert not matches(pattern, {"x": "1"})
