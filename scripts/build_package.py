"""Build dist/serverless-retry.zip for the python3.12 Lambda runtime, byte-for-byte reproducible.

Reproducible means: the same sources and pinned requirements give the same sha256. So entries are
sorted, every timestamp is fixed, permissions are normalised, and caches (__pycache__, *.pyc) and
pip's per-install files (INSTALLER, direct_url.json) are left out.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FIXED_TIME = (1980, 1, 1, 0, 0, 0)
SKIP_DIRS = {"__pycache__"}
SKIP_FILES = {"INSTALLER", "direct_url.json", "REQUESTED"}
SKIP_SUFFIXES = (".pyc", ".pyo")


def install_runtime_deps(requirements: Path, cache: Path) -> Path:
    """pip install the pinned runtime requirements once per requirements hash."""
    digest = hashlib.sha256(requirements.read_bytes()).hexdigest()[:16]
    target = cache / f"deps-{digest}"
    if (target / ".complete").exists():
        return target
    if target.exists():
        shutil.rmtree(target)
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "-q",
            "--disable-pip-version-check",
            "--no-compile",
            "--no-deps",
            "--target",
            str(target),
            # Wheels for the Lambda runtime, not for this machine.
            "--platform",
            "manylinux2014_x86_64",
            "--platform",
            "manylinux2014_aarch64",
            "--implementation",
            "cp",
            "--python-version",
            "3.12",
            "--only-binary=:all:",
            "-r",
            str(requirements),
        ],
        check=True,
    )
    (target / ".complete").write_text(digest)
    return target


def iter_files(base: Path, prefix: str = "") -> list[tuple[str, Path]]:
    out: list[tuple[str, Path]] = []
    for dirpath, dirnames, filenames in os.walk(base):
        dirnames[:] = sorted(d for d in dirnames if d not in SKIP_DIRS)
        for name in filenames:
            if name in SKIP_FILES or name.endswith(SKIP_SUFFIXES) or name == ".complete":
                continue
            path = Path(dirpath) / name
            arc = prefix + path.relative_to(base).as_posix()
            out.append((arc, path))
    return out


def write_zip(entries: list[tuple[str, Path]], out: Path) -> None:
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_suffix(".zip.tmp")
    with zipfile.ZipFile(tmp, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=9) as zf:
        for arc, path in sorted(entries):
            info = zipfile.ZipInfo(arc, date_time=FIXED_TIME)
            info.external_attr = 0o644 << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            info.create_system = 3  # unix, whatever builds it
            zf.writestr(info, path.read_bytes())
    tmp.replace(out)


def build(out: Path, extra: list[Path]) -> str:
    deps = install_runtime_deps(ROOT / "requirements" / "runtime.txt", ROOT / "build" / "package")
    # pip's console scripts (bin/, e.g. jmespath's jp.py) cannot run in Lambda: only importable code goes.
    entries = [(arc, path) for arc, path in iter_files(deps) if not arc.startswith("bin/")]
    entries += iter_files(ROOT / "lambda_src" / "serverless_retry", "serverless_retry/")
    for path in extra:
        # Extra user code (an example's processor): files go to the zip root, packages keep their name.
        if path.is_dir():
            entries += iter_files(path, path.name + "/")
        else:
            entries.append((path.name, path))
    names = [a for a, _ in entries]
    dupes = {n for n in names if names.count(n) > 1}
    if dupes:
        raise SystemExit(f"duplicate zip entries: {sorted(dupes)}")
    write_zip(entries, out)
    return hashlib.sha256(out.read_bytes()).hexdigest()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", type=Path, default=ROOT / "dist" / "serverless-retry.zip")
    parser.add_argument(
        "--extra",
        type=Path,
        action="append",
        default=[],
        help="a file or package directory of user code to add (e.g. an example's processor)",
    )
    args = parser.parse_args()
    digest = build(args.out, args.extra)
    print(f"{args.out}  sha256={digest}")


if __name__ == "__main__":
    main()
