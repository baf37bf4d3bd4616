"""Lambda's recursive loop detection as the local runtime models it (local/aws_rules/recursion.py)."""

from __future__ import annotations

from typing import Any

from serverless_retry_tools.local.aws_rules.recursion import (
    MAX_CHAIN_INVOCATIONS,
    Chain,
    function_key,
    invocation_chain,
    split_stopped,
)

ARN = "arn:aws:lambda:us-east-1:123456789012:function:orders"
OTHER = "arn:aws:lambda:us-east-1:123456789012:function:payments"


def _message(message_id: str, header: str | None) -> dict[str, Any]:
    attributes = {"AWSTraceHeader": header} if header else {}
    return {"MessageId": message_id, "Attributes": attributes}


def test_a_first_invocation_starts_a_chain_counting_itself() -> None:
    chain = invocation_chain([None], ARN, now=1_800_000_000)
    assert chain.count(function_key(ARN)) == 1
    assert chain.root.startswith("1-6b49d200-")
    assert len(chain.root) == len("1-6b49d200-") + 24
    parsed = Chain.parse(chain.header())
    assert parsed == chain


def test_each_send_and_delivery_adds_one_invocation_to_the_chain() -> None:
    header: str | None = None
    for expected in range(1, 21):  # bounded: 20 hops
        chain = invocation_chain([header], ARN, now=0)
        assert chain.count(function_key(ARN)) == expected
        header = chain.header()  # what the function's SendMessage carries (AWSTraceHeader)
    assert Chain.parse(header) is not None


def test_the_root_stays_the_same_along_the_chain() -> None:
    first = invocation_chain([None], ARN, now=0)
    second = invocation_chain([first.header()], ARN, now=0)
    assert second.root == first.root


def test_other_functions_count_apart_and_merge_by_the_largest_count() -> None:
    orders_3 = Chain("1-00000000-000000000000000000000000", {function_key(ARN): 3}).header()
    payments_5 = Chain(
        "1-00000000-111111111111111111111111", {function_key(OTHER): 5, function_key(ARN): 1}
    ).header()
    chain = invocation_chain([orders_3, payments_5], ARN, now=0)
    assert chain.count(function_key(ARN)) == 4
    assert chain.count(function_key(OTHER)) == 5
    assert chain.root == "1-00000000-000000000000000000000000"  # the first record's


def test_versions_and_aliases_count_as_their_function() -> None:
    assert function_key(ARN + ":7") == function_key(ARN) == function_key(ARN + ":live")
    assert function_key(ARN) != function_key(OTHER)


def test_the_seventeenth_invocation_is_stopped_under_terminate() -> None:
    at_limit = Chain(
        "1-00000000-000000000000000000000000", {function_key(ARN): MAX_CHAIN_INVOCATIONS}
    ).header()
    below = Chain(
        "1-00000000-000000000000000000000000", {function_key(ARN): MAX_CHAIN_INVOCATIONS - 1}
    ).header()
    other = Chain("1-00000000-000000000000000000000000", {function_key(OTHER): 40}).header()
    batch = [_message("a", at_limit), _message("b", below), _message("c", None), _message("d", other)]
    run, stopped = split_stopped(batch, ARN, allowed=False)
    assert [m["MessageId"] for m in stopped] == ["a"]
    assert [m["MessageId"] for m in run] == ["b", "c", "d"]
    # The sixteenth runs: its chain then counts 16 invocations of the function.
    assert invocation_chain([below], ARN, now=0).count(function_key(ARN)) == MAX_CHAIN_INVOCATIONS


def test_allow_stops_nothing() -> None:
    far = Chain("1-00000000-000000000000000000000000", {function_key(ARN): 500}).header()
    run, stopped = split_stopped([_message("a", far)], ARN, allowed=True)
    assert (len(run), stopped) == (1, [])


def test_headers_are_read_leniently() -> None:
    assert Chain.parse(None) is None
    assert Chain.parse("") is None
    assert Chain.parse("Parent=53995c3f42cd8ad8;Sampled=1") is None  # no Root: no chain
    plain = Chain.parse("Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1")
    assert plain is not None
    assert plain.lineage == {}
    # botocore percent-encodes "|" in the header it sends; SQS may keep it either way.
    encoded = Chain.parse("Root=1-5759e988-bd862e3fe1be46a994272793;Lineage=aa:2%7Cbb:7|bb:x")
    assert encoded is not None
    assert dict(encoded.lineage) == {"aa": 2, "bb": 7}
