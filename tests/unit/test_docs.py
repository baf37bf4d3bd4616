"""The documentation a user adopts from: a short README with runnable quickstarts pinned to a release,
the docs site's generated module pages in step with the modules, no reference to a document outside
the repository, and --help texts in plain text. (The site's links: `mkdocs build --strict`, which
./build.sh test runs beside ruff and mypy.)"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from pathlib import Path

import pytest
from serverless_retry import backoff, policy
from serverless_retry.backoff import Backoff
from serverless_retry.envelope import Envelope, FinalError, HistoryEntry, RetryMeta
from serverless_retry.policy import RetryPolicy, Rule
from serverless_retry_tools import cli
from serverless_retry_tools.help_text import plain

from tests.support.readme import quickstarts

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
PINNED = re.compile(
    r'source\s*=\s*"git::https://github\.com/serverless-retry/serverless-retry\.git//modules/[\w-]+\?ref=v\d+\.\d+\.\d+"'
)
# Written apart so that this file does not match itself.
OUTSIDE_DOCUMENTS = ("DESIGN" + ".md", "DESIGN" + " §", "DESIGN" + " section", "../" + "shared")
RST_MARKUP = re.compile(r"``|:(?:mod|class|func|meth|attr|exc|data|obj):`")


def test_the_readme_is_short_and_shows_the_demo_and_the_test_commands() -> None:
    text = README.read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 300, "README.md is for deciding to adopt: move detail to docs/"
    assert "./build.sh demo" in text
    assert "./build.sh test" in text


def test_each_pattern_has_a_quickstart_pinned_to_a_release() -> None:
    blocks = quickstarts()
    assert set(blocks) == {"scheduled-retry", "self-healing", "native-retry"}
    for pattern, hcl in blocks.items():
        sources = re.findall(r"^\s*source\s*=.*$", hcl, re.MULTILINE)
        assert sources, f"{pattern}: the quickstart uses no module"
        for source in sources:
            assert PINNED.search(source), f"{pattern}: module source not pinned to a release tag: {source}"


def test_the_generated_module_pages_are_up_to_date() -> None:
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        import tfdocs
    finally:
        sys.path.remove(str(ROOT / "scripts"))
    stale = tfdocs.update_docs(check=True)
    assert not stale, f"stale: {[str(p.relative_to(ROOT)) for p in stale]}; run: python scripts/tfdocs.py"


def _tracked_files() -> list[Path]:
    listed = subprocess.run(
        ["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, text=True, check=False, timeout=60
    )
    if listed.returncode != 0:  # not a git checkout (an unpacked sdist): every file but the build's
        skip = {".git", ".venv", ".venv-checkov", "build", "dist"}
        return [p for p in ROOT.rglob("*") if p.is_file() and not skip & set(p.relative_to(ROOT).parts)]
    return [ROOT / name for name in listed.stdout.split("\0") if name]


def test_nothing_refers_to_a_document_outside_the_repository() -> None:
    found = []
    for path in _tracked_files():
        try:
            text = path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, FileNotFoundError, IsADirectoryError):
            continue  # binary files (pictures, zips)
        for number, line in enumerate(text.splitlines(), 1):
            if any(needle in line for needle in OUTSIDE_DOCUMENTS):
                found.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()[:120]}")
    assert not found, "name the page under docs/ instead:\n" + "\n".join(found)


def _parsers(parser: argparse.ArgumentParser, name: str) -> list[tuple[str, argparse.ArgumentParser]]:
    found = [(name, parser)]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub_name, sub in action.choices.items():
                found += _parsers(sub, f"{name} {sub_name}")
    return found


def test_every_help_text_is_plain_text() -> None:
    parsers = _parsers(cli.build_parser(), "serverless-retry")
    assert len(parsers) >= 4
    for name, parser in parsers:
        shown = parser.format_help()
        assert not RST_MARKUP.search(shown), f"{name} --help shows reStructuredText markup:\n{shown}"


@pytest.mark.parametrize(
    ("source", "shown"),
    [
        ("the ``serverless-retry`` command", "the serverless-retry command"),
        ("under :mod:`serverless_retry_tools.commands`", "under serverless_retry_tools.commands"),
        ("by :class:`~serverless_retry_tools.local.emulator.emulator.Emulator`", "by Emulator"),
        ("see :func:`the planner <serverless_retry.planning.plan_failure>`", "see the planner"),
        ("a ``--start``\nand ``--seed``", "a --start\nand --seed"),
    ],
)
def test_plain_keeps_what_the_markup_encloses(source: str, shown: str) -> None:
    assert plain(source) == shown


def _reference_table(heading: str) -> dict[str, str]:
    """field -> default column of one field table of docs/retry-policy.md."""
    text = (ROOT / "docs" / "retry-policy.md").read_text(encoding="utf-8")
    section = text[text.index(heading) :]
    section = section[: section.index("\n#", 1)]
    rows = re.findall(r"^\| `(\w+)` \|[^|]*\| ([^|]*) \|", section, re.MULTILINE)
    return {field: default.strip() for field, default in rows}


def _shown(value: object) -> str:
    if isinstance(value, bool):
        return f"`{str(value).lower()}`"
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if value == ():
        return "`[]`"
    return "none" if value is None else f"`{value}`"


@pytest.mark.parametrize(
    ("heading", "fields", "defaults"),
    [
        ("### The policy", policy._POLICY_FIELDS, RetryPolicy()),
        ("### `backoff`", backoff._BACKOFF_FIELDS, Backoff()),
        ("### A rule", policy._RULE_FIELDS, Rule(errors=("X",))),
    ],
)
def test_the_policy_reference_lists_every_field_with_its_default(
    heading: str, fields: tuple[str, ...], defaults: object
) -> None:
    table = _reference_table(heading)
    assert sorted(table) == sorted(fields), f"docs/retry-policy.md {heading}: fields differ from the code"
    for field, shown in table.items():
        if isinstance(defaults, Rule) and field in ("errors", "max_attempts", "backoff"):
            continue  # a rule's matcher is set here; its budget and backoff default to the policy's
        value = getattr(defaults, field)
        if isinstance(value, Backoff):
            continue  # the policy's backoff: described in words, its fields in their own table
        assert shown == _shown(value), f"{heading} {field}: the page says {shown}, the code {_shown(value)}"


def test_the_formats_page_names_every_field_of_the_envelope() -> None:
    page = (ROOT / "docs" / "envelope.md").read_text(encoding="utf-8")
    fields = [*Envelope.__annotations__, *RetryMeta.__annotations__, *HistoryEntry.__annotations__]
    fields += list(FinalError.__annotations__)
    missing = [f for f in fields if f"`{f}`" not in page and f"`serverless_retry.{f}`" not in page]
    assert not missing, f"docs/envelope.md does not describe: {missing}"


def test_the_formats_page_says_first_failed_at_is_the_first_receive_time() -> None:
    """planning.plan_failure keeps the decision time of attempt 1, which for a copy is the record's
    ApproximateFirstReceiveTimestamp (else SentTimestamp), not the moment the processor failed."""
    page = (ROOT / "docs" / "envelope.md").read_text(encoding="utf-8")
    (row,) = [line for line in page.splitlines() if line.startswith("| `serverless_retry.first_failed_at`")]
    assert "when attempt 1 failed" not in row
    assert "first receive time" in row
    assert "ApproximateFirstReceiveTimestamp" in row
