"""dist/serverless-retry.zip is reproducible and holds what the Lambda runtime needs, nothing more."""

from __future__ import annotations

import hashlib
import importlib.util
import sys
import zipfile
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _builder() -> ModuleType:
    spec = importlib.util.spec_from_file_location("build_package", ROOT / "scripts" / "build_package.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("build_package", module)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def two_builds(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    builder = _builder()
    out = tmp_path_factory.mktemp("pkg")
    first, second = out / "a.zip", out / "b.zip"
    builder.build(first, [])
    # Touch a source file between builds: modification times must not reach the zip.
    source = ROOT / "lambda_src" / "serverless_retry" / "py.typed"
    source.touch()
    builder.build(second, [])
    return first, second


def test_two_builds_have_one_sha256(two_builds: tuple[Path, Path]) -> None:
    first, second = two_builds
    assert hashlib.sha256(first.read_bytes()).hexdigest() == hashlib.sha256(second.read_bytes()).hexdigest()


def test_zip_contents(two_builds: tuple[Path, Path]) -> None:
    with zipfile.ZipFile(two_builds[0]) as archive:
        infos = archive.infolist()
    names = [info.filename for info in infos]
    assert names == sorted(names)
    assert {info.date_time for info in infos} == {(1980, 1, 1, 0, 0, 0)}
    assert not [n for n in names if "__pycache__" in n or n.endswith(".pyc")]
    assert "serverless_retry/handlers/consumer.py" in names
    assert "serverless_retry/py.typed" in names
    assert "aws_lambda_powertools/__init__.py" in names
    # boto3 and botocore come from the Lambda runtime: bundling them would pin a stale SDK.
    assert not [n for n in names if n.startswith(("boto3/", "botocore/"))]


def test_zip_holds_only_what_runs_in_lambda(two_builds: tuple[Path, Path]) -> None:
    """The deployed package is the Lambda code and its pinned runtime dependencies: no dev tools (the
    local emulator, the CLI, moto), no tests. Every top-level entry is accounted for here."""
    with zipfile.ZipFile(two_builds[0]) as archive:
        names = archive.namelist()
    top = {name.split("/", 1)[0] for name in names}
    pinned = {
        line.split("==")[0].strip().lower().replace("-", "_")
        for line in (ROOT / "requirements" / "runtime.txt").read_text().splitlines()
        if line.strip() and not line.startswith("#")
    }
    allowed_prefixes = ("serverless_retry", *pinned)
    unexpected = sorted(t for t in top if not t.lower().startswith(allowed_prefixes) and t != "re2.py")
    assert unexpected == []
    assert not [n for n in top if n.startswith(("serverless_retry_tools", "moto", "tests"))]
    ours = sorted(n for n in names if n.startswith("serverless_retry/"))
    shipped = sorted(
        "serverless_retry/" + p.relative_to(ROOT / "lambda_src" / "serverless_retry").as_posix()
        for p in (ROOT / "lambda_src" / "serverless_retry").rglob("*")
        if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".pyc"
    )
    assert ours == shipped
    assert not [n for n in ours if "/local/" in n or n.endswith("/cli.py")]
