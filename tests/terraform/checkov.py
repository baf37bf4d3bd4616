"""Run checkov (kept in its own virtualenv, .venv-checkov) and read its JSON report."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

from tests.terraform.conftest import NICE, ROOT


def checkov_executable() -> Path | None:
    for candidate in (
        os.environ.get("SERVERLESS_RETRY_CHECKOV"),
        str(ROOT / ".venv-checkov" / "bin" / "checkov"),
    ):
        if candidate and Path(candidate).is_file():
            return Path(candidate)
    return None


def run_checkov(checkov: Path, args: list[str], cwd: Path, *, quiet: bool = True) -> list[dict[str, Any]]:
    """checkov's reports (one per framework), from ``--output json``; ``quiet`` leaves out the passed
    and skipped checks."""
    result = subprocess.run(
        [*NICE, str(checkov), *args, "--output", "json", *(["--quiet"] if quiet else []), "--compact", "--skip-download"],
        cwd=cwd, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    try:
        reports = json.loads(result.stdout)
    except ValueError as exc:
        raise AssertionError(
            f"checkov printed no JSON:\n{result.stdout[-2000:]}\n{result.stderr[-2000:]}"
        ) from exc
    return reports if isinstance(reports, list) else [reports]
