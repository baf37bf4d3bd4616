"""A code tree built for another machine than this host's: which compiled modules are foreign, what
the emulator substitutes (the host's build of exactly those distributions) and what it only reports
(code that would not load on the function's declared architecture on AWS either)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from serverless_retry_tools.local.runtime import architectures
from serverless_retry_tools.local.runtime.architectures import Distribution, elf_machine, plan, scan
from serverless_retry_tools.local.runtime.complete_trees import COMPLETE
from serverless_retry_tools.local.runtime.functions import FunctionConfig
from serverless_retry_tools.local.runtime.host_builds import HostBuildError, host_build, runnable

ELF = {"x86_64": 62, "aarch64": 183}


def _elf(machine: str) -> bytes:
    # An ELF header's first 20 bytes (64-bit, little-endian, e_type ET_DYN) and some padding.
    return (
        b"\x7fELF\x02\x01\x01"
        + b"\0" * 9
        + (3).to_bytes(2, "little")
        + ELF[machine].to_bytes(2, "little")
        + b"\0" * 44
    )


def _write(root: Path, files: dict[str, str | bytes]) -> Path:
    for name, content in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content)
    return root


def _re2(machines: tuple[str, ...], prefix: str = "", version: str = "1.1.1") -> dict[str, str | bytes]:
    """google-re2 as `serverless-retry package` leaves it in a zip: no RECORD, top_level.txt kept."""
    info = f"{prefix}google_re2-{version}.dist-info"
    files: dict[str, str | bytes] = {
        f"{prefix}re2/__init__.py": "from . import _re2\n",
        f"{info}/METADATA": f"Metadata-Version: 2.1\nName: google-re2\nVersion: {version}\n",
        f"{info}/WHEEL": "Wheel-Version: 1.0\nRoot-Is-Purelib: false\n"
        + "".join(f"Tag: cp312-cp312-manylinux_2_28_{m}\n" for m in machines),
        f"{info}/top_level.txt": "re2\n",
    }
    for machine in machines:
        files[f"{prefix}re2/_re2.cpython-312-{machine}-linux-gnu.so"] = _elf(machine)
    return files


PURE = {
    "app.py": "def handler(event, context):\n    return 1\n",
    "purelib/__init__.py": "X = 1\n",
    "purelib-2.0.dist-info/METADATA": "Metadata-Version: 2.1\nName: purelib\nVersion: 2.0\n",
    "purelib-2.0.dist-info/WHEEL": "Wheel-Version: 1.0\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
}


def test_the_machine_of_an_extension_comes_from_its_elf_header_else_its_name(tmp_path: Path) -> None:
    _write(tmp_path, {"a.so": _elf("aarch64"), "b.cpython-312-x86_64-linux-gnu.so": b"not elf", "c.so": b"?"})
    # The header wins over a file name that says otherwise.
    _write(tmp_path, {"d.cpython-312-x86_64-linux-gnu.so": _elf("aarch64")})
    assert elf_machine(tmp_path / "a.so") == "aarch64"
    assert elf_machine(tmp_path / "b.cpython-312-x86_64-linux-gnu.so") == "x86_64"
    assert elf_machine(tmp_path / "c.so") is None
    assert elf_machine(tmp_path / "d.cpython-312-x86_64-linux-gnu.so") == "aarch64"


def test_an_arm64_zip_on_x86_64_substitutes_its_compiled_distribution_only(tmp_path: Path) -> None:
    tree = _write(tmp_path / "code", {**PURE, **_re2(("aarch64",))})
    modules = scan(tree)
    assert [(m.name, set(m.machines), m.owner and m.owner.label) for m in modules] == [
        ("re2/_re2", {"aarch64"}, "google-re2 1.1.1")
    ]
    decided = plan(modules, declared="aarch64", host="x86_64", where="the zip")
    assert [d.label for d in decided.substitute] == ["google-re2 1.1.1"]
    assert decided.notes == ()
    assert decided.substitute[0].tags == ("cp312-cp312-manylinux_2_28_aarch64",)


def test_nothing_is_substituted_when_the_host_build_is_there_or_aws_would_fail_too(tmp_path: Path) -> None:
    # A zip for both machines (scripts/build_package.py's): the host's build sits beside the other.
    both = scan(_write(tmp_path / "both", {**PURE, **_re2(("aarch64", "x86_64"))}))
    assert plan(both, declared="aarch64", host="x86_64", where="z") == plan(
        both, declared="x86_64", host="x86_64", where="z"
    )
    assert plan(both, declared="aarch64", host="x86_64", where="z").substitute == ()
    assert plan(both, declared="aarch64", host="x86_64", where="z").notes == ()
    # An arm64 zip on a function declared x86_64: AWS could not load it; neither substitution nor
    # silence, a note naming the distribution.
    arm = scan(_write(tmp_path / "arm", _re2(("aarch64",))))
    wrong = plan(arm, declared="x86_64", host="x86_64", where="function f's zip")
    assert wrong.substitute == ()
    assert wrong.notes == (
        "function f's zip: google-re2 1.1.1's compiled module re2/_re2 is built for aarch64 only but "
        "the function declares x86_64: on AWS it would not load",
    )
    # An x86_64 zip on a function declared arm64: it loads here, AWS would refuse it.
    x86 = scan(_write(tmp_path / "x86", _re2(("x86_64",))))
    (note,) = plan(x86, declared="aarch64", host="x86_64", where="z").notes
    assert note.endswith("declares aarch64: on AWS it would not load (it loads here, on this host)")


def test_an_extension_no_dist_info_names_is_reported_not_guessed(tmp_path: Path) -> None:
    tree = _write(tmp_path, {"vendored/_fast.cpython-312-aarch64-linux-gnu.so": _elf("aarch64")})
    decided = plan(scan(tree), declared="aarch64", host="x86_64", where="z")
    assert decided.substitute == ()
    assert decided.notes == (
        "z: compiled module vendored/_fast is built for aarch64, not for this host (x86_64), and no "
        ".dist-info names it: the emulator cannot supply a host build",
    )


def test_a_layers_site_directories_are_scanned(tmp_path: Path) -> None:
    site = "python/lib/python3.12/site-packages/"
    tree = _write(tmp_path, {**_re2(("aarch64",), prefix=site), "python/helper.py": "X = 1\n"})
    (module,) = scan(tree, ("python", site.rstrip("/")))
    assert module.name == f"{site}re2/_re2"
    assert module.owner is not None
    assert module.owner.site == site.rstrip("/")


def _host_cache(cache: Path, version: str = "1.1.1") -> Path:
    """A finished host build, as host_build leaves it (so no pip runs)."""
    build = _write(
        cache / f"google_re2-{version}-py3.12-x86_64",
        {
            "re2/__init__.py": "from . import _re2  # host\n",
            "re2/_re2.cpython-312-x86_64-linux-gnu.so": _elf("x86_64"),
            f"google_re2-{version}.dist-info/METADATA": f"Name: google-re2\nVersion: {version}\n",
            f"google_re2-{version}.dist-info/RECORD": "re2/__init__.py,,\n",
            "bin/nothing": "",
        },
    )
    (build / COMPLETE).write_text("google-re2==1.1.1")
    return build


def test_the_substituted_tree_holds_the_host_build_and_the_rest_as_deployed(tmp_path: Path) -> None:
    tree = _write(tmp_path / "code" / "digest", {**PURE, **_re2(("aarch64",))})
    (tree / COMPLETE).write_text("sha")
    cache = tmp_path / "cache"
    _host_cache(cache)
    common = {"declared": "aarch64", "host": "x86_64", "python": "/no/such/python", "python_version": "3.12"}
    result = runnable(tree, (".",), where="function f's zip", cache=cache, **common)  # type: ignore[arg-type]
    assert result.path != tree
    assert result.path.parent == tree.parent
    assert result.summary == (
        "emulator: function f's zip holds compiled code for arm64 (aarch64), as the function declares, and this "
        "host is x86_64: running this host's build of google-re2 1.1.1 in place of the aarch64 one, as "
        "Lambda on arm64 would load that; the rest of the code runs as deployed"
    )
    files = sorted(str(p.relative_to(result.path)) for p in result.path.rglob("*") if p.is_file())
    assert "re2/_re2.cpython-312-x86_64-linux-gnu.so" in files
    assert "re2/_re2.cpython-312-aarch64-linux-gnu.so" not in files
    assert "bin/nothing" not in files
    assert (result.path / "re2/__init__.py").read_text().endswith("# host\n")
    for name in ("app.py", "purelib/__init__.py", "purelib-2.0.dist-info/WHEEL"):  # untouched
        assert (result.path / name).read_bytes() == (tree / name).read_bytes()
    # The unpacked code is left as deployed, and the substituted tree is made once.
    assert (tree / "re2/_re2.cpython-312-aarch64-linux-gnu.so").exists()
    assert not (tree / "re2/_re2.cpython-312-x86_64-linux-gnu.so").exists()
    again = runnable(tree, (".",), where="function f's zip", cache=cache, **common)  # type: ignore[arg-type]
    assert again.path == result.path
    assert (result.path / COMPLETE).read_text() == "google-re2 1.1.1"


def test_without_a_host_build_the_code_runs_as_deployed_and_the_reason_is_given(tmp_path: Path) -> None:
    tree = _write(tmp_path / "code", _re2(("aarch64",)))
    result = runnable(
        tree, (".",), declared="aarch64", host="x86_64", python="/no/such/python", python_version="3.12",
        where="function f's zip", cache=tmp_path / "cache",
    )  # fmt: skip
    assert result.path == tree
    assert result.summary == ""
    (note,) = result.notes
    assert note.startswith(
        "function f's zip holds compiled code for aarch64 and this host is x86_64: could not get this host's build "
        "of google-re2 1.1.1 (pip install google-re2==1.1.1 for Python 3.12: "
    )
    assert note.endswith("running it as deployed, where those compiled modules cannot load")


def test_pip_without_a_package_index_fails_fast_with_its_reason(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # No index at all: a closed port, no pip configuration (no find-links), no cache.
    monkeypatch.setenv("PIP_CONFIG_FILE", os.devnull)
    monkeypatch.setenv("PIP_INDEX_URL", "http://127.0.0.1:9/simple")
    monkeypatch.setenv("PIP_NO_CACHE_DIR", "1")
    monkeypatch.delenv("PIP_FIND_LINKS", raising=False)
    dist = Distribution("google-re2", "1.1.1", ".", "google_re2-1.1.1.dist-info", (), ("re2",))
    started = time.monotonic()
    with pytest.raises(
        HostBuildError,
        match=r"pip install google-re2==1\.1\.1 for Python 3\.11: ERROR: (Could not find|No matching)",
    ):
        host_build(dist, python=sys.executable, python_version="3.11", machine="x86_64", root=tmp_path)
    assert time.monotonic() - started < 60
    assert not [p for p in tmp_path.iterdir() if p.is_dir()]  # no half-built directory left


def test_the_declared_architecture_comes_from_get_function(monkeypatch: pytest.MonkeyPatch) -> None:
    base = {"FunctionName": "f", "FunctionArn": "arn:aws:lambda:us-east-1:123456789012:function:f"}
    assert FunctionConfig.from_get_function({"Configuration": base}).architectures == ("x86_64",)
    arm = FunctionConfig.from_get_function({"Configuration": {**base, "Architectures": ["arm64"]}})
    assert architectures.declared_machine(arm.architectures) == "aarch64"
    monkeypatch.setattr(architectures.platform, "machine", lambda: "arm64")  # macOS's name
    assert architectures.host_machine() == "aarch64"


def test_a_substituted_extension_really_loads_on_this_host(tmp_path: Path) -> None:
    """With this environment's google-re2 standing in for a host build: the worker's import of
    ``re2`` from the substituted tree works, where the foreign tree's fails."""
    re2 = pytest.importorskip("re2")
    source = Path(re2.__file__).parent
    (extension,) = [p for p in source.iterdir() if p.name.startswith("_re2.") and p.suffix == ".so"]
    tag = f"{sys.version_info[0]}.{sys.version_info[1]}"
    host = architectures.host_machine()
    foreign = "aarch64" if host == "x86_64" else "x86_64"
    tree = _write(tmp_path / "code", {**_re2((foreign,))})
    build = _write(
        tmp_path / "cache" / f"google_re2-1.1.1-py{tag}-{host}",
        {"re2/__init__.py": (source / "__init__.py").read_text()},
    )
    (build / "re2" / extension.name).write_bytes(extension.read_bytes())
    (build / COMPLETE).write_text("x")
    probe = [
        sys.executable,
        "-I",
        "-S",
        "-c",
        "import sys; sys.path.insert(0, '.'); import re2; print(re2.search('b+', 'abbc').group(0))",
    ]
    failed = subprocess.run(probe, cwd=tree, capture_output=True, text=True, timeout=30, check=False)
    assert failed.returncode != 0
    assert "_re2" in failed.stderr
    result = runnable(
        tree, (".",), declared=foreign, host=host, python=sys.executable, python_version=tag,
        where="z", cache=tmp_path / "cache",
    )  # fmt: skip
    ran = subprocess.run(probe, cwd=result.path, capture_output=True, text=True, timeout=30, check=False)
    assert (ran.returncode, ran.stdout.strip()) == (0, "bb"), ran.stderr


def test_a_layer_is_substituted_in_its_own_site_directory(tmp_path: Path) -> None:
    site = "python/lib/python3.12/site-packages"
    opt = _write(
        tmp_path / "layers" / "opt-1",
        {**_re2(("aarch64",), prefix=f"{site}/"), "python/helper.py": "X = 1\n"},
    )
    cache = tmp_path / "cache"
    _host_cache(cache)
    result = runnable(
        opt, ("python", site), declared="aarch64", host="x86_64", python="/no/such/python",
        python_version="3.12", where="function f's layers", cache=cache,
    )  # fmt: skip
    assert result.summary.startswith("emulator: function f's layers holds compiled code for arm64 (aarch64)")
    assert (result.path / site / "re2/_re2.cpython-312-x86_64-linux-gnu.so").exists()
    assert not (result.path / site / "re2/_re2.cpython-312-aarch64-linux-gnu.so").exists()
    assert not (result.path / "python" / "re2").exists()  # put where the layer had it, nowhere else
    assert (result.path / "python/helper.py").read_text() == "X = 1\n"
