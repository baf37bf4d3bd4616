"""``./build.sh release`` (scripts/release.py): every artifact, their metadata as PyPI would check it,
and each wheel installed into a clean virtualenv and run there.

The clean virtualenvs get the wheels' dependencies from the package index (PyPI, reachable in CI), by
uv when the dev venv has it (its cache makes this seconds), else by pip: an install from the declared
dependencies alone is the point, so nothing of the dev venv is visible to them.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import tomllib
import zipfile
from email.parser import HeaderParser
from pathlib import Path
from types import ModuleType

import pytest
import serverless_retry
from packaging.requirements import Requirement

from tests.support.scripts import load_script
from tests.support.wheels import make_wheel

ROOT = Path(__file__).resolve().parents[2]
VERSION = serverless_retry.__version__
UV = Path(sys.executable).parent / "uv"


@pytest.fixture(scope="module")
def release() -> ModuleType:
    return load_script("release")


@pytest.fixture(scope="module")
def dist(release: ModuleType, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    release.release(out, tmp_path_factory.mktemp("work"))
    return out


def _wheel(dist: Path, name: str) -> Path:
    (wheel,) = dist.glob(f"{name}-{VERSION}-py3-none-any.whl")
    return wheel


def _metadata(wheel: Path) -> tuple[list[str], dict[str, list[str]]]:
    with zipfile.ZipFile(wheel) as zf:
        names = zf.namelist()
        (meta,) = [n for n in names if n.endswith(".dist-info/METADATA")]
        message = HeaderParser().parsestr(zf.read(meta).decode())
    fields: dict[str, list[str]] = {}
    for key, value in message.items():
        fields.setdefault(key, []).append(value)
    return names, fields


def test_every_artifact_is_there_with_its_checksum(dist: Path) -> None:
    expected = {
        f"serverless_retry-{VERSION}.tar.gz",
        f"serverless_retry-{VERSION}-py3-none-any.whl",
        f"serverless_retry_tools-{VERSION}.tar.gz",
        f"serverless_retry_tools-{VERSION}-py3-none-any.whl",
        "serverless-retry.zip",
        "serverless-retry-layer.zip",
    }
    assert {p.name for p in dist.iterdir()} == {*expected, "SHA256SUMS"}
    sums = dict(reversed(line.split("  ")) for line in (dist / "SHA256SUMS").read_text().splitlines())
    assert set(sums) == expected
    for name, digest in sums.items():
        assert hashlib.sha256((dist / name).read_bytes()).hexdigest() == digest, name
    with zipfile.ZipFile(dist / "serverless-retry-layer.zip") as layer:
        assert "python/serverless_retry/__init__.py" in layer.namelist()


def test_two_builds_of_one_commit_are_byte_identical(
    release: ModuleType, dist: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """So anyone can rebuild a release from its tag and compare it with SHA256SUMS."""
    again = tmp_path_factory.mktemp("again")
    for path in (ROOT / "lambda_src" / "serverless_retry").glob("*.py"):
        os.utime(path)  # checkout times must not reach the sdists
    release.release(again, tmp_path_factory.mktemp("work-again"))
    assert (again / "SHA256SUMS").read_text() == (dist / "SHA256SUMS").read_text()


def test_twine_check_passes_on_each_distribution(dist: Path) -> None:
    files = sorted(str(p) for p in dist.iterdir() if p.name.endswith((".whl", ".tar.gz")))
    result = subprocess.run(
        [sys.executable, "-m", "twine", "check", "--strict", *files],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.count("PASSED") == 4


def test_the_library_wheel_is_the_lambda_code_alone(dist: Path) -> None:
    names, meta = _metadata(_wheel(dist, "serverless_retry"))
    assert meta["Version"] == [VERSION]
    assert {n.split("/", 1)[0] for n in names} == {
        "serverless_retry",
        f"serverless_retry-{VERSION}.dist-info",
    }
    assert "serverless_retry/py.typed" in names
    assert "serverless_retry/handlers/consumer.py" in names
    assert meta["License-Expression"] == ["Apache-2.0"]
    assert "Homepage, https://github.com/serverless-retry/serverless-retry" in meta["Project-URL"]
    assert "Typing :: Typed" in meta["Classifier"]
    required = {Requirement(r).name for r in meta["Requires-Dist"]}
    assert required == {"boto3", "aws-lambda-powertools", "google-re2"}  # no moto, rich, matplotlib
    assert "Provides-Extra" not in meta


def test_the_tools_wheel_pins_the_library_at_its_own_version(dist: Path) -> None:
    names, meta = _metadata(_wheel(dist, "serverless_retry_tools"))
    assert meta["Version"] == [VERSION]
    assert {n.split("/", 1)[0] for n in names} == {
        "serverless_retry_tools",
        f"serverless_retry_tools-{VERSION}.dist-info",
    }
    assert "serverless_retry_tools/py.typed" in names
    assert f"serverless-retry=={VERSION}" in meta["Requires-Dist"]
    assert set(meta["Provides-Extra"]) == {"local", "ops", "plot"}
    # moto and rich only behind their extras
    assert all("extra ==" in r for r in meta["Requires-Dist"] if r.startswith(("moto", "rich", "matplotlib")))


def test_the_dev_project_declares_what_the_distributions_do() -> None:
    """pip install -e .[dev] (the dev venv) is one project holding both packages: its dependencies are
    the library's, its extras the tools'; the tools' own requirements are in its dev extra."""
    root = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    library = tomllib.loads((ROOT / "packaging/serverless-retry/pyproject.toml").read_text())["project"]
    tools = tomllib.loads((ROOT / "packaging/serverless-retry-tools/pyproject.toml").read_text())["project"]
    assert root["dependencies"] == library["dependencies"]
    for extra, requirements in tools["optional-dependencies"].items():
        assert root["optional-dependencies"][extra] == requirements
    own = (ROOT / "packaging/serverless-retry-tools/requirements.txt").read_text().splitlines()
    assert {line for line in own if line and not line.startswith("#")} <= set(
        root["optional-dependencies"]["dev"]
    )
    assert root["scripts"] == tools["scripts"]
    assert "Private :: Do Not Upload" in root["classifiers"]  # never published by mistake


