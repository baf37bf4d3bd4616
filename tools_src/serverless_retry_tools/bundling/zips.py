"""Reproducible zips: the same files give the same bytes, whoever builds them and when.

Entries are sorted, every timestamp is fixed, permissions are normalised, and the build machine's
caches (__pycache__, *.pyc) and pip's per-install files (INSTALLER, direct_url.json, RECORD) are left
out: the zip's own bytecode is compiled afresh for each runtime's Python (bytecode.py).
"""

from __future__ import annotations

import os
import tempfile
import zipfile
from collections.abc import Iterable, Mapping
from pathlib import Path

FIXED_TIME = (1980, 1, 1, 0, 0, 0)
SKIP_DIRS = {"__pycache__"}
# pip's bookkeeping for one install: RECORD lists one platform's files and hashes, so it would be wrong
# for a merged tree (nothing at run time reads it).
SKIP_FILES = {"INSTALLER", "direct_url.json", "REQUESTED", "RECORD", ".complete"}
SKIP_SUFFIXES = (".pyc", ".pyo")


class BundleError(Exception):
    """A package that cannot be built as asked: the message says what to change."""


def iter_files(base: Path, prefix: str = "", skip_hidden: bool = False) -> list[tuple[str, Path]]:
    """(name in the zip, file) for every file under ``base``, caches and pip's bookkeeping left out;
    ``skip_hidden`` also leaves out dotfiles and dot-directories (.git, .env, .venv)."""
    out: list[tuple[str, Path]] = []
    for dirpath, dirnames, filenames in os.walk(base):
        dirnames[:] = sorted(
            d for d in dirnames if d not in SKIP_DIRS and not (skip_hidden and d.startswith("."))
        )
        for name in sorted(filenames):
            if name in SKIP_FILES or name.endswith(SKIP_SUFFIXES) or (skip_hidden and name.startswith(".")):
                continue
            path = Path(dirpath) / name
            out.append((prefix + path.relative_to(base).as_posix(), path))
    return out


def merge_wheel_metadata(arc: str, first: bytes, second: bytes) -> bytes:
    """Two installs' ``*.dist-info/WHEEL`` files: the same but for their ``Tag:`` lines, which name the
    platform each install came from. The merged tree is valid for all of those tags."""
    head_a = [line for line in first.decode().splitlines() if line and not line.startswith("Tag:")]
    head_b = [line for line in second.decode().splitlines() if line and not line.startswith("Tag:")]
    if head_a != head_b:
        raise BundleError(f"conflicting zip entry {arc}: the installs disagree beyond their Tag lines")
    tags = {
        line for text in (first, second) for line in text.decode().splitlines() if line.startswith("Tag:")
    }
    return "\n".join([*head_a, *sorted(tags)]).encode() + b"\n"


def merge_installs(installs: Mapping[str, Iterable[tuple[str, Path]]], prefix: str = "") -> dict[str, bytes]:
    """One tree from several per-runtime installs (label -> its files). Pure files are the same in every
    install; compiled extensions carry the version and architecture in their names
    (``_re2.cpython-312-aarch64-linux-gnu.so``), so they sit side by side. A path present in several
    installs must hold the same bytes in each (WHEEL metadata aside), or the build stops, naming it."""
    merged: dict[str, bytes] = {}
    origin: dict[str, str] = {}
    for label, files in sorted(installs.items()):
        for arc, path in files:
            if arc.startswith("bin/"):
                continue  # pip's console scripts (e.g. jmespath's jp.py) cannot run in Lambda
            name = prefix + arc
            data = path.read_bytes()
            if name not in merged:
                merged[name], origin[name] = data, label
            elif merged[name] != data:
                if name.endswith(".dist-info/WHEEL"):
                    merged[name] = merge_wheel_metadata(name, merged[name], data)
                else:
                    raise BundleError(
                        f"conflicting zip entry {name}: {origin[name]} and {label} install different files"
                    )
    return merged


def add_entries(entries: dict[str, bytes], files: Iterable[tuple[str, Path]], what: str) -> None:
    """Add ``files`` to ``entries``; a name already there (a dependency's file, or twice ours) stops."""
    for arc, path in files:
        if arc in entries:
            raise BundleError(f"duplicate zip entry {arc}: a file of {what} is already in the zip")
        entries[arc] = path.read_bytes()


def write_zip(entries: Mapping[str, bytes], out: Path) -> None:
    """Write ``entries`` to ``out`` reproducibly, all at once: a temporary file of this build's own
    (two builds may write the same zip, and a failed build must leave no half-written zip), renamed
    over ``out``."""
    out.parent.mkdir(parents=True, exist_ok=True)
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
