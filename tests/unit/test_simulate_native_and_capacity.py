"""`simulate --native` (SQS's own retry: visibility timeout and maxReceiveCount, no policy), waits
drawn as steps, and `simulate --rate` (capacity against the default quotas) checked by hand."""

from __future__ import annotations

import json

import pytest
from serverless_retry_tools import cli
from serverless_retry_tools.attempt_rows import AttemptRow
from serverless_retry_tools.capacity import capacity
from serverless_retry_tools.commands.simulate import native_rows
from serverless_retry_tools.cost import CostModel, serverless_retry_cost
from serverless_retry_tools.timeline import wait_segments

START = "2026-11-30T10:00:00Z"
# Four attempts, every wait 1,200 s through the Scheduler (over SQS's 900 s delay), then exhausted.
SCHEDULED = json.dumps({"max_attempts": 4, "backoff": {"strategy": "fixed", "base_seconds": 1200}})


def test_native_retry_reaches_the_dlq_at_max_receive_count_times_visibility(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The module defaults (visibility 180 s, maxReceiveCount 5): receives at 0, 180, ..., 720 s, the
    DLQ at 900 s (5 x 180), not at (5 - 1) x 180 = 720 s as the README once said."""
    rows = native_rows(180, 5)
    assert [(r.attempt, r.action, r.at_seconds) for r in rows] == [
        (1, "retry", 0),
        (2, "retry", 180),
        (3, "retry", 360),
        (4, "retry", 540),
        (5, "dead-letter", 720),
    ]
    assert rows[-1].at_seconds + rows[-1].delay_seconds == 900
    argv = [
        "simulate",
        "--native",
        "--visibility-timeout",
        "180",
        "--max-receive-count",
        "5",
        "--start",
        START,
    ]
    assert cli.main([*argv, "--no-cost"]) == 0
    out = capsys.readouterr().out
    assert "in the DLQ 900 s after the first receive: maxReceiveCount 5 x visibility 180 s" in out
    assert cli.main([*argv, "--json"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert document["attempts"][-1]["dead_letter_at_seconds"] == 900


def test_native_retry_is_priced_without_calls_it_never_makes() -> None:
    """No delete of a failing message, no ChangeMessageVisibility, no copy to a retry-exhausted queue:
    five receives (a tenth of a batch's ReceiveMessage each) and the final receive's delete is none."""
    model = CostModel(message_kb=1, batch_size=10)
    line = serverless_retry_cost(native_rows(180, 5), model)
    assert line.sqs_requests == pytest.approx(5 * 0.1)
    assert line.lambda_requests == pytest.approx(5 * 0.1)


def test_native_flags_that_do_not_apply_are_refused(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["simulate", "--native", "--policy", "{}"]) == 2
    assert "--native: --policy do not apply" in capsys.readouterr().err
    assert cli.main(["simulate", "--error", "TimeoutError"]) == 2
    assert "--policy: required (or --native" in capsys.readouterr().err


def test_waits_are_steps_not_diagonals() -> None:
    """A message waits at its attempt, then runs: every segment is flat or vertical."""
    rows = [
        AttemptRow(1, "retry", 10, "sqs-delay", 0),
        AttemptRow(2, "retry", 1200, "scheduler", 10),
        AttemptRow(3, "exhausted", 0, None, 1210),
    ]
    segments = wait_segments(rows)
    assert segments == [("sqs-delay", [0, 10, 10], [1, 1, 2]), ("scheduler", [10, 1210, 1210], [2, 2, 3])]
    for _transport, xs, ys in segments + wait_segments(native_rows(30, 3)):
        for i in range(len(xs) - 1):
            assert xs[i] == xs[i + 1] or ys[i] == ys[i + 1], "no diagonal"
    assert wait_segments(native_rows(30, 3))[-1] == ("native", [60, 90], [3, 3])  # to the DLQ move


def test_capacity_at_a_rate_checked_by_hand(capsys: pytest.CaptureFixture[str]) -> None:
    """1,000 messages/s failing 4 times, 3 waits of 1,200 s by the Scheduler (1 KB, batch 10, 256 MB
    arm64, 100 ms per attempt), with the claims table.

    Per message: CreateSchedule 3, Scheduler invocations 3, SendMessage (by the schedules) 3,
    ReceiveMessage 4/10, DeleteMessageBatch 4/10, SendMessageBatch (the final copy) 1/10, DynamoDB
    2 WRU per failed attempt = 8, Lambda 4 x 0.1 s = 0.4 executions; schedules in existence (Little's
    law): 3 x 1,200 s = 3,600 per message/s. x 1,000/s:"""
    assert cli.main(["simulate", "--policy", SCHEDULED, "--error", "TimeoutError", "--start", START,
                     "--rate", "1000/s", "--json"]) == 0  # fmt: skip
    apis = {a["api"]: a for a in json.loads(capsys.readouterr().out)["capacity"]["apis"]}
    expected = {
        "Scheduler CreateSchedule": 3000,
        "Scheduler invocations": 3000,
        "Scheduler schedules in existence": 3_600_000,
        "SQS SendMessage": 3000,
        "SQS ReceiveMessage": 400,
        "SQS DeleteMessageBatch": 400,
        "SQS SendMessageBatch": 100,
        "DynamoDB writes (claims table)": 8000,
        "Lambda concurrent executions": 400,
    }
    for api, value in expected.items():
        assert apis[api]["value"] == pytest.approx(value), api
    assert apis["Scheduler CreateSchedule"]["quota"] == 5000
    assert apis["Scheduler CreateSchedule"]["over"] is False
    assert apis["Scheduler invocations"]["over"] is True  # 3,000 > 1,000: delayed, not lost
    # Monthly, per message: SQS (4 x 0.2 + 3 + 0.1) = 3.9 requests x $0.40/M; Scheduler 3 x $1.00/M;
    # Lambda 0.4 requests x $0.20/M and 4 x 0.25 GB x 0.1 s = 0.1 GB-s x $0.0000133334; DynamoDB
    # 8 WRU x $0.625/M. Times 1,000/s x 2,592,000 s.
    per_message = 3.9 * 0.40e-6 + 3 * 1.00e-6 + 0.4 * 0.20e-6 + 0.1 * 0.0000133334 + 8 * 0.625e-6
    rows_model = CostModel()
    result = capacity(_rows(), rows_model, 1000)
    assert result.monthly_dollars == pytest.approx(per_message * 1000 * 2_592_000)
    assert result.hops_share == 0


def _rows() -> list[AttemptRow]:
    return [
        AttemptRow(1, "retry", 1200, "scheduler", 0),
        AttemptRow(2, "retry", 1200, "scheduler", 1200),
        AttemptRow(3, "retry", 1200, "scheduler", 2400),
        AttemptRow(4, "exhausted", 0, None, 3600),
    ]


def test_past_the_createschedule_quota_sqs_hops_take_over(capsys: pytest.CaptureFixture[str]) -> None:
    """5,000/s x 3 CreateSchedule = 15,000/s against 5,000/s; 18,000,000 schedules against 10,000,000:
    the tighter (5,000 / 15,000) is what the Scheduler takes, the other two thirds go by sqs-hops."""
    result = capacity(_rows(), CostModel(), 5000)
    assert result.load("Scheduler CreateSchedule").over
    assert result.load("Scheduler schedules in existence").value == pytest.approx(18_000_000)
    assert result.hops_share == pytest.approx(2 / 3)
    argv = ["simulate", "--policy", SCHEDULED, "--error", "TimeoutError", "--start", START, "--no-cost"]
    assert cli.main([*argv, "--rate", "5000/s"]) == 0
    out = capsys.readouterr().out
    assert "Scheduler CreateSchedule" in out
    assert "quota 5,000 calls/s (300%)  OVER" in out
    assert "the consumer sends the excess retries by sqs-hops instead" in out
    assert "67% of the scheduler retries go by sqs-hops at this rate" in out
    assert "monthly cost (30 days): $" in out
