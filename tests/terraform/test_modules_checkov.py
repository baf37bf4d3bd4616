"""checkov over the modules' sources: no failed check, and every skip says why.

In a file of its own so that the suite queues it early in its tier (tests/scheduling.py's ``spread``
orders each tier by file): the scan is ~15 s of a core, niced, and when it came last in the tier
(as part of test_static.py) a run's final ~15 s was that scan alone on one core.
"""

from __future__ import annotations

import re

import pytest

from tests.terraform.checkov import checkov_executable, run_checkov
from tests.terraform.conftest import ROOT

CHECKOV_SKIP = re.compile(r"#\s*checkov:skip=([A-Z0-9_]+)(?::(.*))?")


def test_checkov_reports_no_failed_checks() -> None:
    checkov = checkov_executable()
    if checkov is None:
        pytest.skip("checkov is not installed (./build.sh test installs it into .venv-checkov)")
    reports = run_checkov(
        checkov, ["--directory", "modules", "--framework", "terraform", "--skip-path", r"\.terraform"], ROOT
    )
    failed = [c for r in reports for c in r.get("results", {}).get("failed_checks", [])]
    summary = [r["summary"] for r in reports]
    assert not failed, "\n".join(
        f"{c['check_id']} {c['check_name']}: {c['resource']} ({c['file_path']})" for c in failed
    )
    assert all(s["parsing_errors"] == 0 for s in summary), summary
    assert sum(s["passed"] for s in summary) > 0, "checkov checked nothing"


def test_every_checkov_skip_is_justified() -> None:
    skips = [
        (path, m)
        for path in sorted((ROOT / "modules").rglob("*.tf"))
        if ".terraform" not in path.parts
        for m in CHECKOV_SKIP.finditer(path.read_text(encoding="utf-8"))
    ]
    assert skips, "expected the justified skips of the consumer module"
    unjustified = [
        f"{p.relative_to(ROOT)}: {m.group(0)}" for p, m in skips if len((m.group(2) or "").strip()) < 30
    ]
    assert not unjustified, "every #checkov:skip needs a reason after the check id:\n" + "\n".join(
        unjustified
    )
