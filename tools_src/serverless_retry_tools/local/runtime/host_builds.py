"""A foreign-architecture code tree made runnable on this host: the distributions whose compiled
modules are built only for the function's declared machine are replaced by this host's build of the
same version, everything else is used as deployed.

Where the host's build comes from: pip, run by the interpreter the function's worker runs on
(``python -m pip install --no-deps --only-binary=:all: NAME==VERSION``), into a cache directory per
(distribution, version, Python version, machine). That interpreter's pip picks exactly the wheel
this host loads (its Python version, its glibc), which the emulator's own environment cannot
promise: it runs on another Python than the function's runtime and may hold another version of the
distribution (the dev environment's google-re2 is not the one a zip pins). A build made once is
reused offline; the first one needs the package index (a bounded pip call that fails with pip's own
reason, reported by the caller).

The substituted tree is a sibling of the unpacked one (hard links where possible), so the unpacked
code stays as deployed for every other use and the worker's path layout is unchanged.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from serverless_retry_tools.local.runtime.architectures import Distribution, plan, scan
from serverless_retry_tools.local.runtime.complete_trees import COMPLETE, is_complete, publish

__all__ = ["HostBuildError", "Runnable", "host_build", "runnable"]

_PIP_TIMEOUT_SECONDS = 180
# pip's own per-request timeout and retries: without a network a build fails within about a
# minute rather than after pip's default five retries.
_PIP_NETWORK = ("--timeout", "15", "--retries", "1")


class HostBuildError(RuntimeError):
    """pip could not provide this host's build of a distribution."""


@dataclass(frozen=True)
class Runnable:
    """The tree a worker should run, and what the emulator says about it."""

    path: Path
    summary: str = ""  # the substitution line, empty when nothing was substituted
    notes: tuple[str, ...] = ()  # differences from AWS left as they are, or a failed substitution


def _normal(name: str) -> str:
    return name.replace("-", "_").replace(".", "_").lower()


def host_build(dist: Distribution, *, python: str, python_version: str, machine: str, root: Path) -> Path:
    """This host's install of ``dist`` (same version) for ``python``, built on first use under
    ``root`` with that interpreter's pip, under a file lock, renamed into place complete."""
    target = root / f"{_normal(dist.name)}-{dist.version}-py{python_version}-{machine}"
    if is_complete(target):
        return target
    root.mkdir(parents=True, exist_ok=True)
    requirement = f"{dist.name}=={dist.version}"
    with (root / f".{target.name}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if is_complete(target):
            return target
        staging = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=root))
        try:
            argv = [python, "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
                    "--no-warn-script-location", "--no-compile", "--no-deps", "--only-binary=:all:",
                    *_PIP_NETWORK, "--target", str(staging), requirement]  # fmt: skip
            try:
                result = subprocess.run(
                    argv, capture_output=True, text=True, timeout=_PIP_TIMEOUT_SECONDS, check=False
                )
            except (OSError, subprocess.TimeoutExpired) as exc:
                raise HostBuildError(
                    f"pip install {requirement} for Python {python_version}: {exc}"
                ) from None
            if result.returncode != 0:
                errors = [line for line in result.stderr.splitlines() if line.startswith("ERROR:")]
                detail = " ".join(errors or result.stderr.strip().splitlines()[-3:])
                raise HostBuildError(f"pip install {requirement} for Python {python_version}: {detail}")
            (staging / COMPLETE).write_text(requirement)
            shutil.rmtree(target, ignore_errors=True)
            staging.rename(target)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
    return target


def _link_or_copy(source: str, destination: str) -> None:
    try:
        os.link(source, destination)
    except OSError:
        shutil.copy2(source, destination)


def _remove(site_dir: Path, dist: Distribution) -> None:
    """Take ``dist``'s files out of ``site_dir``: its top-level packages and modules, its vendored
    ``.libs`` and its ``.dist-info``."""
    for name in dist.top_level or (_normal(dist.name),):
        shutil.rmtree(site_dir / name, ignore_errors=True)
        for module in (*site_dir.glob(f"{name}.py"), *site_dir.glob(f"{name}.*so")):
            module.unlink(missing_ok=True)
    shutil.rmtree(site_dir / f"{_normal(dist.name)}.libs", ignore_errors=True)
    shutil.rmtree(site_dir / dist.dist_info, ignore_errors=True)


def _put(build: Path, site_dir: Path) -> None:
    for entry in sorted(build.iterdir()):
        if entry.name in (COMPLETE, "bin", "__pycache__"):
            continue
        if entry.is_dir():
            shutil.copytree(entry, site_dir / entry.name, dirs_exist_ok=True)
        else:
            shutil.copy2(entry, site_dir / entry.name)


def _substituted(tree: Path, builds: Sequence[tuple[Distribution, Path]], key: str) -> Path:
    """A copy of ``tree`` with each distribution replaced by its build, made once per key."""
    target = tree.parent / f"{tree.name}.host-{key}"
    if is_complete(target):
        return target
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=tree.parent))
    try:
        shutil.copytree(tree, staging, dirs_exist_ok=True, copy_function=_link_or_copy)
        for dist, build in builds:
            site_dir = staging / dist.site
            _remove(site_dir, dist)
            _put(build, site_dir)
        publish(staging, target, " ".join(d.label for d, _ in builds))  # (replaces the tree's marker)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return target


def runnable(
    tree: Path,
    sites: Sequence[str],
    *,
    declared: str,
    host: str,
    python: str,
    python_version: str,
    where: str,
    cache: Path,
) -> Runnable:
    """The tree to run for code unpacked at ``tree`` (site directories ``sites``), for a function
    declaring machine ``declared`` on this ``host``, whose worker runs ``python``."""
    decided = plan(scan(tree, sites), declared=declared, host=host, where=where)
    if not decided.substitute:
        return Runnable(tree, notes=decided.notes)
    try:
        builds = [
            (dist, host_build(dist, python=python, python_version=python_version, machine=host, root=cache))
            for dist in decided.substitute
        ]
    except HostBuildError as exc:
        why = (
            f"{where} holds compiled code for {declared} and this host is {host}: could not get this host's build "
            f"of {', '.join(d.label for d in decided.substitute)} ({exc}); running it as deployed, "
            "where those compiled modules cannot load"
        )
        return Runnable(tree, notes=(*decided.notes, why))
    labels = "\n".join(f"{d.site}:{d.label}" for d in decided.substitute)
    key = hashlib.sha256(f"{labels}\n{python_version}\n{host}".encode()).hexdigest()[:16]
    return Runnable(_substituted(tree, builds, key), decided.summary(declared, host, where), decided.notes)
