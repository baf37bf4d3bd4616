"""Bytecode in the zip: ``__pycache__/<module>.cpython-3XY.pyc`` beside every ``.py``, compiled by an
interpreter of each target runtime's Python version, so a cold start on Lambda's read-only
``/var/task`` (or ``/opt`` for a layer) compiles nothing: without it, Python compiles every module it
imports at every cold start and cannot keep the result.

A pyc is only valid for the minor version that wrote it (its magic number changes with each), so it
is compiled by an interpreter of that version found on this machine, never by the one running the
build. A version without one gets no bytecode: ``mode`` "auto" says so in the result's warnings,
"require" stops the build, "none" compiles nothing.

Pycs are PEP 552 hash-based and unchecked (``UNCHECKED_HASH``): a timestamp pyc records the source's
mtime, which would make the zip's bytes depend on when the files were written; a hash-based one
records the source's hash instead. Unchecked, the importer neither reads nor hashes the source at
import: a deployed package is read-only and never changes after the build, so a check could never
fail there and would only cost each cold start a read and a hash of every source. (Someone who edits
an unpacked copy by hand must delete its ``__pycache__``; ``python --check-hash-based-pycs always``
checks them regardless.)

Standard library only (scripts/build_package.py imports the bundling modules before the virtualenv
exists).
"""

from __future__ import annotations

import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from serverless_retry_tools.bundling.zips import BundleError

# Where Lambda unpacks a function's code and its layers: the file names a zip's pycs record.
FUNCTION_ROOT = "/var/task"
LAYER_ROOT = "/opt"
MODES = ("auto", "require", "none")
DEFAULT_MODE = "auto"
INVALIDATION = "unchecked-hash"
_TIMEOUT_SECONDS = 600

# Run by the target version's interpreter: what it is, to check it before trusting its pycs.
_PROBE = (
    "import importlib.util, json, platform, sys; print(json.dumps({"
    "'version': '%d.%d' % sys.version_info[:2], 'release': platform.python_version(), "
    "'implementation': sys.implementation.name, 'cache_tag': sys.implementation.cache_tag, "
    "'magic': importlib.util.MAGIC_NUMBER.hex()}))"
)
# Compiles the files listed on stdin ([source, pyc, name shown in tracebacks] under the root argv[1])
# and prints which failed. optimize=0: Lambda runs Python without -O, so it looks for the plain
# ``.cpython-3XY.pyc``; dfile: the path the module will have when deployed, not this build's
# temporary directory, so the bytes do not depend on where the build ran.
_COMPILE = """\
import json, py_compile, sys
root = sys.argv[1]
failed = []
for source, pyc, shown in json.load(sys.stdin):
    try:
        py_compile.compile(root + '/' + source, cfile=root + '/' + pyc, dfile=shown, doraise=True,
                           optimize=0, invalidation_mode=py_compile.PycInvalidationMode.UNCHECKED_HASH)
    except py_compile.PyCompileError as exc:
        failed.append([source, str(exc.exc_value)])
print(json.dumps(failed))
"""


@dataclass(frozen=True)
class Interpreter:
    executable: str
    version: str  # "3.12"
    release: str  # "3.12.1": the compiler's output may change between releases of one version
    cache_tag: str  # "cpython-312"
    magic: bytes  # the first four bytes of every pyc it writes


@dataclass
class Bytecode:
    """What :func:`add_bytecode` did, per target Python version."""

    mode: str
    compiled: dict[str, Interpreter] = field(default_factory=dict)  # version -> who compiled it
    missing: list[str] = field(default_factory=list)  # versions left without bytecode
    files: int = 0  # pycs added
    failed: list[str] = field(default_factory=list)  # sources no target version could compile

    def summary(self) -> str:
        if self.mode == "none":
            return "no bytecode (--bytecode none): cold starts compile every module imported"
        done = ", ".join(
            f"{i.cache_tag} by Python {i.release} ({i.executable})" for _, i in sorted(self.compiled.items())
        )
        missing = ", ".join(f"python{v}" for v in self.missing)
        gaps = f"; none for {missing} (no such Python here)" if missing else ""
        return f"bytecode ({INVALIDATION}): {self.files} files, {done or 'none'}{gaps}"


def _probe(executable: str) -> Interpreter | None:
    try:
        out = subprocess.run(
            [executable, "-I", "-S", "-c", _PROBE], capture_output=True, text=True, timeout=30, check=False
        )
        info = json.loads(out.stdout) if out.returncode == 0 else None
    except (OSError, subprocess.SubprocessError, ValueError):
        return None
    if not isinstance(info, dict) or info.get("implementation") != "cpython":
        return None  # Lambda runs CPython: another implementation's pycs would be ignored
    return Interpreter(
        executable, info["version"], info["release"], info["cache_tag"], bytes.fromhex(info["magic"])
    )


def candidates(version: str) -> list[str]:
    """Where a Python ``version`` ("3.12") may be on this machine: PATH, pyenv's and uv's installs,
    and the interpreter running the build."""
    found = [shutil.which(f"python{version}") or ""]
    pyenv = os.environ.get("PYENV_ROOT") or str(Path.home() / ".pyenv")
    found += sorted(glob.glob(f"{pyenv}/versions/{version}.*/bin/python{version}"), reverse=True)
    uv = os.environ.get("UV_PYTHON_INSTALL_DIR") or str(Path.home() / ".local" / "share" / "uv" / "python")
    found += sorted(glob.glob(f"{uv}/cpython-{version}.*/bin/python{version}"), reverse=True)
    found.append(sys.executable)
    return [c for c in dict.fromkeys(found) if c]


