"""The package's public API: every name in __all__ resolves, and importing it makes no AWS client."""

from __future__ import annotations

import subprocess
import sys

import serverless_retry


def test_all_names_resolve() -> None:
    missing = [name for name in serverless_retry.__all__ if not hasattr(serverless_retry, name)]
    assert missing == []
    assert serverless_retry.__all__ == sorted(serverless_retry.__all__, key=str)


def test_import_creates_no_client_and_reads_no_environment() -> None:
    # A fresh interpreter with no AWS configuration at all: the import alone must succeed.
    code = "import serverless_retry, serverless_retry.testing, serverless_retry_tools.cli; print('ok')"
    env = {"PATH": "/usr/bin:/bin"}
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, check=False
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok"
