"""The Python a local function runs on: its Lambda runtime's version, with only what that runtime
provides besides the deployed zip.

A function declaring ``Runtime: python3.12`` runs on a Python 3.12 found on this machine (on PATH,
or under pyenv's versions), started with ``-I -S`` so nothing of any environment leaks in, plus one
directory of what the Lambda Python runtime brings: boto3 and botocore (and their dependencies),
installed once per interpreter version with that interpreter's pip into ``build/lambda-python/``
of the checkout (``~/.cache/serverless-retry/lambda-python`` outside one) and reused. The dev
virtualenv's site-packages (moto, pytest, an editable install of this project) are never visible.

When no such Python exists, or its boto3 directory cannot be built (no package index reachable),
the function runs on this interpreter, and :func:`resolve` says so in ``warning``: the runtime
reports it once per function.
"""

from __future__ import annotations

import fcntl
import glob
import importlib.metadata
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path

from serverless_retry_tools.local.runtime.complete_trees import COMPLETE, is_complete

__all__ = ["PythonRuntime", "cache_root", "resolve", "version_of"]

_RUNTIME = re.compile(r"^python(3)\.(\d+)$")
_PIP_TIMEOUT_SECONDS = 600
_lock = threading.Lock()
_resolved: dict[tuple[str, str], PythonRuntime] = {}
_versions: dict[str, str | None] = {}


@dataclass(frozen=True)
class PythonRuntime:
    executable: str
    libs: tuple[str, ...]
    version: str  # "3.12": what the worker really runs
    warning: str = ""  # why this is not the function's runtime (empty when it is)


def cache_root() -> Path:
    """``build/lambda-python`` of the checkout this package runs from, else a per-user cache."""
    for parent in Path(__file__).resolve().parents:
        if (parent / "pyproject.toml").is_file() and (parent / "tools_src").is_dir():
            return parent / "build" / "lambda-python"
    return Path.home() / ".cache" / "serverless-retry" / "lambda-python"


def _version_of(executable: str) -> str | None:
    try:
        out = subprocess.run(
            [executable, "-I", "-S", "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
    except OSError:
        return None
    return out.stdout.strip() if out.returncode == 0 else None


def version_of(executable: str) -> str | None:
    """``executable``'s "3.12", asked once per interpreter (None when it does not run)."""
    with _lock:
        if executable in _versions:
            return _versions[executable]
    found = _version_of(executable)
    with _lock:
        _versions[executable] = found
    return found


def find_python(version: str) -> str | None:
    """An interpreter of exactly ``version`` ("3.12"): PATH first (a pyenv shim for a version that is
    not selected fails, so each candidate is run), then pyenv's installed versions."""
    candidates = [shutil.which(f"python{version}")]
    root = os.environ.get("PYENV_ROOT") or str(Path.home() / ".pyenv")
    candidates += sorted(glob.glob(f"{root}/versions/{version}.*/bin/python{version}"), reverse=True)
    if f"{sys.version_info[0]}.{sys.version_info[1]}" == version:
        candidates.append(sys.executable)
    for candidate in candidates:
        if candidate and _version_of(candidate) == version:
            return candidate
    return None


def _boto3_requirement() -> str:
    # The boto3 of this environment: the same API the consumer was tested against, and a wheel pip
    # has most likely cached already.
    try:
        return f"boto3=={importlib.metadata.version('boto3')}"
    except importlib.metadata.PackageNotFoundError:
        return "boto3"


def runtime_libs(executable: str, version: str, root: Path) -> Path:
    """The boto3 directory for ``version``, built with ``executable``'s pip on first use. Safe when
    several processes ask at once: one builds under a file lock into a staging directory that is
    renamed into place complete."""
    requirement = _boto3_requirement()
    target = root / f"python{version}-{requirement.replace('==', '-')}"
    if is_complete(target):
        return target
    root.mkdir(parents=True, exist_ok=True)
    with (root / f".python{version}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if is_complete(target):
            return target
        staging = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=root))
        try:
            # --no-compile: under build.sh pip's bytecode went to PYTHONPYCACHEPREFIX, filed under the
            # staging path, where no worker looks (they run with -I); each compiles what it imports
            # beside the sources instead, once. ~0.8 s of CPU on a fresh clone.
            result = subprocess.run(
                [executable, "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
                 "--no-warn-script-location", "--no-compile", "--target", str(staging), requirement],
                capture_output=True, text=True, timeout=_PIP_TIMEOUT_SECONDS, check=False,
            )  # fmt: skip
            if result.returncode != 0:
                raise RuntimeError(
                    f"pip could not install {requirement} for Python {version}: {result.stderr[-800:]}"
                )
            (staging / COMPLETE).write_text(requirement)
            shutil.rmtree(target, ignore_errors=True)
            staging.rename(target)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
    return target


def _here() -> str:
    return f"{sys.version_info[0]}.{sys.version_info[1]}"


def _dev_site_packages() -> tuple[str, ...]:
    import site

    return tuple(p for p in site.getsitepackages() if Path(p).is_dir())


def resolve(runtime: str, root: Path | None = None) -> PythonRuntime:
    """The interpreter and library path for a function whose Lambda ``Runtime`` is ``runtime``."""
    root = root or cache_root()
    key = (runtime, str(root))
    with _lock:
        if key in _resolved:
            return _resolved[key]
        _resolved[key] = found = _resolve(runtime, root)
        return found


def _resolve(runtime: str, root: Path) -> PythonRuntime:
    match = _RUNTIME.match(runtime or "")
    wanted = f"{match.group(1)}.{match.group(2)}" if match else None
    executable = find_python(wanted) if wanted else None
    warning = ""
    if executable is None:
        executable, version = sys.executable, _here()
        warning = (
            f"no Python {wanted} on this machine for runtime {runtime}: running on Python {version}"
            if wanted
            else f"runtime {runtime or '(none)'} is not a Python runtime the local worker knows: running on Python {version}"
        )
    else:
        version = wanted or _here()
    try:
        libs: tuple[str, ...] = (str(runtime_libs(executable, version, root)),)
    except (OSError, RuntimeError, subprocess.SubprocessError) as exc:
        # Without a boto3 of its own, the function can only borrow this environment's.
        if executable != sys.executable:
            executable, version = sys.executable, _here()
        libs = _dev_site_packages()
        warning = (
            warning + "; " if warning else ""
        ) + f"could not prepare boto3 for Python {version} ({exc}): using this environment's site-packages"
    return PythonRuntime(executable, libs, version, warning)


def main(argv: list[str] | None = None) -> int:
    """``python -m serverless_retry_tools.local.runtime.lambda_python python3.12 ...``: prepare ahead of use."""
    status = 0
    for runtime in argv if argv is not None else sys.argv[1:]:
        found = resolve(runtime)
        print(f"{runtime}: Python {found.version} at {found.executable}, libs {', '.join(found.libs)}")
        if found.warning:
            print(f"  warning: {found.warning}", file=sys.stderr)
            status = 1
    return status


if __name__ == "__main__":
    raise SystemExit(main())