def find_interpreter(version: str) -> Interpreter | None:
    """A CPython of exactly ``version`` that runs, checked by running it (a pyenv shim for a version
    not selected exits non-zero)."""
    for candidate in candidates(version):
        found = _probe(candidate)
        if found is not None and found.version == version:
            return found
    return None


def pyc_name(arc: str, cache_tag: str) -> str:
    """``pkg/mod.py`` -> ``pkg/__pycache__/mod.cpython-312.pyc``, where the importer looks."""
    path = PurePosixPath(arc)
    return str(path.parent / "__pycache__" / f"{path.stem}.{cache_tag}.pyc").removeprefix("./")


def _compile(interpreter: Interpreter, root: Path, jobs: list[list[str]]) -> list[list[str]]:
    # A clean environment (no PYTHONPYCACHEPREFIX, PYTHONPATH, PYTHONOPTIMIZE from the caller's) and
    # a fixed hash seed: a set's iteration order must not reach a frozenset constant's bytes.
    # -P -s -S: the sources being compiled (a user's json.py, say) are not on the path.
    result = subprocess.run(
        [interpreter.executable, "-P", "-s", "-S", "-c", _COMPILE, str(root)],
        input=json.dumps(jobs),
        capture_output=True,
        text=True,
        env={"PYTHONHASHSEED": "0", "PATH": os.environ.get("PATH", "/usr/bin:/bin")},
        timeout=_TIMEOUT_SECONDS,
        check=False,
    )
    if result.returncode != 0:
        raise BundleError(
            f"Python {interpreter.version} ({interpreter.executable}) could not compile the zip's "
            f"modules:\n  {result.stderr.strip()[-800:]}"
        )
    failed: list[list[str]] = json.loads(result.stdout)
    return failed


def add_bytecode(
    entries: dict[str, bytes],
    pythons: Iterable[str],
    *,
    deployed_root: str,
    mode: str = DEFAULT_MODE,
    find: Callable[[str], Interpreter | None] | None = None,
) -> Bytecode:
    """Add to ``entries`` (zip name -> bytes) the pyc of every ``.py`` for each Python version in
    ``pythons``. ``deployed_root`` is where Lambda unpacks the zip ("/var/task" for a function's
    code, "/opt" for a layer), for the file names pycs record. ``find`` replaces
    :func:`find_interpreter` (tests)."""
    if mode not in MODES:
        raise BundleError(f"bytecode mode {mode!r}: one of {', '.join(MODES)}")
    report = Bytecode(mode)
    versions = sorted(set(pythons))
    if mode == "none":
        return report
    finder = find or find_interpreter
    interpreters: dict[str, Interpreter] = {}
    for version in versions:
        found = finder(version)
        if found is None:
            report.missing.append(version)
        else:
            interpreters[version] = found
    if report.missing and mode == "require":
        raise BundleError(
            f"no Python {', '.join(report.missing)} on this machine to compile the zip's bytecode "
            "for that runtime (a pyc is valid only for the Python version that wrote it): install it "
            "(on PATH as python3.X, or with pyenv or uv), or build with --bytecode auto to ship that "
            "runtime's modules as sources only"
        )
    sources = sorted(arc for arc in entries if arc.endswith(".py"))
    if not interpreters or not sources:
        return report
    failed: dict[str, set[str]] = {}
    with tempfile.TemporaryDirectory(prefix="serverless-retry-bytecode-") as tmp:
        root = Path(tmp)
        for arc in sources:
            path = root / arc
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(entries[arc])
        jobs = {
            v: [[arc, pyc_name(arc, i.cache_tag), f"{deployed_root}/{arc}"] for arc in sources]
            for v, i in interpreters.items()
        }
        # One interpreter per version, side by side: each is one process compiling the same files.
        with ThreadPoolExecutor(len(interpreters)) as pool:
            futures = {v: pool.submit(_compile, i, root, jobs[v]) for v, i in interpreters.items()}
            results = {v: f.result() for v, f in futures.items()}
        for version, interpreter in sorted(interpreters.items()):
            for source, _ in results[version]:
                failed.setdefault(source, set()).add(version)
            for source, pyc, _ in jobs[version]:
                target = root / pyc
                if source in failed and version in failed[source]:
                    continue
                data = target.read_bytes()
                if data[:4] != interpreter.magic:  # never ship a pyc the runtime would reject
                    raise BundleError(
                        f"{pyc}: written with the wrong magic number by {interpreter.executable}"
                    )
                if pyc in entries:
                    raise BundleError(f"duplicate zip entry {pyc}: a compiled file is already in the zip")
                entries[pyc] = data
                report.files += 1
            report.compiled[version] = interpreter
    report.failed = sorted(f"{source} (Python {', '.join(sorted(v))})" for source, v in failed.items())
    return report


def warnings_of(report: Bytecode) -> list[str]:
    """What to tell the person building: runtimes left without bytecode, files that did not compile."""
    out = []
    for version in report.missing:
        out.append(
            f"no Python {version} on this machine: the zip carries no bytecode for python{version}, whose cold "
            f"starts will compile every module imported; install Python {version} (python{version} on "
            "PATH, or with pyenv or uv) and build again, or pass --bytecode require to make this an error"
        )
    if report.failed:
        out.append(
            f"{len(report.failed)} file(s) do not compile and carry no bytecode: "
            + ", ".join(report.failed[:5])
            + (" ..." if len(report.failed) > 5 else "")
        )
    return out
