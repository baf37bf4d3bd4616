"""Which Python a local function runs on, and what it says when it cannot be the function's own."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from serverless_retry_tools.local.runtime import lambda_python


@pytest.fixture(autouse=True)
def _fresh_cache(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(lambda_python, "_resolved", {})


def test_a_missing_version_falls_back_to_this_interpreter_with_a_warning(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(lambda_python, "runtime_libs", lambda exe, version, root: root / "libs")
    found = lambda_python.resolve("python3.99", tmp_path)
    here = f"{sys.version_info[0]}.{sys.version_info[1]}"
    assert (found.executable, found.version, found.libs) == (sys.executable, here, (str(tmp_path / "libs"),))
    assert found.warning == f"no Python 3.99 on this machine for runtime python3.99: running on Python {here}"


def test_without_a_package_index_it_borrows_this_environment_and_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_index(executable: str, version: str, root: Path) -> Path:
        raise RuntimeError("pip could not install boto3")

    monkeypatch.setattr(lambda_python, "runtime_libs", no_index)
    found = lambda_python.resolve("python3.99", tmp_path)
    assert found.executable == sys.executable
    assert found.libs == lambda_python._dev_site_packages()
    assert "could not prepare boto3" in found.warning


def test_the_functions_own_version_is_used_when_installed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(lambda_python, "find_python", lambda version: f"/opt/python{version}")
    monkeypatch.setattr(lambda_python, "runtime_libs", lambda exe, version, root: root / version)
    found = lambda_python.resolve("python3.12", tmp_path)
    assert (found.executable, found.version, found.libs, found.warning) == (
        "/opt/python3.12",
        "3.12",
        (str(tmp_path / "3.12"),),
        "",
    )


def test_not_a_python_runtime(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(lambda_python, "runtime_libs", lambda exe, version, root: root)
    assert "not a Python runtime" in lambda_python.resolve("nodejs20.x", tmp_path).warning
