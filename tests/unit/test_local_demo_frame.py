"""The frame the three demos share (serverless_retry_tools.local.demos.demo_frame): options from the
command line, progress lines, the logical-time line, the exit status when the example is missing."""

from __future__ import annotations

import argparse
import io
import re
from pathlib import Path

from serverless_retry_tools.local.demos.demo_frame import (
    ExampleOptions,
    ProgressLines,
    logical_duration,
    logical_line,
    run_example,
)
from serverless_retry_tools.local.demos.native_demo import NativeOptions
from serverless_retry_tools.local.demos.scheduled_demo import DemoOptions
from serverless_retry_tools.local.demos.selfheal_demo import SelfHealingOptions


def _args(**overrides: object) -> argparse.Namespace:
    values: dict[str, object] = {
        "clock_scale": 6.0,
        "deadline": 300.0,
        "seed": 3,
        "work_dir": None,
        "keep": False,
        "repo": None,
    }
    return argparse.Namespace(**{**values, **overrides})


def test_options_from_args_take_the_shared_ones_and_each_demos_own(tmp_path: Path) -> None:
    native = NativeOptions.from_args(_args(work_dir=str(tmp_path), keep=True, repo=str(tmp_path)), orders=9)
    assert (native.clock_scale, native.deadline_seconds, native.seed, native.orders) == (6.0, 300.0, 3, 9)
    assert (native.work_dir, native.destroy, native.repo) == (tmp_path, False, tmp_path)
    healing = SelfHealingOptions.from_args(_args(), per_topic=2)
    assert (healing.per_topic, healing.work_dir, healing.destroy) == (2, None, True)


def test_each_demo_keeps_its_own_defaults() -> None:
    assert (DemoOptions().clock_scale, DemoOptions().deadline_seconds, DemoOptions().orders) == (
        100.0,
        150.0,
        100,
    )
    assert (NativeOptions().clock_scale, NativeOptions().deadline_seconds, NativeOptions().orders) == (
        6.0,
        300.0,
        40,
    )
    assert (SelfHealingOptions().clock_scale, SelfHealingOptions().deadline_seconds) == (10.0, 240.0)


def test_progress_lines_are_stamped_except_the_table() -> None:
    stream = io.StringIO()
    out = ProgressLines(stream)
    out("started")
    out("order  outcome", stamp=False)
    out(stamp=False)
    first, table, blank = stream.getvalue().split("\n")[:3]
    assert re.fullmatch(r"\[ *\d+\.\ds\] started", first)
    assert (table, blank) == ("order  outcome", "")


def test_the_logical_time_line() -> None:
    assert logical_duration(725) == "12m05s"
    assert logical_duration(3725.9) == "1h02m05s"
    assert (
        logical_line(4, "queue: 1 waiting", "schedules 0")
        == "logical +0m04s | queue: 1 waiting | schedules 0"
    )


def test_a_missing_example_or_zip_is_exit_status_2_before_any_emulator(tmp_path: Path) -> None:
    stream = io.StringIO()
    options = ExampleOptions(repo=tmp_path, work_dir=tmp_path / "work")

    def story(run: object) -> int:
        raise AssertionError("no story without the example")

    assert run_example("scheduled-retry", options, ProgressLines(stream), story) == 2
    assert "examples/scheduled-retry is missing" in stream.getvalue()
    (tmp_path / "examples" / "scheduled-retry").mkdir(parents=True)
    assert run_example("scheduled-retry", options, ProgressLines(stream), story) == 2
    assert "scheduled-retry.zip is missing: run ./build.sh package" in stream.getvalue()
