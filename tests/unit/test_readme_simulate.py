"""The `simulate` examples of docs/operations.md are what the command prints, and its pictures exist: the
Operations section shows real output, so a change to the decisions, the cost model or the prices
must come with docs that say so."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import pytest
from serverless_retry.policy import RetryPolicy
from serverless_retry_tools import cli
from serverless_retry_tools.timeline import PLOT_NEEDS

ROOT = Path(__file__).resolve().parents[2]
OPERATIONS = ROOT / "docs" / "operations.md"
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def _examples() -> list[tuple[list[str], str]]:
    """Each ```text block that starts with `$ serverless-retry simulate`: (argv, printed text)."""
    found = []
    for block in re.findall(r"```text\n(\$ serverless-retry simulate.*?)```", OPERATIONS.read_text(), re.S):
        command, _, printed = block.partition("\n")
        while command.endswith("\\"):  # a command continued on the next line
            more, _, printed = printed.partition("\n")
            command = command[:-1] + " " + more.strip()
        found.append((shlex.split(command)[3:], printed))
    return found


def test_the_readme_shows_simulate_examples() -> None:
    assert len(_examples()) >= 2
    RetryPolicy.from_dict(json.loads((ROOT / "docs/example-policy.json").read_text()))  # valid


@pytest.mark.parametrize("index", range(2))
def test_each_readme_example_is_what_simulate_prints(
    index: int, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("matplotlib")
    argv, printed = _examples()[index]
    plot = argv[argv.index("--plot") + 1]
    assert (ROOT / plot).read_bytes().startswith(PNG_MAGIC), f"{plot}: the page's picture is missing"
    monkeypatch.chdir(ROOT)
    argv[argv.index("--plot") + 1] = str(tmp_path / "timeline.png")  # never rewrite the committed one
    assert cli.main(["simulate", *argv]) == 0
    out = capsys.readouterr().out.replace(str(tmp_path / "timeline.png"), plot)
    assert out == printed
    assert (tmp_path / "timeline.png").read_bytes().startswith(PNG_MAGIC)


def test_plot_without_matplotlib_is_a_usage_error_before_any_output(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr("serverless_retry_tools.timeline.plot_available", lambda: False)
    code = cli.main(["simulate", "--policy", "{}", "--plot", str(tmp_path / "t.png")])
    captured = capsys.readouterr()
    assert code == 2
    assert captured.out == ""  # no half a report
    assert captured.err.strip() == f"error: {PLOT_NEEDS}"
    assert not (tmp_path / "t.png").exists()
