"""dist/serverless-retry.zip is reproducible and holds what the Lambda runtime needs, nothing more."""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import threading
import time
import zipfile
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from types import ModuleType

import pytest
from serverless_retry_tools.bundling import installs, zips
from serverless_retry_tools.bundling.targets import Target, platform_tags

from tests.support.scripts import load_script

ROOT = Path(__file__).resolve().parents[2]


def _builder() -> ModuleType:
    return load_script("build_package")


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
    # Bytecode only where the importer looks, one per runtime Python (tests/unit/test_bundle_bytecode.py
    # checks each against its source): no stray caches of the build machine's.
    assert not [n for n in names if n.endswith(".pyc") and "/__pycache__/" not in f"/{n}"]
    assert not [n for n in names if "__pycache__" in n and not re.search(r"\.cpython-31[123]\.pyc$", n)]
    assert "serverless_retry/handlers/consumer.py" in names
    assert "serverless_retry/py.typed" in names
    assert "aws_lambda_powertools/__init__.py" in names
    # boto3 and botocore come from the Lambda runtime: bundling them would pin a stale SDK.
    assert not [n for n in names if n.startswith(("boto3/", "botocore/"))]


def test_zip_holds_only_what_runs_in_lambda(two_builds: tuple[Path, Path]) -> None:
    """The deployed package is the Lambda code and its pinned runtime dependencies: no dev tools (the
    local emulator, the CLI, moto), no tests. Every top-level entry is accounted for here: ours, a
    pinned distribution's metadata, or a module that distribution declares in its top_level.txt."""
    with zipfile.ZipFile(two_builds[0]) as archive:
        names = archive.namelist()
        declared = {
            module.strip()
            for name in names
            if name.endswith(".dist-info/top_level.txt")
            for module in archive.read(name).decode().splitlines()
            if module.strip()
        }
    top = {name.split("/", 1)[0] for name in names} - {"__pycache__"}  # top-level modules' bytecode
    pinned = {
        line.split("==")[0].strip().lower().replace("-", "_")
        for line in (ROOT / "requirements" / "runtime.txt").read_text().splitlines()
        if line.strip() and not line.startswith("#")
    }
    allowed_prefixes = ("serverless_retry", *pinned)
    unexpected = sorted(
        t for t in top if not t.lower().startswith(allowed_prefixes) and t.removesuffix(".py") not in declared
    )
    assert unexpected == []
    assert "re2" in declared  # google-re2's module
    assert not [n for n in top if n.startswith(("serverless_retry_tools", "moto", "tests"))]
    ours = sorted(n for n in names if n.startswith("serverless_retry/") and "/__pycache__/" not in n)
    shipped = sorted(
        "serverless_retry/" + p.relative_to(ROOT / "lambda_src" / "serverless_retry").as_posix()
        for p in (ROOT / "lambda_src" / "serverless_retry").rglob("*")
        if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".pyc"
    )
    assert ours == shipped
    assert not [n for n in ours if "/local/" in n or n.endswith("/cli.py")]


# Lambda's architectures by ELF e_machine: arm64 is EM_AARCH64 (183), x86_64 is EM_X86_64 (62).
ELF_MACHINE = {"aarch64": 183, "x86_64": 62}
RUNTIMES = ("311", "312", "313")


def test_zip_holds_the_re2_extension_for_every_runtime_and_architecture(
    two_builds: tuple[Path, Path],
) -> None:
    """One zip for python3.11/3.12/3.13 on arm64 and x86_64: each combination finds its own compiled
    RE2 extension, built for the right processor."""
    with zipfile.ZipFile(two_builds[0]) as archive:
        names = set(archive.namelist())
        for version in RUNTIMES:
            for arch, machine in ELF_MACHINE.items():
                name = f"re2/_re2.cpython-{version}-{arch}-linux-gnu.so"
                assert name in names
                header = archive.read(name)[:20]
                assert header[:4] == b"\x7fELF"
                assert int.from_bytes(header[18:20], "little") == machine, name
        extensions = sorted(n for n in names if n.endswith(".so"))
        assert len(extensions) == len(RUNTIMES) * len(ELF_MACHINE)  # nothing else is compiled
        wheel = archive.read("google_re2-1.1.20250722.dist-info/WHEEL").decode()
    assert "RECORD" not in " ".join(names)  # pip's per-install manifests stay out of the merged tree
    for version in RUNTIMES:
        for arch in ELF_MACHINE:
            assert f"cp{version}-cp{version}-manylinux_2_24_{arch}" in wheel