def _venv(path: Path) -> Path:
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(path)], check=True, timeout=120)
    return path / "bin" / "python"


def _install(python: Path, *wheels: Path) -> None:
    if UV.exists():
        result = subprocess.run(
            [
                sys.executable,
                str(ROOT / "scripts" / "uv_install.py"),
                "--uv",
                str(UV),
                "--python",
                str(python),
                "--",
                *map(str, wheels),
            ],
            timeout=600,
            check=False,
        )
        if result.returncode == 0:
            return
    subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(python), "install", "-q", *map(str, wheels)],
        timeout=600,
        check=True,
    )


def _clean_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith(("PYTHONPATH", "VIRTUAL_ENV"))}


def _run(argv: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, capture_output=True, text=True, timeout=120, env=_clean_env(), check=False)


def test_the_library_wheel_installs_and_imports_in_a_clean_virtualenv(dist: Path, tmp_path: Path) -> None:
    python = _venv(tmp_path / "venv")
    _install(python, _wheel(dist, "serverless_retry"))
    script = (
        "import importlib.util, serverless_retry, serverless_retry.regex, aws_lambda_powertools; "
        "print(serverless_retry.__version__, serverless_retry.__file__); "
        "print([m for m in ('serverless_retry_tools', 'moto', 'rich') if importlib.util.find_spec(m)])"
    )
    result = _run([str(python), "-c", script])
    assert result.returncode == 0, result.stderr
    first, absent = result.stdout.splitlines()
    version, where = first.split()
    assert version == VERSION
    assert Path(where).is_relative_to(tmp_path / "venv")  # the wheel's copy, not the source tree
    assert absent == "[]"
    assert not (tmp_path / "venv" / "bin" / "serverless-retry").exists()


def test_the_tools_wheel_installs_and_runs_in_a_clean_virtualenv(dist: Path, tmp_path: Path) -> None:
    python = _venv(tmp_path / "venv")
    _install(python, _wheel(dist, "serverless_retry"), _wheel(dist, "serverless_retry_tools"))
    command = str(tmp_path / "venv" / "bin" / "serverless-retry")
    result = _run([command, "--version"])
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == f"serverless-retry {VERSION}"
    result = _run([command, "package", "function", "--help"])
    assert result.returncode == 0, result.stderr
    assert "--with-serverless-retry" in result.stdout
    # Without the [local] extra the emulator's commands are simply absent, not broken.
    result = _run([command, "simulate", "--help"])
    assert result.returncode == 0, result.stderr
    # `package` works from the installed distributions alone (pip comes as the tools' dependency): the
    # layer carries the installed library's files, with stand-ins for its dependencies (offline).
    wheels = tmp_path / "wheels"
    make_wheel(wheels, "aws-lambda-powertools", "3.0.0", [], {"aws_lambda_powertools/__init__.py": ""})
    make_wheel(wheels, "google-re2", "1.1.20250722", [], {"re2/__init__.py": ""})
    layer = tmp_path / "layer.zip"
    result = _run([command, "package", "layer", "--no-index", "--find-links", str(wheels), "-o", str(layer)])
    assert result.returncode == 0, result.stderr
    with zipfile.ZipFile(layer) as lz, zipfile.ZipFile(_wheel(dist, "serverless_retry")) as wz:
        library = sorted(n for n in wz.namelist() if n.startswith("serverless_retry/"))
        assert (
            sorted(
                n.removeprefix("python/")
                for n in lz.namelist()
                if "/serverless_retry/" in n and "/__pycache__/" not in n  # the layer's bytecode
            )
            == library
        )
        assert "python/re2/__init__.py" in lz.namelist()
