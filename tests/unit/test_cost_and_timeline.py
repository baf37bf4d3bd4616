"""The cost model against a hand computation, and the timeline PNG (a valid image of the stated size)."""

from __future__ import annotations

import argparse
import io
import struct
from pathlib import Path

import pytest
from serverless_retry_tools.attempt_rows import rows_from_delays
from serverless_retry_tools.commands.simulate_report import add_arguments, emit
from serverless_retry_tools.cost import CostModel, compare, hop_cost, render

# 3 retries (10 s and 20 s by SQS delay, 20 min by the Scheduler), then exhausted at attempt 4.
ROWS = rows_from_delays([(10, "sqs-delay"), (20, "sqs-delay"), (1200, "scheduler")], "exhausted")


def test_serverless_retry_cost_by_hand() -> None:
    # 1 KB messages in batches of 10: one batched call bills ceil(10 KB / 64 KB) = 1 request, 0.1 each.
    ours, _sleep, _sfn = (line.dollars(CostModel()) for line in compare(ROWS))
    sqs = (
        4 * (0.1 + 0.1) + 2 * 0.1 + 1 + 0.1
    )  # 4 deliveries (receive+delete), 2 delayed sends, 1 schedule send, exhausted
    assert ours["SQS requests"] == pytest.approx(sqs * 0.40)  # 2.1 requests -> $0.84 per million messages
    assert ours["Scheduler invocations"] == pytest.approx(1.00)
    assert ours["Lambda requests"] == pytest.approx(4 * 0.1 * 0.20)
    assert ours["Lambda GB-seconds"] == pytest.approx(4 * 0.25 * 0.1 * 0.0000133334 * 1e6)
    assert ours["total"] == pytest.approx(0.84 + 1.00 + 0.08 + 1.33334)


def test_sleeping_cost_by_hand_and_impossible_past_900_s() -> None:
    model = CostModel()
    _ours, sleep, _sfn = compare(ROWS, model)
    dollars = sleep.dollars(model)
    gb_seconds = 0.25 * (4 * 0.1 + 10 + 20 + 1200)  # every attempt's compute plus every wait
    assert dollars["Lambda GB-seconds"] == pytest.approx(gb_seconds * 0.0000133334 * 1e6)
    assert dollars["SQS requests"] == pytest.approx(0.3 * 0.40)
    assert dollars["Lambda requests"] == pytest.approx(0.1 * 0.20)
    assert not sleep.possible
    assert "900 s timeout" in sleep.note


def test_step_functions_cost_by_hand() -> None:
    model = CostModel(architecture="x86_64")
    sfn = compare(ROWS, model)[2].dollars(model)
    assert sfn["Step Functions transitions"] == pytest.approx((2 * 4 + 3 + 1) * 25.0)  # $0.025 per 1,000
    assert sfn["Lambda requests"] == pytest.approx(4 * 0.20)
    assert sfn["Lambda GB-seconds"] == pytest.approx(4 * 0.25 * 0.1 * 0.0000166667 * 1e6)


def test_large_messages_are_billed_in_64_kb_chunks() -> None:
    model = CostModel(message_kb=100, batch_size=1)
    ours = compare(rows_from_delays([(10, "sqs-delay")]), model)[0]
    # 2 deliveries x (receive + delete) + 1 delayed send + 1 exhausted send, 2 chunks each.
    assert ours.sqs_requests == pytest.approx(2 * (4 + 1 + 1))


def test_visibility_and_hops() -> None:
    model = CostModel()
    visibility = compare(rows_from_delays([(300, "visibility")]), model)[0]
    assert visibility.sqs_requests == pytest.approx(0.1 + 0.1 + 0.1 + 0.1 + 0.1)  # no delete between attempts
    hops = compare(rows_from_delays([(2000, "sqs-hops")]), model)[0]  # 3 hops: 2 early arrivals
    assert hops.sqs_requests == pytest.approx(2 * 0.2 + 3 * 0.1 + 2 * 0.2 + 0.1)
    assert hops.lambda_requests == pytest.approx(2 * 0.1 + 2 * 0.1)
    assert hop_cost(model) == pytest.approx(0.3 * 0.40 + 0.1 * 0.20 + 0.25 * 0.02 * 0.0000133334 * 1e6)
    assert any("sqs-hops" in line for line in render(rows_from_delays([(2000, "sqs-hops")])))


def test_render_names_the_price_date_and_the_three_columns() -> None:
    text = "\n".join(render(ROWS))
    assert "prices read 2026-11-30" in text
    for name in ("serverless-retry", "sleep in Lambda", "Step Functions Wait", "total"):
        assert name in text


def _png_size(path: Path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "PNG signature"
    assert data[12:16] == b"IHDR"
    width, height = struct.unpack(">II", data[16:24])
    return width, height


def test_timeline_png_is_a_valid_image(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    from serverless_retry_tools.timeline import plot_timeline

    path = plot_timeline(ROWS, tmp_path / "t.png", max_attempts=5, max_age_seconds=3600)
    assert _png_size(path) == (800, 450)
    assert path.stat().st_size > 5000


def test_emit_writes_cost_and_plot(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    args = parser.parse_args(["--plot", str(tmp_path / "p.png"), "--memory-mb", "512"])
    out = io.StringIO()
    emit(ROWS, args, max_attempts=4, out=out)
    assert "512 MB arm64" in out.getvalue()
    assert _png_size(tmp_path / "p.png") == (800, 450)
