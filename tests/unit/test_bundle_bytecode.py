"""Bytecode in the function zip and the layer: every module carries a pyc for each runtime's Python,
written by an interpreter of that version, that Lambda's importer uses as it is (nothing compiled at a
cold start), and the zips stay byte-for-byte reproducible. Also: what is built by default is what the
modules deploy by default."""

from __future__ import annotations

import hashlib
import json
import re
import subprocess
import sys
import zipfile
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import pytest
from serverless_retry_tools.bundling import bytecode
from serverless_retry_tools.bundling.bytecode import Interpreter, add_bytecode, find_interpreter, pyc_name
from serverless_retry_tools.bundling.targets import ARCHITECTURES, DEFAULT_ARCH, DEFAULT_PYTHON, RUNTIMES
from serverless_retry_tools.bundling.zips import BundleError

from tests.support.scripts import load_script

ROOT = Path(__file__).resolve().parents[2]
HERE = f"{sys.version_info[0]}.{sys.version_info[1]}"
AVAILABLE = {v: found for v in RUNTIMES if (found := find_interpreter(v)) is not None}

# Run by each runtime's Python on the unpacked zip: the code of every module, as the importer gets it
# (SourceFileLoader.get_code: the pyc when it is valid, else a compile), counting the compiles. With
# --check-hash-based-pycs always the importer also hashes each source against its pyc.
LOADS = """\
import importlib.machinery as m, json, sys
root, names = sys.argv[1], json.loads(sys.argv[2])
compiled = []
real = m.SourceFileLoader.source_to_code
def counting(self, data, path, *a, **k):
    compiled.append(path)
    return real(self, data, path, *a, **k)
m.SourceFileLoader.source_to_code = counting
for name in names:
    m.SourceFileLoader(name, root + '/' + name).get_code(name)
print(json.dumps(compiled))
"""


def _builder() -> ModuleType:
    return load_script("build_package")


