"""The release artifacts, into dist/ (``./build.sh release``):

- serverless-retry: sdist and wheel of the Lambda library (lambda_src/serverless_retry);
- serverless-retry-tools: sdist and wheel of the operator tools (tools_src/serverless_retry_tools),
  depending on serverless-retry at exactly the same version;
- serverless-retry.zip: the function zip (the library and its pinned dependencies, every runtime);
- serverless-retry-layer.zip: the same as a Lambda layer (python/);
- SHA256SUMS of all of them (``sha256sum -c SHA256SUMS`` checks).

The version is written in one place, ``serverless_retry.__version__``: the library's build reads it
(setuptools' attr), and this script writes it into the tools' staged tree (VERSION and the pin).
Each distribution is built by pypa/build from a staged tree (packaging/<name>/, the LICENSE and the
package), sdist first and the wheel from the sdist, so a file missing from the sdist fails here.
twine check --strict then checks their metadata as PyPI would render it.
"""

from __future__ import annotations

import argparse
import ast
import gzip
import hashlib
import io
import os
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import build_package

ROOT = Path(__file__).resolve().parent.parent
LIBRARY, TOOLS = "serverless-retry", "serverless-retry-tools"
SOURCES = {
    LIBRARY: ROOT / "lambda_src" / "serverless_retry",
    TOOLS: ROOT / "tools_src" / "serverless_retry_tools",
}
FUNCTION_ZIP, LAYER_ZIP = "serverless-retry.zip", "serverless-retry-layer.zip"


def version() -> str:
    """``__version__`` of lambda_src/serverless_retry/__init__.py, read without importing it."""
    tree = ast.parse((SOURCES[LIBRARY] / "__init__.py").read_text())
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "__version__" for t in node.targets
        ):
            return str(ast.literal_eval(node.value))
    raise SystemExit("lambda_src/serverless_retry/__init__.py has no __version__")


def stage(name: str, into: Path, release: str) -> Path:
    """A self-contained source tree for distribution ``name`` under ``into``."""
    tree = into / name
    shutil.rmtree(tree, ignore_errors=True)
    shutil.copytree(ROOT / "packaging" / name, tree)
    shutil.copy2(ROOT / "LICENSE", tree / "LICENSE")
    package = SOURCES[name]
    shutil.copytree(package, tree / package.name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    if name == TOOLS:
        (tree / "VERSION").write_text(release + "\n")
        (tree / "library.txt").write_text(f"{LIBRARY}=={release}\n")
    return tree


def source_date_epoch() -> str:
    """The last commit's time (wheels' timestamps, so two builds of one commit match); 1980 outside git."""
    result = subprocess.run(
        ["git", "-C", str(ROOT), "log", "-1", "--format=%ct"], capture_output=True, text=True, check=False
    )
    return result.stdout.strip() if result.returncode == 0 and result.stdout.strip() else "315532800"


def normalize_sdist(path: Path, epoch: int) -> None:
    """Rewrite an sdist so that two builds of one commit are byte-identical: setuptools stamps its
    members with the build's clock and the files' own times. Members sorted, times ``epoch``, owners
    root, modes 644/755, and a gzip header without a time."""
    with tarfile.open(path, "r:gz") as tar:
        members = []
        for member in tar.getmembers():
            handle = tar.extractfile(member) if member.isfile() else None
            members.append((member, handle.read() if handle is not None else None))
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as out:
        for member, data in sorted(members, key=lambda m: m[0].name):
            member.mtime, member.uid, member.gid, member.uname, member.gname = epoch, 0, 0, "", ""
            member.mode = 0o755 if member.isdir() else 0o644
            member.pax_headers = {}
            out.addfile(member, io.BytesIO(data) if data is not None else None)
    with path.open("wb") as handle, gzip.GzipFile(fileobj=handle, mode="wb", mtime=0, filename="") as gz:
        gz.write(raw.getvalue())


def build_distribution(tree: Path, dist: Path) -> list[Path]:
    before = set(dist.glob("*"))
    epoch = source_date_epoch()
    subprocess.run(
        [sys.executable, "-m", "build", "--no-isolation", "--outdir", str(dist), str(tree)],
        check=True,
        env={**os.environ, "SOURCE_DATE_EPOCH": epoch},  # the wheel's timestamps
        stdout=subprocess.DEVNULL,
    )
    built = sorted(set(dist.glob("*")) - before)
    for sdist in (p for p in built if p.name.endswith(".tar.gz")):
        normalize_sdist(sdist, int(epoch))
    return built


def write_sums(dist: Path, files: list[Path]) -> Path:
    lines = [f"{hashlib.sha256(f.read_bytes()).hexdigest()}  {f.name}\n" for f in sorted(files)]
    sums = dist / "SHA256SUMS"
    sums.write_text("".join(lines))
    return sums


def release(dist: Path, work: Path, zips: bool = True) -> list[Path]:
    """Build every artifact into ``dist``; return them (SHA256SUMS last)."""
    release_version = version()
    dist.mkdir(parents=True, exist_ok=True)
    for stale in [*dist.glob("serverless_retry*.whl"), *dist.glob("serverless_retry*.tar.gz")]:
        stale.unlink()
    artifacts: list[Path] = []
    for name in (LIBRARY, TOOLS):
        artifacts += build_distribution(stage(name, work, release_version), dist)
    subprocess.run(
        [sys.executable, "-m", "twine", "check", "--strict", *map(str, artifacts)],
        check=True,
        stdout=subprocess.DEVNULL,
    )
    if zips:
        build_package.build(dist / FUNCTION_ZIP, [])
        build_package.build(dist / LAYER_ZIP, [], layer=True)
        artifacts += [dist / FUNCTION_ZIP, dist / LAYER_ZIP]
    return [*artifacts, write_sums(dist, artifacts)]


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--dist", type=Path, default=ROOT / "dist")
    parser.add_argument("--work", type=Path, default=ROOT / "build" / "release")
    args = parser.parse_args()
    for path in release(args.dist, args.work):
        print(f"{path}  {path.stat().st_size} bytes")


if __name__ == "__main__":
    main()
