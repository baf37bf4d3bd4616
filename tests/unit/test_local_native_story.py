"""The native-retry story's pure parts: its workload, what it reads from the function's logs, and how it
judges the ledger and the duplicate deliveries (serverless_retry_tools.local.demos.native_workload/native_demo)."""

from __future__ import annotations

import json
from collections import Counter

import pytest
from serverless_retry_tools.local.demos.accounting import account, parse_log_lines
from serverless_retry_tools.local.demos.native_demo import (
    Booking,
    StoryResult,
    check_bookings,
    parse_bookings,
)
from serverless_retry_tools.local.demos.native_workload import (
    BACKLOG,
    CRASH_AFTER_WRITE,
    RESENT_LATER,
    SENT_TWICE,
    build_native_workload,
    expected_replays,
)
from serverless_retry_tools.local.demos.scheduled_workload import WorkItem


def test_the_workload_sends_the_backlog_during_the_bug_and_new_crashes_and_copies_after_the_fix() -> None:
    workload = build_native_workload(10, sent_twice=2, crash_after_write=2, resent_later=2, seed=3)
    during = Counter(item.label for item in workload.during_bug)
    assert during == {BACKLOG: 6, SENT_TWICE: 4}
    assert Counter(item.label for item in workload.after_fix) == {CRASH_AFTER_WRITE: 2, RESENT_LATER: 2}
    assert workload.order_ids == {f"o-{n:03d}" for n in range(1, 11)}
    bodies = [json.loads(item.body) for item in workload.items]
    # Decimal amounts with a point: the buggy release's int() fails on every one of them.
    assert all("." in body["amount"] for body in bodies)
    crashes = {b["order_id"] for b in bodies if b.get("simulate") == "crash-after-write"}
    assert crashes == {i.order_id for i in workload.after_fix if i.label == CRASH_AFTER_WRITE}
    # The copies carry the very same order (same amount) as the backlog's.
    first = {i.order_id: i.body for i in workload.during_bug}
    assert all(first[i.order_id] == i.body for i in workload.items if i.label in (SENT_TWICE, RESENT_LATER))
    assert {i.expected for i in workload.items} == {"processed"}
    assert build_native_workload(10, seed=3).items == build_native_workload(10, seed=3).items


def test_the_workload_refuses_impossible_mixes() -> None:
    with pytest.raises(ValueError, match="cannot hold"):
        build_native_workload(3, sent_twice=2, crash_after_write=2)
    with pytest.raises(ValueError, match="cannot hold"):
        build_native_workload(5, resent_later=-1)


def test_expected_replays_are_the_extra_copies_plus_one_per_crash() -> None:
    items = [
        WorkItem(BACKLOG, "o-1", "{}", "processed"),
        WorkItem(SENT_TWICE, "o-2", "{}", "processed"),
        WorkItem(SENT_TWICE, "o-2", "{}", "processed"),
        WorkItem(CRASH_AFTER_WRITE, "o-3", "{}", "processed"),
        WorkItem(RESENT_LATER, "o-1", "{}", "processed"),
    ]
    assert expected_replays(items) == 3
    workload = build_native_workload(10, sent_twice=2, crash_after_write=2, resent_later=2)
    assert expected_replays(workload.items) == 6


def _line(message: str, **fields: object) -> str:
    return json.dumps({"level": "INFO", "message": message, "service": "native-orders", **fields})


def test_parse_bookings_reads_acknowledged_deliveries_and_writes() -> None:
    lines = [
        "START RequestId: r-1 Version: $LATEST",
        _line("ledger entry written", order_id="o-1", entry_id="e-1", message_id="m-1"),
        _line("order accepted", id="m-1", attempt=2, order_id="o-1", entry_id="e-1", replayed=False),
        _line("order accepted", id="m-2", attempt=1, order_id="o-1", entry_id="e-1", replayed=True),
        _line("processing failed; retry after the visibility timeout", retry_id="m-3", attempt=1),
        "not json {",
    ]
    bookings, writes = parse_bookings(lines)
    assert bookings == [
        Booking("m-1", 2, "o-1", "e-1", replayed=False),
        Booking("m-2", 1, "o-1", "e-1", replayed=True),
    ]
    assert writes == {"o-1": 1}


def _result(
    ledger: dict[str, int], writes: dict[str, int], replayed: int, *, expected: int = 1
) -> StoryResult:
    bookings = [Booking(f"m-{n}", 2, "o-1", "e-1", replayed=True) for n in range(replayed)]
    return StoryResult(
        sent=[],
        labels={},
        accounting=account([], [], parse_log_lines([])),
        ledger=ledger,
        orders={"o-1", "o-2"},
        bookings=bookings,
        writes=Counter(writes),
        expected_replays=expected,
        visibility_timeout_seconds=180,
        max_receive_count=5,
        clock_scale=6.0,
        fix_live_logical_s=300.0,
    )


def test_one_entry_and_one_write_per_order_and_the_expected_replays_pass() -> None:
    result = _result({"o-1": 1, "o-2": 1}, {"o-1": 1, "o-2": 1}, replayed=1)
    check_bookings(result)
    assert result.problems == []
    assert result.ok
    assert result.margin_logical_s == 4 * 180 - 300


@pytest.mark.parametrize(
    ("ledger", "writes", "replayed", "problem"),
    [
        ({"o-1": 2, "o-2": 1}, {"o-1": 1, "o-2": 1}, 1, "ledger entries other than one per order"),
        ({"o-1": 1}, {"o-1": 1, "o-2": 1}, 1, "orders with no ledger entry: o-2"),
        ({"o-1": 1, "o-2": 1, "o-9": 1}, {"o-1": 1, "o-2": 1}, 1, "ledger entries other than one per order"),
        ({"o-1": 1, "o-2": 1}, {"o-1": 2, "o-2": 1}, 1, "ledger writes logged other than one per order"),
        ({"o-1": 1, "o-2": 1}, {"o-1": 1}, 1, "ledger writes logged"),
        ({"o-1": 1, "o-2": 1}, {"o-1": 1, "o-2": 1}, 0, "0 deliveries answered by idempotency, expected 1"),
    ],
)
def test_any_double_or_missing_booking_is_a_discrepancy(
    ledger: dict[str, int], writes: dict[str, int], replayed: int, problem: str
) -> None:
    result = _result(ledger, writes, replayed)
    check_bookings(result)
    assert any(problem in p for p in result.problems), result.problems
    assert not result.ok


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["demo"], ("scheduled-retry", 100, 100.0, 150.0)),
        (["demo", "native-retry"], ("native-retry", 40, 6.0, 300.0)),
        (["demo", "--clock-scale", "4", "--orders", "12", "native-retry"], ("native-retry", 12, 4.0, 300.0)),
        (["demo", "--deadline", "90"], ("scheduled-retry", 100, 100.0, 90.0)),
    ],
)
def test_each_demo_gets_its_own_defaults_unless_given(argv: list[str], expected: tuple[object, ...]) -> None:
    from serverless_retry_tools.cli import build_parser
    from serverless_retry_tools.local.cli import demo_defaults

    args = demo_defaults(build_parser().parse_args(argv))
    assert (args.example, args.orders, args.clock_scale, args.deadline) == expected
