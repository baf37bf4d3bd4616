"""The stream demo's accounting (pure): each record in exactly one place, from the exhausted queue,
the on-failure records (whose ranges span other lanes' records) and the shard's checkpoints."""

from __future__ import annotations

import json

from serverless_retry_tools.local.demos.stream_demo_accounting import (
    PutRecord,
    WorkRecord,
    account_mode,
    build_records,
    percentile,
)

ARN = "arn:aws:kinesis:us-east-1:123456789012:stream/orders"
SHARD = "shardId-000000000000"


def _puts(kinds: list[str]) -> list[PutRecord]:
    return [
        PutRecord(WorkRecord(i, k, f"o-{i:04d}"), SHARD, str(100 + i), 0.0, ARN) for i, k in enumerate(kinds)
    ]


def _exhausted(put: PutRecord) -> dict[str, object]:
    body = {
        "eventID": f"{put.shard_id}:{put.sequence_number}",
        "kinesis": {"sequenceNumber": put.sequence_number},
    }
    return {"Body": json.dumps(body), "MessageId": f"m-{put.sequence_number}"}


def _failure(first: int, last: int, size: int) -> str:
    return json.dumps(
        {
            "requestContext": {"condition": "RetryAttemptsExhausted", "approximateInvokeCount": 3},
            "KinesisBatchInfo": {
                "shardId": SHARD,
                "startSequenceNumber": str(first),
                "endSequenceNumber": str(last),
                "batchSize": size,
            },
        }
    )


def test_the_workload_has_one_poison_record_early_and_one_invalid_record() -> None:
    records = build_records(40)
    assert [r.kind for r in records].count("poison") == 1
    assert [r.kind for r in records].count("invalid") == 1
    assert next(r.index for r in records if r.kind == "poison") == 3
    assert len(records) == 42
    assert len({r.partition_key for r in records}) == 42


def test_unordered_processed_and_exhausted_records_balance() -> None:
    puts = _puts(["ok"] * 6)
    waited = {SHARD: {p.sequence_number: 1.0 for p in puts}}
    result = account_mode(
        "unordered",
        puts,
        waited=waited,
        exhausted=[_exhausted(puts[2])],
        failures=[],
        handed_off={puts[2].chain},
    )
    assert [f.outcome for f in result.fates] == ["processed"] * 2 + ["exhausted"] + ["processed"] * 3
    assert result.totals["processed"] == 5


def test_a_handed_off_record_with_no_final_place_is_unaccounted() -> None:
    puts = _puts(["ok"] * 3)
    waited = {SHARD: {p.sequence_number: 1.0 for p in puts}}
    result = account_mode(
        "unordered", puts, waited=waited, exhausted=[], failures=[], handed_off={puts[1].chain}
    )
    assert [f.outcome for f in result.fates] == ["processed", "unaccounted", "processed"]
    assert not result.balanced


def test_a_failure_range_spanning_another_lanes_processed_records_counts_only_the_discarded_ones() -> None:
    puts = _puts(["ok"] * 5)
    # Records 101 and 103 were discarded by one lane's batch (101-103, size 2); 102 is the other lane's.
    waited = {SHARD: {p.sequence_number: 1.0 for p in puts if p.sequence_number not in ("101", "103")}}
    result = account_mode(
        "blocking", puts, waited=waited, exhausted=[], failures=[_failure(101, 103, 2)], handed_off=set()
    )
    assert [f.outcome for f in result.fates] == [
        "processed",
        "on-failure",
        "processed",
        "on-failure",
        "processed",
    ]
    assert result.balanced
    assert not result.unknown


def test_a_failure_record_naming_more_records_than_its_range_holds_is_reported() -> None:
    puts = _puts(["ok"] * 3)
    waited = {SHARD: {"100": 1.0, "102": 1.0}}
    result = account_mode(
        "blocking", puts, waited=waited, exhausted=[], failures=[_failure(101, 101, 2)], handed_off=set()
    )
    assert result.unknown
    assert not result.balanced


def test_a_record_in_two_places_is_a_conflict() -> None:
    puts = _puts(["ok"] * 2)
    result = account_mode(
        "unordered",
        puts,
        waited={},
        exhausted=[_exhausted(puts[0]), _exhausted(puts[0])],
        failures=[],
        handed_off=set(),
    )
    assert [f.outcome for f in result.fates] == ["conflict", "unaccounted"]


def test_percentile_is_the_nearest_rank() -> None:
    assert percentile([], 0.99) == 0.0
    assert percentile([5.0], 0.5) == 5.0
    assert percentile([float(i) for i in range(101)], 0.99) == 99.0
