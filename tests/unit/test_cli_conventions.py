"""CLI conventions: a closed pipe ends quietly, a missing policy file says so, exit codes documented."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from serverless_retry_tools import cli
from serverless_retry_tools.policy_input import PolicyFileError, load_policy, read_policy_text

# A command that prints far more than a pipe holds, read by `head -1`: what `serverless-retry inspect
# --json ... | head` does on a big queue.
LONG_OUTPUT = """
import sys
from serverless_retry_tools import cli
from serverless_retry_tools.commands import inspect_queue

def long_listing(args):
    for i in range(200_000):
        print("message", i)
    return 0

inspect_queue.cmd_inspect = long_listing
sys.exit(cli.main(["inspect", "--queue-url", "https://sqs.us-east-1.amazonaws.com/1/q"]))
"""


def test_piping_to_head_prints_no_broken_pipe_traceback(tmp_path: Path) -> None:
    script = tmp_path / "long.py"
    script.write_text(LONG_OUTPUT)
    result = subprocess.run(
        ["bash", "-c", f'"{sys.executable}" "{script}" | head -1; echo "status ${{PIPESTATUS[0]}}" >&2'],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.stdout == "message 0\n"
    assert "Traceback" not in result.stderr
    assert "BrokenPipeError" not in result.stderr
    assert result.stderr.strip() == "status 1"


def test_usage_errors_exit_2_with_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        cli.main(["inspect", "--queue-url", "https://x", "--limit", "0"])
    assert exited.value.code == 2
    assert "--limit: expected a whole number from 1" in capsys.readouterr().err


def test_top_level_help_documents_exit_codes(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        cli.main(["--help"])
    out = capsys.readouterr().out
    assert "0  ok" in out
    assert "1  partial failure" in out
    assert "2  usage error" in out


def test_a_missing_policy_file_says_so(tmp_path: Path) -> None:
    with pytest.raises(PolicyFileError, match=r"no such file: .*nope\.json"):
        read_policy_text(str(tmp_path / "nope.json"))
    with pytest.raises(PolicyFileError, match="is a directory"):
        read_policy_text(str(tmp_path))
    path = tmp_path / "p.json"
    path.write_text('{"max_attempts": 3}')
    assert load_policy(str(path)).max_attempts == 3
    assert load_policy('{"max_attempts": 2}').max_attempts == 2
