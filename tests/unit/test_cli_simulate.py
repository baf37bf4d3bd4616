"""`serverless-retry simulate`: a policy's decisions for an error, attempt by attempt."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from serverless_retry_tools import cli

POLICY = {
    "max_attempts": 4,
    "backoff": {"strategy": "exponential", "base_seconds": 10, "max_seconds": 3600},
    "rules": [
        {"http_status": [429], "honor_retry_after": True},
        {"errors": ["ValueError"], "retry": False},
    ],
}


def _run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, list[str]]:
    code = cli.main(["simulate", "--policy", json.dumps(POLICY), *args])
    return code, capsys.readouterr().out.splitlines()


def test_exponential_until_exhausted(capsys: pytest.CaptureFixture[str]) -> None:
    code, lines = _run(capsys, "--error", "TimeoutError")
    assert code == 0
    rows = [line.split() for line in lines[1:]]
    assert [(r[0], r[1], r[2]) for r in rows] == [
        ("1", "retry", "10"),
        ("2", "retry", "20"),
        ("3", "retry", "40"),
        ("4", "exhausted", "0"),
    ]


def test_retry_after_goes_through_the_scheduler(capsys: pytest.CaptureFixture[str]) -> None:
    _code, lines = _run(capsys, "--status", "429", "--retry-after", "1200")
    first = lines[1].split()
    assert first[1:4] == ["retry", "1200", "scheduler"]


def test_builtin_error_matches_by_mro_and_is_not_retried(capsys: pytest.CaptureFixture[str]) -> None:
    _code, lines = _run(capsys, "--error", "ValueError")
    assert lines[1].split()[1] == "non-retryable"


def test_policy_from_file_and_bad_policy(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "policy.json"
    path.write_text(json.dumps({"max_attempts": 2}))
    assert cli.main(["simulate", "--policy", str(path)]) == 0
    capsys.readouterr()
    assert cli.main(["simulate", "--policy", '{"max_attempts": 2, "backof": {}}']) == 2
    assert "backof" in capsys.readouterr().err