def _interpreter(version: str) -> str | None:
    """A working ``python<version>``: on PATH, or one of pyenv's installs."""
    pyenv = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv")) / "versions"
    candidates = [
        shutil.which(f"python{version}"),
        *sorted(map(str, pyenv.glob(f"{version}.*/bin/python{version}"))),
    ]
    for candidate in candidates:
        if candidate is None:
            continue
        probe = subprocess.run([candidate, "--version"], capture_output=True, text=True, check=False)
        if probe.returncode == 0:
            return candidate
    return None


@pytest.mark.parametrize("version", ["3.11", "3.12", "3.13"])
def test_the_zips_re2_imports_and_matches_in_linear_time_on_each_python(
    two_builds: tuple[Path, Path], tmp_path: Path, version: str
) -> None:
    """The x86_64 variants run here: each Python imports re2 from the unpacked zip alone (-I -S: no
    site-packages) and matches a pattern that backtracking engines take exponential time on."""
    python = _interpreter(version)
    if python is None:
        pytest.skip(f"python{version} is not installed here")
    with zipfile.ZipFile(two_builds[0]) as archive:
        archive.extractall(tmp_path)
    script = (
        "import sys; sys.path.insert(0, sys.argv[1]); import re2; "
        "assert re2.__file__.startswith(sys.argv[1]), re2.__file__; "
        "print(re2.compile('(a+)+$').search('a' * 100000 + '!') is None)"
    )
    result = subprocess.run(
        [python, "-I", "-S", "-c", script, str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "True"


def test_conflicting_files_between_installs_stop_the_build(tmp_path: Path) -> None:
    one, two = tmp_path / "one", tmp_path / "two"
    for base, text in ((one, "a = 1\n"), (two, "a = 2\n")):
        (base / "pkg").mkdir(parents=True)
        (base / "pkg" / "__init__.py").write_text("")
        (base / "pkg" / "mod.py").write_text(text)
    with pytest.raises(zips.BundleError, match=r"conflicting zip entry pkg/mod.py: one and two"):
        zips.merge_installs({"one": zips.iter_files(one), "two": zips.iter_files(two)})
    (two / "pkg" / "mod.py").write_text("a = 1\n")
    (two / "pkg" / "_ext.cpython-312-aarch64-linux-gnu.so").write_bytes(b"\x7fELF")
    merged = zips.merge_installs({"one": zips.iter_files(one), "two": zips.iter_files(two)})
    assert sorted(merged) == ["pkg/__init__.py", "pkg/_ext.cpython-312-aarch64-linux-gnu.so", "pkg/mod.py"]


def test_wheel_metadata_merges_only_its_tag_lines() -> None:
    a = b"Wheel-Version: 1.0\nRoot-Is-Purelib: false\nTag: cp312-cp312-x\n\n"
    b = b"Wheel-Version: 1.0\nRoot-Is-Purelib: false\nTag: cp313-cp313-y\n\n"
    merged = zips.merge_wheel_metadata("d.dist-info/WHEEL", a, b)
    assert merged == b"Wheel-Version: 1.0\nRoot-Is-Purelib: false\nTag: cp312-cp312-x\nTag: cp313-cp313-y\n"
    with pytest.raises(zips.BundleError, match="beyond their Tag lines"):
        zips.merge_wheel_metadata("d.dist-info/WHEEL", a, b.replace(b"false", b"true"))


def test_platform_tags_cover_every_manylinux_the_os_loads() -> None:
    tags = platform_tags("x86_64", 26)
    assert tags[0] == "manylinux_2_26_x86_64"
    assert "manylinux_2_24_x86_64" in tags
    assert "manylinux_2_27_x86_64" not in tags  # python3.11's Amazon Linux 2 has glibc 2.26
    assert tags[-1] == "manylinux2014_x86_64"


def test_builds_writing_one_zip_at_once_each_leave_a_whole_zip(tmp_path: Path) -> None:
    """Two ./build.sh runs in one checkout write the same dist/*.zip: each renames a temporary file of
    its own over it (a shared temporary name lost one build's rename, or mixed the two)."""
    out = tmp_path / "serverless-retry.zip"
    payloads = [{f"m{n}/{i}.py": os.urandom(64 * 1024) for i in range(24)} for n in range(6)]
    barrier = threading.Barrier(len(payloads))

    def write(entries: dict[str, bytes]) -> None:
        for _ in range(3):
            barrier.wait(timeout=30)
            zips.write_zip(entries, out)

    with ThreadPoolExecutor(len(payloads)) as pool:
        for future in [pool.submit(write, entries) for entries in payloads]:
            future.result(timeout=60)
    with zipfile.ZipFile(out) as zf:
        assert zf.testzip() is None
        written = {name: zf.read(name) for name in zf.namelist()}
    assert written in payloads
    assert os.stat(out).st_mode & 0o777 == 0o644
    assert [p.name for p in tmp_path.iterdir()] == [out.name]  # no temporary file left behind


def _fake_pip(calls: list[str], fail: bool = False) -> Callable[..., None]:
    def run(argv: list[str], check: bool) -> None:
        target = Path(argv[argv.index("--target") + 1])
        calls.append(target.name)
        for i in range(20):  # written slowly, file by file, as pip does
            (target / "pkg").mkdir(parents=True, exist_ok=True)
            (target / "pkg" / f"m{i}.py").write_text(f"x = {i}\n")
            time.sleep(0.002)
        if fail:
            raise subprocess.CalledProcessError(1, argv)

    return run


def test_builds_installing_one_runtime_at_once_share_a_whole_install(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each build installs into a directory of its own and renames it into place: with one target
    directory, a second build's rmtree ran under the first one's pip."""
    requirements = tmp_path / "runtime.txt"
    requirements.write_text("pkg==1\n")
    calls: list[str] = []
    monkeypatch.setattr(installs.subprocess, "run", _fake_pip(calls))
    barrier = threading.Barrier(4)

    def install() -> Path:
        barrier.wait(timeout=30)
        return Path(installs.install_pinned(requirements, tmp_path / "cache", Target("3.12", "x86_64")))

    with ThreadPoolExecutor(4) as pool:
        targets = {f.result(timeout=60) for f in [pool.submit(install) for _ in range(4)]}
    (target,) = targets
    assert (target / ".complete").exists()
    assert sorted(p.name for p in (target / "pkg").iterdir()) == sorted(f"m{i}.py" for i in range(20))
    assert [p.name for p in target.parent.iterdir()] == [target.name]  # no staging directory left
    # Once complete, a later build installs nothing.
    before = len(calls)
    assert installs.install_pinned(requirements, tmp_path / "cache", Target("3.12", "x86_64")) == target
    assert len(calls) == before


def test_a_failed_install_leaves_nothing_a_later_build_would_trust(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    requirements = tmp_path / "runtime.txt"
    requirements.write_text("pkg==1\n")
    monkeypatch.setattr(installs.subprocess, "run", _fake_pip([], fail=True))
    with pytest.raises(subprocess.CalledProcessError):
        installs.install_pinned(requirements, tmp_path / "cache", Target("3.11", "aarch64"))
    (deps,) = (tmp_path / "cache").iterdir()
    assert list(deps.iterdir()) == []


def test_the_layer_zip_holds_the_function_zips_files_under_python(
    two_builds: tuple[Path, Path], tmp_path: Path
) -> None:
    """The release's layer: the same library and pinned dependencies, where a Python runtime finds a
    layer's packages (/opt/python)."""
    layer = tmp_path / "layer.zip"
    _builder().build(layer, [], layer=True)
    with zipfile.ZipFile(layer) as lz, zipfile.ZipFile(two_builds[0]) as fz:
        assert all(name.startswith("python/") for name in lz.namelist())
        assert [n.removeprefix("python/") for n in lz.namelist()] == fz.namelist()
        assert lz.read("python/serverless_retry/__init__.py") == fz.read("serverless_retry/__init__.py")
