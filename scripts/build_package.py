"""Build dist/serverless-retry.zip (the function zip) or, with --layer, the layer zip (``python/``), for
every Lambda runtime the consumer module allows, byte-for-byte reproducible.

One zip serves python3.11, 3.12 and 3.13 on arm64 and x86_64: the pinned runtime dependencies
(requirements/runtime.txt) are installed once per (Python version, architecture) from manylinux wheels
that the runtime's OS can load, and the installs are merged
(tools_src/serverless_retry_tools/bundling: the same code ``serverless-retry package`` builds users'
zips with). Pure files are the same in every install; compiled extensions carry the version and
architecture in their file names, so they sit side by side. Any other file that differs between
installs is a conflict and stops the build.

Every module carries its bytecode for each of the three Pythons (``__pycache__/*.cpython-3XY.pyc``,
PEP 552 unchecked hash-based: tools_src/serverless_retry_tools/bundling/bytecode.py says why),
compiled by an interpreter of that version found on this machine (PATH, pyenv, uv). A version with
none is left with sources only and said so; ``--bytecode require`` makes that an error instead.

Standard library only: build.sh runs it while the virtualenv is still being installed, so the bundling
modules are imported from the source tree.
"""

from __future__ import annotations

import argparse
import hashlib
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools_src"))

from serverless_retry_tools.bundling.bytecode import (  # noqa: E402
    DEFAULT_MODE,
    FUNCTION_ROOT,
    LAYER_ROOT,
    MODES,
    Bytecode,
    add_bytecode,
    warnings_of,
)
from serverless_retry_tools.bundling.installs import install_pinned  # noqa: E402
from serverless_retry_tools.bundling.targets import ARCHITECTURES, RUNTIMES, Target  # noqa: E402
from serverless_retry_tools.bundling.zips import (  # noqa: E402
    BundleError,
    add_entries,
    iter_files,
    merge_installs,
    write_zip,
)

TARGETS = [Target(python, machine) for python in RUNTIMES for machine in sorted(ARCHITECTURES.values())]


def build(out: Path, extra: list[Path], layer: bool = False, bytecode: str = DEFAULT_MODE) -> str:
    """Write the zip to ``out`` and return its sha256. ``extra``: user code (an example's processor) at
    the zip's root; ``layer``: everything under python/ (where Lambda looks in a layer); ``bytecode``:
    a mode of :mod:`serverless_retry_tools.bundling.bytecode`. A Python left without bytecode is
    said on stderr (callers such as scripts/release.py print nothing else of it)."""
    digest, report = build_with_report(out, extra, layer, bytecode)
    for warning in warnings_of(report):
        print(f"warning: {out.name}: {warning}", file=sys.stderr)
    return digest


def build_with_report(
    out: Path, extra: list[Path], layer: bool = False, bytecode: str = DEFAULT_MODE
) -> tuple[str, Bytecode]:
    """:func:`build`, and what bytecode went in."""
    requirements = ROOT / "requirements" / "runtime.txt"
    cache = ROOT / "build" / "package"
    prefix = "python/" if layer else ""
    # One install first, then the other five side by side (each a pip process that mostly waits on its
    # index): a pip compiles its own modules on first use, and six first uses at once compiled them six
    # times, ~4 s of CPU on a fresh clone.
    first, *rest = TARGETS
    paths = [install_pinned(requirements, cache, first)]
    with ThreadPoolExecutor(len(rest)) as pool:
        paths += pool.map(lambda t: install_pinned(requirements, cache, t), rest)
    installs = {t.label: iter_files(path) for t, path in zip(TARGETS, paths, strict=True)}
    entries = merge_installs(installs, prefix)
    add_entries(
        entries, iter_files(ROOT / "lambda_src" / "serverless_retry", prefix + "serverless_retry/"), "ours"
    )
    for path in extra:
        # Extra user code (an example's processor): files go to the zip root, packages keep their name.
        files = iter_files(path, prefix + path.name + "/") if path.is_dir() else [(prefix + path.name, path)]
        add_entries(entries, files, str(path))
    report = add_bytecode(
        entries, RUNTIMES, deployed_root=LAYER_ROOT if layer else FUNCTION_ROOT, mode=bytecode
    )
    write_zip(entries, out)
    return hashlib.sha256(out.read_bytes()).hexdigest(), report


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--out", type=Path, default=ROOT / "dist" / "serverless-retry.zip")
    parser.add_argument(
        "--extra",
        type=Path,
        action="append",
        default=[],
        help="a file or package directory of user code to add (e.g. an example's processor)",
    )
    parser.add_argument("--layer", action="store_true", help="a layer zip: everything under python/")
    parser.add_argument(
        "--bytecode",
        choices=MODES,
        default=DEFAULT_MODE,
        help="auto (default): bytecode for each Python found here, a warning for the others; "
        "require: stop unless all three are; none: sources only",
    )
    args = parser.parse_args()
    try:
        digest, report = build_with_report(args.out, args.extra, args.layer, args.bytecode)
    except BundleError as exc:
        raise SystemExit(f"error: {exc}") from None
    print(f"{args.out}  sha256={digest}  {report.summary()}")
    for warning in warnings_of(report):
        print(f"warning: {warning}", file=sys.stderr)


if __name__ == "__main__":
    main()
