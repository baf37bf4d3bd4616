"""A function zip (a user's code and requirements) or a layer zip (``python/``: serverless_retry and its
dependencies), for one or more Lambda runtimes, and what went into it."""

from __future__ import annotations

import ast
import hashlib
import os
import tempfile
import zipfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path

import serverless_retry
from packaging.requirements import InvalidRequirement, Requirement

from serverless_retry_tools.bundling.bytecode import (
    DEFAULT_MODE,
    FUNCTION_ROOT,
    LAYER_ROOT,
    Bytecode,
    add_bytecode,
    warnings_of,
)
from serverless_retry_tools.bundling.installs import Installed, files_of, install_resolved, normalize
from serverless_retry_tools.bundling.provided import POWERTOOLS, RUNTIME_PROVIDED, left_out
from serverless_retry_tools.bundling.targets import Target
from serverless_retry_tools.bundling.zips import (
    BundleError,
    add_entries,
    iter_files,
    merge_installs,
    write_zip,
)

LIBRARY = "serverless-retry"
LAYER_PREFIX = "python/"  # where a Python runtime finds a layer's packages (/opt/python)
# Lambda's quotas: a zip uploaded directly, and a function's code and layers unpacked together.
ZIPPED_LIMIT = 50 * 1024 * 1024
UNPACKED_LIMIT = 250 * 1024 * 1024


@dataclass
class Part:
    """One thing that went into the zip: the user's code, serverless_retry, or a distribution."""

    name: str
    versions: set[str] = field(default_factory=set)
    files: int = 0
    size: int = 0


@dataclass
class Result:
    out: Path
    targets: list[Target]
    parts: list[Part]
    left_out: list[Part]  # installed as dependencies, not carried (the runtime or a layer has them)
    warnings: list[str]
    sha256: str = ""
    zipped: int = 0
    unpacked: int = 0
    files: int = 0
    bytecode: Bytecode | None = None


def library_requirements(without_powertools: bool) -> list[str]:
    """serverless_retry's own runtime requirements, from the metadata of the distribution installed
    with these tools (no extras), less what the Lambda runtime provides (boto3) and, when asked,
    Powertools (for AWS's public Powertools layer)."""
    dists = metadata.packages_distributions().get("serverless_retry", [])
    if not dists:
        raise BundleError("serverless_retry is not installed with these tools: pip install serverless-retry")
    out = []
    for text in metadata.requires(dists[0]) or []:
        req = Requirement(text)
        if req.marker is not None and "extra" in str(req.marker):
            continue
        name = normalize(req.name)
        if name in RUNTIME_PROVIDED or (without_powertools and name == POWERTOOLS):
            continue
        out.append(text)
    return out


def _library_files(prefix: str) -> list[tuple[str, Path]]:
    package = Path(serverless_retry.__file__).parent
    return iter_files(package, prefix + "serverless_retry/")


def split_requirements(path: Path) -> tuple[list[str], bool]:
    """The lines of the requirements file ``path`` but those naming serverless-retry, and whether any
    did.

    serverless-retry is not resolved by pip: it is the copy installed with these tools (the same
    version, so a release not yet on the index packages too), so a line naming it is taken out (into
    a filtered copy beside the original, which keeps relative ``-r``/``-c`` paths working). A version
    that excludes these tools' is an error."""
    if not path.is_file():
        raise BundleError(f"requirements file {path} does not exist")
    lines = path.read_text().splitlines()
    kept, named = [], False
    for line in lines:
        text = line.split(" #", 1)[0].strip()
        req = None
        if text and not text.startswith(("#", "-")):
            try:
                req = Requirement(text)
            except InvalidRequirement:
                req = None
        if req is not None and normalize(req.name) == LIBRARY:
            if not req.specifier.contains(serverless_retry.__version__, prereleases=True):
                raise BundleError(
                    f"{path} asks for {text}, but these tools carry serverless-retry "
                    f"{serverless_retry.__version__}: install serverless-retry-tools at the version you want"
                )
            named = True
            continue
        kept.append(line)
    return kept, named


