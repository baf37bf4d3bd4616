"""pip installs for one Lambda runtime (--target, wheels for its platform), and what they installed."""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from email.parser import HeaderParser
from pathlib import Path

from serverless_retry_tools.bundling.targets import Target, pip_target_args
from serverless_retry_tools.bundling.zips import BundleError

PIP = (sys.executable, "-m", "pip", "install", "-q", "--disable-pip-version-check", "--no-compile")


def install_pinned(requirements: Path, cache: Path, target: Target) -> Path:
    """pip install a fully pinned requirements file (no resolution: --no-deps) for one runtime, once per
    requirements hash, into ``cache``.

    Two builds may run at once (``./build.sh test`` and ``./build.sh package`` in one checkout): each
    installs into a directory of its own and renames it into place, so neither sees the other's
    half-written tree; the loser of the rename uses the winner's install."""
    digest = hashlib.sha256(requirements.read_bytes()).hexdigest()[:16]
    dest = cache / f"deps-{digest}" / f"cp{target.python.replace('.', '')}-{target.machine}"
    if (dest / ".complete").exists():
        return dest
    dest.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{dest.name}-", dir=dest.parent))
    try:
        subprocess.run(
            [*PIP, "--no-deps", "--target", str(staging), *pip_target_args(target), "-r", str(requirements)],
            check=True,
        )
        (staging / ".complete").write_text(digest)
        if dest.exists() and not (dest / ".complete").exists():
            shutil.rmtree(dest)  # an install interrupted before this layout (no staging dir then)
        try:
            staging.rename(dest)
        except OSError:
            if not (dest / ".complete").exists():
                raise  # not another build's finished install: a real failure
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return dest


@dataclass(frozen=True)
class Installed:
    """One distribution pip installed, from its installation report."""

    name: str
    version: str
    requested: bool  # named by the requirements given, not only pulled in by another distribution
    requires_dist: tuple[str, ...] = field(default=())


def install_resolved(
    requirements: Sequence[str], dest: Path, target: Target, pip_options: Sequence[str] = ()
) -> list[Installed]:
    """pip install ``requirements`` (pip arguments: specifiers, ``-r file``, ``-c file``) with their
    dependencies into ``dest``, for ``target``'s runtime. A requirement pip cannot satisfy with wheels
    for that runtime raises BundleError carrying pip's own explanation."""
    report = dest.parent / f".{dest.name}-report.json"
    argv = [*PIP, "--target", str(dest), "--report", str(report), *pip_target_args(target), *pip_options]
    try:
        result = subprocess.run([*argv, *requirements], capture_output=True, text=True, check=False)
        if result.returncode != 0:
            errors = [line for line in result.stderr.splitlines() if line.startswith("ERROR:")]
            detail = "\n  ".join(errors or result.stderr.strip().splitlines()[-5:])
            raise BundleError(
                f"pip could not install the requirements for {target.label} from wheels built for "
                f"Lambda's platform:\n  {detail}"
            )
        items = json.loads(report.read_text())["install"]
    finally:
        report.unlink(missing_ok=True)
    return [
        Installed(
            name=item["metadata"]["name"],
            version=item["metadata"]["version"],
            requested=bool(item.get("requested", False)),
            requires_dist=tuple(item["metadata"].get("requires_dist", ())),
        )
        for item in items
    ]


def normalize(name: str) -> str:
    """A distribution name as the packaging specifications compare them (PEP 503)."""
    return "-".join(part for part in name.lower().replace("_", "-").replace(".", "-").split("-") if part)


def files_of(dest: Path, names: set[str]) -> set[str]:
    """The files (relative to ``dest``) that pip installed there for the distributions ``names``
    (normalized), from their RECORD, dist-info directories included."""
    out: set[str] = set()
    root = dest.resolve()
    for info in dest.glob("*.dist-info"):
        metadata = info / "METADATA"
        if not metadata.exists():
            continue
        name = HeaderParser().parsestr(metadata.read_text(encoding="utf-8", errors="replace"))["Name"] or ""
        if normalize(name) not in names:
            continue
        out.update(p.relative_to(dest).as_posix() for p in info.rglob("*") if p.is_file())
        record = info / "RECORD"
        for line in record.read_text().splitlines() if record.exists() else ():
            path = (dest / line.rsplit(",", 2)[0]).resolve()
            if path.is_relative_to(root):
                out.add(path.relative_to(root).as_posix())
    return out
