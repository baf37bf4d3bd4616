"""`serverless-retry simulate`: the consumer's own decisions for an error, attempt by attempt."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest
from serverless_retry.errors import RetryableError
from serverless_retry.planning import QueueFacts
from serverless_retry.policy import RetryPolicy
from serverless_retry_tools import cli
from serverless_retry_tools.commands.simulate import attempt_rows, synthetic_error

POLICY = {
    "max_attempts": 4,
    "backoff": {"strategy": "exponential", "base_seconds": 10, "max_seconds": 3600},
    "rules": [
        {"http_status": [429], "honor_retry_after": True},
        {"errors": ["ValueError"], "retry": False},
    ],
}
START = "2026-11-30T10:00:00Z"


def _run(
    capsys: pytest.CaptureFixture[str], *args: str, policy: object = POLICY
) -> tuple[int, list[list[str]]]:
    code = cli.main(["simulate", "--policy", json.dumps(policy), "--start", START, "--no-cost", *args])
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("first failure at 2026-11-30T10:00:00Z (--start)")
    return code, [line.split() for line in lines[2:]]


def test_exponential_until_exhausted(capsys: pytest.CaptureFixture[str]) -> None:
    code, rows = _run(capsys, "--error", "TimeoutError")
    assert code == 0
    assert [(r[0], r[1], r[2]) for r in rows] == [
        ("1", "retry", "10"),
        ("2", "retry", "20"),
        ("3", "retry", "40"),
        ("4", "exhausted", "0"),
    ]


def test_retry_after_goes_through_the_scheduler(capsys: pytest.CaptureFixture[str]) -> None:
    _code, rows = _run(capsys, "--status", "429", "--retry-after", "1200")
    assert rows[0][1:4] == ["retry", "1200", "scheduler"]


def test_an_http_date_retry_after_counts_from_the_start(capsys: pytest.CaptureFixture[str]) -> None:
    _code, rows = _run(capsys, "--status", "429", "--retry-after", "Mon, 30 Nov 2026 10:05:00 GMT")
    assert rows[0][1:5] == ["retry", "300", "sqs-delay", "-"]
    assert rows[0][5] == "2026-11-30T10:05:00Z"


def test_builtin_error_matches_by_mro_and_is_not_retried(capsys: pytest.CaptureFixture[str]) -> None:
    _code, rows = _run(capsys, "--error", "ValueError")
    assert rows[0][1] == "non-retryable"


def test_non_retryable_error_is_never_retried(capsys: pytest.CaptureFixture[str]) -> None:
    _code, rows = _run(capsys, "--error", "NonRetryableError")
    assert [r[1] for r in rows] == ["non-retryable"]


def test_unmatched_errors_follow_unmatched_dead_letter(capsys: pytest.CaptureFixture[str]) -> None:
    _code, rows = _run(capsys, "--error", "PaymentDeclined", policy={**POLICY, "unmatched": "dead-letter"})
    assert [r[1] for r in rows] == ["non-retryable"]
    _code, rows = _run(capsys, "--error", "RetryableError", policy={**POLICY, "unmatched": "dead-letter"})
    assert rows[0][1] == "retry"  # the processor asked for a retry


def test_fifo_and_hops_show_what_the_consumer_does(capsys: pytest.CaptureFixture[str]) -> None:
    _code, rows = _run(capsys, "--fifo", "ordered")
    assert {r[3] for r in rows if r[1] == "retry"} == {"visibility"}
    _code, rows = _run(capsys, "--fifo", "unordered")
    assert {r[3] for r in rows if r[1] == "retry"} == {"scheduler"}
    hops = {
        **POLICY,
        "transport": "sqs-hops",
        "backoff": {"strategy": "fixed", "base_seconds": 2000, "max_seconds": 2000},
    }
    _code, rows = _run(capsys, policy=hops)
    assert rows[0][1:5] == ["retry", "2000", "sqs-hops", "3"]


def test_in_place_waits_stop_before_the_message_expires(capsys: pytest.CaptureFixture[str]) -> None:
    slow = {"max_attempts": 10, "backoff": {"strategy": "fixed", "base_seconds": 3600, "max_seconds": 3600}}
    _code, rows = _run(capsys, "--fifo", "ordered", "--retention", "10000", policy=slow)
    assert [r[1] for r in rows] == ["retry", "retry", "exhausted"]
    assert "expires from the queue" in " ".join(rows[-1])


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--max-attempts", "0"], "--max-attempts: expected a whole number from 1 to 10000"),
        (["--status", "99"], "--status: expected a whole number from 100 to 599"),
        (["--retention", "5"], "--retention: expected a whole number from 60 to 1209600"),
        (["--start", "yesterday"], "--start: must be an ISO-8601 time"),
        # Once accepted silently (exit 0): the consumer ignores such a hint, the simulation did too.
        (
            ["--status", "429", "--retry-after", "garbage"],
            "--retry-after: expected seconds (120) or an HTTP date",
        ),
        (["--error", "Not A Class"], "--error: expected an exception class name"),
        (["--error", "orders..Declined"], "--error: expected an exception class name"),
        (["--fifo", "sorted"], "--fifo: invalid choice: 'sorted' (choose from 'ordered', 'unordered')"),
        (["--rate", "lots"], "--rate: expected messages per second"),
    ],
)
def test_nonsense_arguments_exit_2(capsys: pytest.CaptureFixture[str], args: list[str], says: str) -> None:
    with pytest.raises(SystemExit) as exited:
        cli.main(["simulate", "--policy", json.dumps(POLICY), *args])
    assert exited.value.code == 2
    assert says in capsys.readouterr().err


def test_policy_from_file_missing_file_and_bad_policy(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "policy.json"
    path.write_text(json.dumps({"max_attempts": 2}))
    assert cli.main(["simulate", "--policy", str(path)]) == 0
    capsys.readouterr()
    assert cli.main(["simulate", "--policy", str(tmp_path / "nope.json")]) == 2
    assert "--policy: no such file" in capsys.readouterr().err
    assert cli.main(["simulate", "--policy", '{"max_attempts": 2, "backof": {}}']) == 2
    assert "backof" in capsys.readouterr().err


def test_attempt_rows_are_the_data_behind_the_table() -> None:
    policy = RetryPolicy.from_dict({"max_attempts": 3, "backoff": {"strategy": "fixed", "base_seconds": 60}})
    start = datetime(2026, 11, 30, 10, tzinfo=UTC)
    rows = attempt_rows(policy, lambda: RetryableError("busy"), start=start, queue=QueueFacts())
    assert [(r.attempt, r.action, r.delay_seconds, r.transport, r.at_seconds) for r in rows] == [
        (1, "retry", 60, "sqs-delay", 0.0),
        (2, "retry", 60, "sqs-delay", 60.0),
        (3, "exhausted", 0, None, 120.0),
    ]


def test_synthetic_errors_classify_like_real_ones() -> None:
    assert type(synthetic_error("NonRetryableError", None, "", None)).__name__ == "NonRetryableError"
    assert isinstance(synthetic_error("ConnectionResetError", None, "", None), OSError)
    custom = synthetic_error("orders.errors.Declined", None, "", None)
    assert (type(custom).__module__, type(custom).__name__) == ("orders.errors", "Declined")
    assert not isinstance(custom, RetryableError)


def test_cost_lines_and_timeline_come_from_the_same_rows(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    png = tmp_path / "timeline.png"
    policy = json.dumps(POLICY)
    code = cli.main(
        ["simulate", "--policy", policy, "--start", START, "--error", "TimeoutError", "--plot", str(png)]
    )
    out = capsys.readouterr().out
    assert code == 0
    assert "serverless-retry" in out
    assert "Step Functions" in out
    assert f"timeline written to {png}" in out
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