@pytest.fixture(scope="module")
def zips(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The function zip twice and the layer zip twice, with bytecode for every Python found here."""
    out = tmp_path_factory.mktemp("bytecode")
    builder = _builder()
    built = {}
    for name, layer in (
        ("function", False),
        ("function-again", False),
        ("layer", True),
        ("layer-again", True),
    ):
        built[name] = out / f"{name}.zip"
        builder.build(built[name], [ROOT / "examples" / "scheduled-retry" / "src" / "orders_example"], layer)
    return built


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_function_and_layer_zips_with_bytecode_are_reproducible(zips: dict[str, Path]) -> None:
    assert _sha(zips["function"]) == _sha(zips["function-again"])
    assert _sha(zips["layer"]) == _sha(zips["layer-again"])


@pytest.mark.parametrize("kind", ["function", "layer"])
def test_every_module_has_its_pyc_for_each_runtime_and_nothing_else_is_compiled(
    zips: dict[str, Path], kind: str
) -> None:
    with zipfile.ZipFile(zips[kind]) as zf:
        infos = {i.filename: i for i in zf.infolist()}
        sources = sorted(n for n in infos if n.endswith(".py"))
        pycs = {n for n in infos if n.endswith(".pyc")}
        expected = {pyc_name(s, f"cpython-{v.replace('.', '')}") for s in sources for v in AVAILABLE}
        assert pycs == expected
        for name in sorted(pycs):
            info = infos[name]
            assert info.date_time == (1980, 1, 1, 0, 0, 0)
            assert info.external_attr >> 16 == 0o644
            version = re.search(r"\.cpython-3(\d+)\.pyc$", name)
            assert version is not None
            header = zf.read(name)[:8]
            assert header[:4] == AVAILABLE[f"3.{version.group(1)}"].magic, name
            assert int.from_bytes(header[4:8], "little") == 0b01, name  # hash-based, unchecked (PEP 552)
    ours = [s for s in sources if "serverless_retry/" in s or "orders_example/" in s]
    assert len(ours) > 40  # the package and the example's processor, all of them compiled
    assert any(s.startswith(("aws_lambda_powertools/", "python/aws_lambda_powertools/")) for s in sources)


@pytest.mark.parametrize("version", sorted(RUNTIMES))
@pytest.mark.parametrize("check", ["default", "always"])
def test_each_runtimes_python_loads_every_module_from_its_pyc_compiling_nothing(
    zips: dict[str, Path], tmp_path: Path, version: str, check: str
) -> None:
    """As on a read-only /var/task: the importer of that Python takes each module's code from the
    zip's pyc; with every hash checked against its source (``always``) the pycs still all hold."""
    if version not in AVAILABLE:
        pytest.skip(f"no Python {version} on this machine: the zip carries no bytecode for it")
    with zipfile.ZipFile(zips["function"]) as zf:
        zf.extractall(tmp_path)
        sources = sorted(n for n in zf.namelist() if n.endswith(".py"))
    argv = [AVAILABLE[version].executable, "-I", "-S", "-B", "--check-hash-based-pycs", check, "-c", LOADS]
    result = subprocess.run(
        [*argv, str(tmp_path), json.dumps(sources)], capture_output=True, text=True, timeout=120, check=False
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == []
    assert len(sources) > 300


def _fake(found: dict[str, Interpreter]) -> Callable[[str], Interpreter | None]:
    return found.get


HERE_INTERPRETER = find_interpreter(HERE)


def _here() -> Interpreter:
    assert HERE_INTERPRETER is not None
    return HERE_INTERPRETER


def test_a_runtime_without_its_python_gets_no_bytecode_and_a_warning() -> None:
    entries = {"app.py": b"x = 1\n", "pkg/__init__.py": b""}
    report = add_bytecode(entries, [HERE, "3.99"], deployed_root="/var/task", find=_fake({HERE: _here()}))
    tag = _here().cache_tag
    assert sorted(entries) == sorted(
        ["app.py", "pkg/__init__.py", f"__pycache__/app.{tag}.pyc", f"pkg/__pycache__/__init__.{tag}.pyc"]
    )
    assert report.missing == ["3.99"]
    (warning,) = bytecode.warnings_of(report)
    assert "no Python 3.99 on this machine: the zip carries no bytecode for python3.99" in warning


def test_bytecode_asked_for_without_the_runtimes_python_stops_the_build() -> None:
    entries = {"app.py": b"x = 1\n"}
    with pytest.raises(BundleError, match=r"no Python 3\.99 on this machine to compile the zip's bytecode"):
        add_bytecode(
            entries, [HERE, "3.99"], deployed_root="/var/task", mode="require", find=_fake({HERE: _here()})
        )
    assert entries == {"app.py": b"x = 1\n"}


def test_none_ships_sources_only() -> None:
    entries = {"app.py": b"x = 1\n"}
    report = add_bytecode(entries, [HERE], deployed_root="/var/task", mode="none")
    assert entries == {"app.py": b"x = 1\n"}
    assert report.files == 0


def test_an_interpreter_writing_another_versions_pycs_is_refused() -> None:
    """A pyc whose magic number is not the runtime's would be rejected by Lambda's Python: never
    shipped."""
    liar = Interpreter(_here().executable, "3.13", "3.13.0", "cpython-313", b"\x00\x00\r\n")
    with pytest.raises(BundleError, match="wrong magic number"):
        add_bytecode({"app.py": b"x = 1\n"}, ["3.13"], deployed_root="/var/task", find=_fake({"3.13": liar}))


def test_a_source_that_does_not_compile_ships_without_bytecode_and_is_named() -> None:
    entries = {"good.py": b"x = 1\n", "bad.py": b"def (:\n"}
    report = add_bytecode(entries, [HERE], deployed_root="/var/task", find=_fake({HERE: _here()}))
    assert sorted(entries) == sorted(["bad.py", f"__pycache__/good.{_here().cache_tag}.pyc", "good.py"])
    assert report.failed == [f"bad.py (Python {HERE})"]
    assert "bad.py" in bytecode.warnings_of(report)[0]


def test_pycs_record_the_deployed_path_not_the_builds() -> None:
    """Tracebacks name /var/task/...; and the bytes do not depend on the build's temporary directory."""
    first = {"pkg/mod.py": b"def f():\n    raise ValueError\n"}
    second = dict(first)
    add_bytecode(first, [HERE], deployed_root="/var/task", find=_fake({HERE: _here()}))
    add_bytecode(second, [HERE], deployed_root="/var/task", find=_fake({HERE: _here()}))
    name = f"pkg/__pycache__/mod.{_here().cache_tag}.pyc"
    assert first[name] == second[name]
    assert b"/var/task/pkg/mod.py" in first[name]
    assert b"serverless-retry-bytecode" not in first[name]


def _tf_default(module: str, variable: str) -> object:
    text = (ROOT / "modules" / module / "variables.tf").read_text()
    block = re.search(rf'variable "{variable}" \{{(.*?)\n\}}', text, re.S)
    assert block is not None, f"{variable} in modules/{module}/variables.tf"
    default = re.search(r"^\s*default\s*=\s*(.+)$", block.group(1), re.M)
    assert default is not None
    return json.loads(default.group(1))


def test_the_package_default_is_the_modules_default_architecture_and_runtime() -> None:
    """A zip built with no --arch/--python runs on a consumer deployed with the module's defaults."""
    assert _tf_default("consumer", "architectures") == [DEFAULT_ARCH]
    assert DEFAULT_ARCH in ARCHITECTURES
    assert _tf_default("consumer", "runtime") == f"python{DEFAULT_PYTHON}"
