"""What a rule target receives: Input, InputPath, InputTransformer, per the EventBridge user guide's
"input transformation" examples (the EC2 state-change event) and the contract's exhausted-rule shape."""

from __future__ import annotations

import json
from typing import Any

import pytest
from serverless_retry_tools.local.aws_rules.input_transform import (
    MISSING,
    json_path,
    render_template,
    target_input,
)

EVENT: dict[str, Any] = {
    "version": "0",
    "id": "7bf73129-1428-4cd3-a780-95db273d1602",
    "detail-type": "EC2 Instance State-change Notification",
    "source": "aws.ec2",
    "account": "123456789012",
    "time": "2015-11-11T21:29:54Z",
    "region": "us-east-1",
    "resources": ["arn:aws:ec2:us-east-1:123456789012:instance/i-abcd1111"],
    "detail": {
        "instance-id": "i-0123456789",
        "state": "RUNNING",
        "count": 3,
        "items": [{"sku": "a"}, {"sku": "b"}],
    },
}
PATHS = {"instance": "$.detail.instance-id", "state": "$.detail.state"}
RULE = "arn:aws:events:us-east-1:123456789012:rule/bus/r1"


def transform(template: str, paths: dict[str, str] | None = None) -> str:
    target = {
        "InputTransformer": {"InputPathsMap": PATHS if paths is None else paths, "InputTemplate": template}
    }
    return target_input(target, EVENT, rule_arn=RULE, rule_name="r1", ingestion_time="2015-11-11T21:29:55Z")


def test_json_template_inserts_values_as_json() -> None:
    out = transform('{"instance": <instance>, "state": [9, <state>, true], "Transformed": "Yes"}')
    assert json.loads(out) == {
        "instance": "i-0123456789",
        "state": [9, "RUNNING", True],
        "Transformed": "Yes",
    }


def test_placeholders_inside_quotes_go_in_as_text() -> None:
    out = transform('{"instance": "<instance>", "text": "<instance> is in state \\"<state>\\""}')
    assert json.loads(out) == {"instance": "i-0123456789", "text": 'i-0123456789 is in state "RUNNING"'}


def test_a_quoted_string_template_stays_a_json_string() -> None:
    assert transform('"instance <instance> is in <state>"') == '"instance i-0123456789 is in RUNNING"'


def test_a_plain_text_template_gets_plain_text() -> None:
    assert transform("instance <instance> is in <state>") == "instance i-0123456789 is in RUNNING"


def test_the_contracts_exhausted_record_shape() -> None:
    template = '{"outcome": "exhausted", "reason": "retry budget of orders-fn (3 retries) spent", "detail": <detail>}'
    out = json.loads(transform(template, {"detail": "$.detail"}))
    assert out == {
        "outcome": "exhausted",
        "reason": "retry budget of orders-fn (3 retries) spent",
        "detail": EVENT["detail"],
    }


def test_numbers_and_objects_keep_their_json_type() -> None:
    out = json.loads(
        transform('{"n": <n>, "items": <items>}', {"n": "$.detail.count", "items": "$.detail.items"})
    )
    assert out == {"n": 3, "items": [{"sku": "a"}, {"sku": "b"}]}


def test_text_with_json_characters_is_escaped_inside_a_string() -> None:
    event = {**EVENT, "detail": {"msg": 'say "hi"\nnow'}}
    target = {"InputTransformer": {"InputPathsMap": {"m": "$.detail.msg"}, "InputTemplate": '{"m": "<m>"}'}}
    out = target_input(target, event, rule_arn=RULE, rule_name="r1", ingestion_time="")
    assert json.loads(out) == {"m": 'say "hi"\nnow'}


def test_predefined_variables() -> None:
    out = json.loads(
        transform(
            '{"rule": "<aws.events.rule-name>", "arn": <aws.events.rule-arn>, "event": <aws.events.event>}'
        )
    )
    assert out["rule"] == "r1"
    assert out["arn"] == RULE
    assert "detail" not in out["event"]
    assert out["event"]["id"] == EVENT["id"]
    assert json.loads(transform("<aws.events.event.json>", {})) == EVENT


def test_a_missing_path_is_null_in_json_and_empty_in_text() -> None:
    assert json.loads(transform('{"x": <x>, "y": "<x>"}', {"x": "$.detail.nope"})) == {"x": None, "y": ""}


def test_unknown_placeholders_are_left_alone() -> None:
    assert transform("<other> <instance>") == "<other> i-0123456789"


def test_input_and_input_path_and_default() -> None:
    common = {"rule_arn": RULE, "rule_name": "r1", "ingestion_time": ""}
    assert target_input({"Input": '{"fixed": 1}'}, EVENT, **common) == '{"fixed": 1}'
    assert json.loads(target_input({"InputPath": "$.detail"}, EVENT, **common)) == EVENT["detail"]
    assert json.loads(target_input({}, EVENT, **common)) == EVENT


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("$", EVENT),
        ("$.detail.state", "RUNNING"),
        ("$.resources[0]", EVENT["resources"][0]),
        ("$.detail.items[1].sku", "b"),
        ("$.detail.items[*].sku", ["a", "b"]),
        ("$.detail.nope", MISSING),
        ("$.resources[5]", MISSING),
        ("$.detail-type", "EC2 Instance State-change Notification"),
    ],
)
def test_json_path(path: str, expected: Any) -> None:
    found = json_path(EVENT, path)
    if expected is MISSING:
        assert found is MISSING
    else:
        assert found == expected


def test_render_template_keeps_escapes_inside_strings() -> None:
    assert render_template('{"a": "x\\"<v>\\""}', {"v": "1"}) == '{"a": "x\\"1\\""}'
