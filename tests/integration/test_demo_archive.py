"""``serverless-retry demo`` with its archive (issue 31): examples/scheduled-retry applied with
``archive_enabled = true`` to a fresh emulator, a small workload, and the demo's retention step. Every
message the consumer gave up on is accounted for in the archive (``archived: <outcome>``), logical
time passes the retry-exhausted queue's retention, ``inspect --archive`` finds the exhausted orders
and ``redrive --archive --max 1`` sends one back, which goes through its retries again and ends in the
archive again while the record it came from keeps its redrive mark."""

from __future__ import annotations

import io
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from serverless_retry_tools.local.demos.demo_frame import find_repo_root
from serverless_retry_tools.local.demos.scheduled_demo import DemoOptions, run_demo

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(shutil.which("terraform") is None, reason="terraform is not on PATH"),
]

ROOT = find_repo_root()


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> tuple[int, str, Path]:
    if not (ROOT / "dist" / "examples" / "scheduled-retry.zip").is_file():
        pytest.skip("dist/examples/scheduled-retry.zip is missing: run ./build.sh package")
    work = tmp_path_factory.mktemp("demo-archive")
    stream = io.StringIO()
    # 8 orders: each behaviour once or more, two of them given up on (an always-timeout, an invalid),
    # and the malformed envelope. No destroy: the emulator goes with the run.
    status = run_demo(DemoOptions(orders=8, work_dir=work, destroy=False, deadline_seconds=150), stream)
    return status, stream.getvalue(), work


def _json(path: Path) -> Any:
    return json.loads(path.read_text())


def test_the_demo_accounts_what_was_given_up_on_in_the_archive(demo: tuple[int, str, Path]) -> None:
    status, output, work = demo
    assert status == 0, output[-4000:]
    fates = _json(work / "accounting.json")
    assert len(fates) == 9  # 8 orders and the malformed envelope
    given_up = [f for f in fates if f["outcome"] != "processed"]
    assert {f["evidence"] for f in given_up} == {"archive"}
    assert sorted(f["outcome"] for f in given_up) == ["exhausted", "invalid-envelope", "non-retryable"]
    assert "archived: exhausted" in output
    assert "archived 3 of them (the archiver took them from the queues)" in output
    assert "OK: every message is accounted for" in output


def test_the_retention_step_finds_inspects_and_redrives_from_the_archive(demo: tuple[int, str, Path]) -> None:
    status, output, work = demo
    assert status == 0, output[-4000:]
    step = _json(work / "retention.json")
    assert step["errors"] == []
    assert step["retention_seconds"] == 1_209_600  # modules/queue's exhausted queue: 14 days
    assert step["jumped_seconds"] > step["retention_seconds"]
    assert step["expiration_days"] == 180
    assert step["queue_depth"] == 0
    assert step["archived_before"] == 3
    assert step["inspected"] == 1  # the one always-timeout order: exhausted with TimeoutError
    assert step["redriven_message_id"]
    # A fresh budget (--reset-attempts): its 6 attempts again, then a record of its own.
    assert step["ended"] == "archived: exhausted"
    assert step["ended_key"] != step["redriven_from"]
    assert step["archived_after"] == 4
    assert "/exhausted/TimeoutError/" in step["ended_key"]
    assert ".6." in step["ended_key"].rsplit("/", 1)[-1]
    assert "the record redriven keeps its mark: 1 redrive(s)" in output