def imports_library(source: Path) -> bool:
    """Whether any Python file under ``source`` imports serverless_retry."""
    for _, path in iter_files(source, skip_hidden=True):
        if path.suffix != ".py":
            continue
        try:
            tree = ast.parse(path.read_bytes())
        except (SyntaxError, ValueError):
            continue
        for node in ast.walk(tree):
            names = (
                [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else [node.module or ""]
                if isinstance(node, ast.ImportFrom) and node.level == 0
                else []
            )
            if any(n == "serverless_retry" or n.startswith("serverless_retry.") for n in names):
                return True
    return False


def _install(
    *,
    targets: Sequence[Target],
    requirement_args: list[str],
    prefix: str,
    pip_options: Sequence[str],
    dropped: Sequence[str],
    work: Path,
) -> tuple[dict[str, bytes], dict[str, Part], dict[str, Part]]:
    """Install the requirements once per target, leave out what the runtime provides, and merge."""
    installs: dict[str, list[tuple[str, Path]]] = {}
    parts: dict[str, Part] = {}
    gone: dict[str, Part] = {}
    for target in targets:
        dest = work / f"cp{target.python.replace('.', '')}-{target.machine}"
        dest.mkdir()
        installed: list[Installed] = install_resolved(requirement_args, dest, target, pip_options)
        skip = left_out(installed, target, dropped=dropped)
        skipped_files = files_of(dest, skip)
        files = [(arc, p) for arc, p in iter_files(dest) if arc not in skipped_files]
        installs[target.label] = files
        for item in installed:
            name = normalize(item.name)
            book = gone if name in skip else parts
            part = book.setdefault(name, Part(item.name))
            part.versions.add(item.version)
            if book is parts and len(targets) == 1:
                own = files_of(dest, {name})
                part.files = sum(1 for arc, _ in files if arc in own)
                part.size = sum(p.stat().st_size for arc, p in files if arc in own)
    return merge_installs(installs, prefix), parts, gone


def _finish(entries: dict[str, bytes], result: Result, *, deployed_root: str, bytecode: str) -> Result:
    pythons = {t.python for t in result.targets}
    result.bytecode = add_bytecode(entries, pythons, deployed_root=deployed_root, mode=bytecode)
    result.warnings += warnings_of(result.bytecode)
    write_zip(entries, result.out)
    data = result.out.read_bytes()
    result.sha256 = hashlib.sha256(data).hexdigest()
    result.zipped = len(data)
    with zipfile.ZipFile(result.out) as zf:
        infos = zf.infolist()
    result.unpacked = sum(i.file_size for i in infos)
    result.files = len(infos)
    if result.zipped > ZIPPED_LIMIT:
        result.warnings.append("the zip is over Lambda's 50 MB for a direct upload: deploy it through S3")
    if result.unpacked > UNPACKED_LIMIT:
        result.warnings.append("unpacked it is over Lambda's 250 MB for a function and its layers together")
    return result


def _left_out(gone: dict[str, Part], without_powertools: bool) -> list[Part]:
    """What was installed as a dependency but not carried; Powertools too when left out on request
    (whether or not pip was ever asked for it)."""
    if without_powertools:
        gone.setdefault(POWERTOOLS, Part(POWERTOOLS))
    return sorted(gone.values(), key=lambda p: p.name.lower())


def _own(name: str, files: list[tuple[str, Path]]) -> Part:
    return Part(name, files=len(files), size=sum(p.stat().st_size for _, p in files))


def build_function(
    source: Path,
    out: Path,
    targets: Sequence[Target],
    *,
    requirements: Path | None = None,
    with_library: bool = False,
    without_powertools: bool = False,
    pip_options: Sequence[str] = (),
    bytecode: str = DEFAULT_MODE,
) -> Result:
    """The function zip: ``source``'s files at the zip's root (dotfiles and caches left out), the
    requirements for each target, and serverless_retry only when the requirements name it or
    ``with_library`` asks (a plain handler is not made to carry it); every module with its bytecode
    for each target's Python (``bytecode``: :mod:`serverless_retry_tools.bundling.bytecode`)."""
    if not source.is_dir():
        raise BundleError(f"source directory {source} does not exist")
    requirement_args: list[str] = []
    result = Result(out, list(targets), [], [], [])
    with tempfile.TemporaryDirectory(prefix="serverless-retry-package-") as tmp:
        work = Path(tmp)
        filtered: Path | None = None
        if requirements is not None:
            lines, named = split_requirements(requirements)
            with_library = with_library or named
            if named:  # the filtered copy, beside the original for its relative paths
                try:
                    fd, name = tempfile.mkstemp(
                        prefix=".serverless-retry-", suffix=".txt", dir=requirements.parent
                    )
                except OSError:  # a read-only directory: relative -r/-c lines may then not resolve
                    fd, name = tempfile.mkstemp(suffix=".txt", dir=work)
                with os.fdopen(fd, "w") as handle:
                    handle.write("\n".join(lines) + "\n")
                filtered = Path(name)
            requirement_args += ["-r", str(filtered or requirements)]
        try:
            if with_library:
                requirement_args += library_requirements(without_powertools)
            dropped = [POWERTOOLS] if without_powertools else []
            entries: dict[str, bytes] = {}
            parts: dict[str, Part] = {}
            if requirement_args:
                entries, parts, gone = _install(
                    targets=targets,
                    requirement_args=requirement_args,
                    prefix="",
                    pip_options=pip_options,
                    dropped=dropped,
                    work=work,
                )
                result.left_out = _left_out(gone, without_powertools)
        finally:
            if filtered is not None:
                filtered.unlink(missing_ok=True)
        # Not a previous build of this zip, written inside the source directory.
        code = [(arc, p) for arc, p in iter_files(source, skip_hidden=True) if p.resolve() != out.resolve()]
        add_entries(entries, code, f"your code ({source})")
        result.parts.append(_own(f"your code ({source})", code))
        if with_library:
            library = _library_files("")
            add_entries(entries, library, "serverless_retry")
            result.parts.append(_own(f"serverless-retry {serverless_retry.__version__}", library))
        elif imports_library(source):
            result.warnings.append(
                f"your code imports serverless_retry, which this zip does not carry: name serverless-retry "
                f"in {requirements or 'a requirements file'}, pass --with-serverless-retry, or attach the "
                "serverless-retry layer"
            )
        result.parts += sorted(parts.values(), key=lambda p: p.name.lower())
        return _finish(entries, result, deployed_root=FUNCTION_ROOT, bytecode=bytecode)


def build_layer(
    out: Path,
    targets: Sequence[Target],
    *,
    without_powertools: bool = False,
    pip_options: Sequence[str] = (),
    bytecode: str = DEFAULT_MODE,
) -> Result:
    """The layer zip: serverless_retry and its dependencies under ``python/``, without Powertools when
    asked (for functions that attach AWS's public Powertools layer), with their bytecode as
    :func:`build_function` has it."""
    result = Result(out, list(targets), [], [], [])
    with tempfile.TemporaryDirectory(prefix="serverless-retry-layer-") as tmp:
        dropped = [POWERTOOLS] if without_powertools else []
        requirement_args = library_requirements(without_powertools)
        entries, parts, gone = _install(
            targets=targets,
            requirement_args=requirement_args,
            prefix=LAYER_PREFIX,
            pip_options=pip_options,
            dropped=dropped,
            work=Path(tmp),
        )
        result.left_out = _left_out(gone, without_powertools)
        library = _library_files(LAYER_PREFIX)
        add_entries(entries, library, "serverless_retry")
        result.parts.append(_own(f"serverless-retry {serverless_retry.__version__}", library))
        result.parts += sorted(parts.values(), key=lambda p: p.name.lower())
        return _finish(entries, result, deployed_root=LAYER_ROOT, bytecode=bytecode)
