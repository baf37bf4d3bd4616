"""Build dist/serverless-retry.zip for every Lambda runtime the consumer module allows, byte-for-byte
reproducible.

One zip serves python3.11, 3.12 and 3.13 on arm64 and x86_64: the runtime dependencies are installed
once per (Python version, architecture) from manylinux wheels that the runtime's OS can load, and the
installs are merged. Pure files are the same in every install; compiled extensions carry the version
and architecture in their file names (``_re2.cpython-312-aarch64-linux-gnu.so``), so they sit side by
side. Any other file that differs between installs is a conflict and stops the build.

Reproducible means: the same sources and pinned requirements give the same sha256. So entries are
sorted, every timestamp is fixed, permissions are normalised, and caches (__pycache__, *.pyc) and
pip's per-install files (INSTALLER, direct_url.json, RECORD) are left out.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FIXED_TIME = (1980, 1, 1, 0, 0, 0)
SKIP_DIRS = {"__pycache__"}
# pip's bookkeeping for one install: RECORD lists one platform's files and hashes, so it would be wrong
# for the merged tree (nothing at run time reads it).
SKIP_FILES = {"INSTALLER", "direct_url.json", "REQUESTED", "RECORD"}
SKIP_SUFFIXES = (".pyc", ".pyo")

# The runtimes modules/consumer accepts, each with the newest glibc minor its OS has: python3.11 runs
# on Amazon Linux 2 (glibc 2.26), python3.12 and python3.13 on Amazon Linux 2023 (glibc 2.34).
RUNTIMES = {"3.11": 26, "3.12": 34, "3.13": 34}
# Lambda's arm64 and x86_64, by the names wheels use.
ARCHITECTURES = ("aarch64", "x86_64")


def platform_tags(arch: str, glibc_minor: int) -> list[str]:
    """Every manylinux tag a system with glibc 2.<glibc_minor> loads, newest first: pip's --platform
    takes tags literally, it does not widen manylinux_2_34 to the older tags that also run there."""
    tags = [f"manylinux_2_{minor}_{arch}" for minor in range(glibc_minor, 16, -1)]
    return [*tags, f"manylinux2014_{arch}"]


def install_runtime_deps(requirements: Path, cache: Path, python: str, arch: str) -> Path:
    """pip install the pinned runtime requirements for one runtime, once per requirements hash.

    Two builds may run at once (``./build.sh test`` and ``./build.sh package`` in one checkout): each
    installs into a directory of its own and renames it into place, so neither sees the other's
    half-written tree; the loser of the rename uses the winner's install."""
    digest = hashlib.sha256(requirements.read_bytes()).hexdigest()[:16]
    target = cache / f"deps-{digest}" / f"cp{python.replace('.', '')}-{arch}"
    if (target / ".complete").exists():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}-", dir=target.parent))
    try:
        platforms = [arg for tag in platform_tags(arch, RUNTIMES[python]) for arg in ("--platform", tag)]
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
                str(staging),
                # Wheels for the Lambda runtime, not for this machine.
                *platforms,
                "--implementation",
                "cp",
                "--python-version",
                python,
                "--only-binary=:all:",
                "-r",
                str(requirements),
            ],
            check=True,
        )
        (staging / ".complete").write_text(digest)
        if target.exists() and not (target / ".complete").exists():
            shutil.rmtree(target)  # an install interrupted before this layout (no staging dir then)
        try:
            staging.rename(target)
        except OSError:
            if not (target / ".complete").exists():
                raise  # not another build's finished install: a real failure
    finally:
        shutil.rmtree(staging, ignore_errors=True)
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


def merge_wheel_metadata(arc: str, first: bytes, second: bytes) -> bytes:
    """Two installs' ``*.dist-info/WHEEL`` files: the same but for their ``Tag:`` lines, which name the
    platform each install came from. The merged tree is valid for all of those tags."""
    head_a = [line for line in first.decode().splitlines() if line and not line.startswith("Tag:")]
    head_b = [line for line in second.decode().splitlines() if line and not line.startswith("Tag:")]
    if head_a != head_b:
        raise SystemExit(f"conflicting zip entry {arc}: the installs disagree beyond their Tag lines")
    tags = {
        line for text in (first, second) for line in text.decode().splitlines() if line.startswith("Tag:")
    }
    return "\n".join([*head_a, *sorted(tags)]).encode() + b"\n"


def merge_installs(installs: dict[str, Path]) -> dict[str, bytes]:
    """One tree from several per-runtime installs. A path present in several installs must hold the
    same bytes in each (WHEEL metadata aside); otherwise the build stops, naming the path."""
    merged: dict[str, bytes] = {}
    origin: dict[str, str] = {}
    for label, base in sorted(installs.items()):
        for arc, path in iter_files(base):
            if arc.startswith("bin/"):
                continue  # pip's console scripts (e.g. jmespath's jp.py) cannot run in Lambda
            data = path.read_bytes()
            if arc not in merged:
                merged[arc], origin[arc] = data, label
            elif merged[arc] != data:
                if arc.endswith(".dist-info/WHEEL"):
                    merged[arc] = merge_wheel_metadata(arc, merged[arc], data)
                else:
                    raise SystemExit(
                        f"conflicting zip entry {arc}: {origin[arc]} and {label} install different files"
                    )
    return merged


def write_zip(entries: dict[str, bytes], out: Path) -> None:
    out.parent.mkdir(parents=True, exist_ok=True)
    # A temporary file of this build's own (two builds may write the same zip), renamed over ``out``.
    fd, name = tempfile.mkstemp(prefix=f".{out.name}-", suffix=".tmp", dir=out.parent)
    os.close(fd)
    tmp = Path(name)
    try:
        with zipfile.ZipFile(tmp, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=9) as zf:
            for arc in sorted(entries):
                info = zipfile.ZipInfo(arc, date_time=FIXED_TIME)
                info.external_attr = 0o644 << 16
                info.compress_type = zipfile.ZIP_DEFLATED
                info.create_system = 3  # unix, whatever builds it
                zf.writestr(info, entries[arc])
        tmp.chmod(0o644)  # mkstemp's 0600 would otherwise reach the zip
        tmp.replace(out)
    finally:
        tmp.unlink(missing_ok=True)


def build(out: Path, extra: list[Path]) -> str:
    requirements = ROOT / "requirements" / "runtime.txt"
    cache = ROOT / "build" / "package"
    # The six installs side by side: each is a pip process that mostly waits on its index.
    targets = [(python, arch) for python in RUNTIMES for arch in ARCHITECTURES]
    with ThreadPoolExecutor(len(targets)) as pool:
        paths = list(pool.map(lambda t: install_runtime_deps(requirements, cache, *t), targets))
    installs = {f"python{python}/{arch}": path for (python, arch), path in zip(targets, paths, strict=True)}
    entries = merge_installs(installs)
    ours = iter_files(ROOT / "lambda_src" / "serverless_retry", "serverless_retry/")
    for path in extra:
        # Extra user code (an example's processor): files go to the zip root, packages keep their name.
        ours += iter_files(path, path.name + "/") if path.is_dir() else [(path.name, path)]
    for arc, path in ours:
        if arc in entries:
            raise SystemExit(f"duplicate zip entry {arc}: it is both a dependency's file and ours")
        entries[arc] = path.read_bytes()
    names = [arc for arc, _ in ours]
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
