"""Build a Lambda deployment package, byte-for-byte reproducible, for the runtime's Python version and
architecture (wheels chosen for Lambda's platform, not for the machine that builds):

  function  your handler's source directory and its requirements file, as a function zip. It carries
            serverless_retry only when the requirements name serverless-retry or
            --with-serverless-retry asks; boto3 comes with the Lambda runtime and is left out unless
            the requirements name it.
  layer     serverless_retry and its dependencies under python/, as a layer zip; --without-powertools
            leaves Powertools out for functions that attach AWS's public Powertools layer.

The zip is written to a temporary file and renamed into place: a failed build leaves no zip behind.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from serverless_retry_tools.bundling.bytecode import DEFAULT_MODE, MODES
from serverless_retry_tools.bundling.targets import (
    ARCHITECTURES,
    DEFAULT_ARCH,
    DEFAULT_PYTHON,
    RUNTIMES,
    Target,
    TargetError,
    parse_arch,
    parse_python,
)
from serverless_retry_tools.commands.args import EXAMPLES_FORMATTER, UsageError

EXAMPLES = """\
examples:
  serverless-retry package function src/ -r requirements.txt --python 3.12 --arch arm64 -o build/orders.zip
  serverless-retry package function src/ -r requirements.txt --with-serverless-retry -o build/consumer.zip
  serverless-retry package layer --python 3.12 --arch arm64 -o build/serverless-retry-layer.zip
  serverless-retry package layer --without-powertools -o build/layer-for-powertools-layer.zip

Give --python and --arch more than once for one zip that serves several runtimes (compiled wheels sit
side by side; a pure file that differs between runtimes stops the build).
"""


def _python(text: str) -> str:
    try:
        return parse_python(text)
    except TargetError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _arch(text: str) -> str:
    try:
        return parse_arch(text)
    except TargetError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _common(parser: argparse.ArgumentParser, default_out: str) -> None:
    parser.add_argument(
        "--python",
        type=_python,
        action="append",
        metavar="VERSION",
        help=f"the Lambda runtime's Python: {', '.join(RUNTIMES)} (default {DEFAULT_PYTHON}; repeatable)",
    )
    parser.add_argument(
        "--arch",
        type=_arch,
        action="append",
        metavar="ARCH",
        help=f"the function's architecture: {', '.join(ARCHITECTURES)} (default {DEFAULT_ARCH}; repeatable)",
    )
    parser.add_argument(
        "--without-powertools",
        action="store_true",
        help="leave aws-lambda-powertools out (attach AWS's public Powertools layer, v3, instead)",
    )
    parser.add_argument("-o", "--out", type=Path, default=Path(default_out), help=f"default {default_out}")
    parser.add_argument(
        "--find-links",
        action="append",
        default=[],
        metavar="DIR",
        help="also look for wheels in DIR (pip's --find-links; repeatable)",
    )
    parser.add_argument("--no-index", action="store_true", help="only --find-links, no package index")
    parser.add_argument("-c", "--constraint", type=Path, help="pin versions with a pip constraints file")
    parser.add_argument(
        "--bytecode",
        choices=MODES,
        default=DEFAULT_MODE,
        help="each module's bytecode for the runtime's Python, compiled by an interpreter of that version: "
        "auto (default) warns for a version not on this machine, require stops the build, none ships "
        "sources only",
    )
    parser.add_argument("--json", action="store_true", help="what went in, as one JSON document")


def register(sub: Any) -> None:
    package = sub.add_parser(
        "package",
        help="build a function zip or a layer zip for a Lambda runtime",
        description=__doc__,
        epilog=EXAMPLES,
        formatter_class=EXAMPLES_FORMATTER,
    )
    kinds = package.add_subparsers(dest="kind", required=True)
    function = kinds.add_parser(
        "function",
        help="your source directory and requirements as a function zip",
        description=__doc__,
        epilog=EXAMPLES,
        formatter_class=EXAMPLES_FORMATTER,
    )
    function.add_argument("source", type=Path, help="the directory holding your handler's code")
    function.add_argument("-r", "--requirements", type=Path, help="a pip requirements file")
    function.add_argument(
        "--with-serverless-retry",
        action="store_true",
        help="carry serverless_retry (and its dependencies) even if the requirements do not name it",
    )
    _common(function, "dist/function.zip")
    function.set_defaults(func=cmd_package)
    layer = kinds.add_parser(
        "layer",
        help="serverless_retry and its dependencies as a layer zip (python/)",
        description=__doc__,
        epilog=EXAMPLES,
        formatter_class=EXAMPLES_FORMATTER,
    )
    _common(layer, "dist/serverless-retry-layer.zip")
    layer.set_defaults(func=cmd_package)


def _size(n: int) -> str:
    if n < 1000:
        return f"{n} B"
    return f"{n / 1000:.1f} kB" if n < 1_000_000 else f"{n / 1_000_000:.1f} MB"


def cmd_package(args: argparse.Namespace) -> int:
    from serverless_retry_tools.bundling.bundle import Result, build_function, build_layer
    from serverless_retry_tools.bundling.zips import BundleError

    targets = sorted(
        {
            Target(python, arch)
            for python in args.python or [DEFAULT_PYTHON]
            for arch in args.arch or [ARCHITECTURES[DEFAULT_ARCH]]
        }
    )
    pip_options = [arg for d in args.find_links for arg in ("--find-links", str(d))]
    pip_options += ["--no-index"] if args.no_index else []
    pip_options += ["-c", str(args.constraint)] if args.constraint else []
    try:
        result: Result
        if args.kind == "function":
            result = build_function(
                args.source,
                args.out,
                targets,
                requirements=args.requirements,
                with_library=args.with_serverless_retry,
                without_powertools=args.without_powertools,
                pip_options=pip_options,
                bytecode=args.bytecode,
            )
        else:
            result = build_layer(
                args.out,
                targets,
                without_powertools=args.without_powertools,
                pip_options=pip_options,
                bytecode=args.bytecode,
            )
    except BundleError as exc:
        raise UsageError(str(exc)) from None
    if args.json:
        print(json.dumps(_as_json(result), indent=2))
    else:
        _print(args.kind, result)
    for warning in result.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    return 0


def _as_json(result: Any) -> dict[str, Any]:
    def part(p: Any) -> dict[str, Any]:
        return {"name": p.name, "versions": sorted(p.versions), "files": p.files, "bytes": p.size}

    return {
        "zip": str(result.out),
        "sha256": result.sha256,
        "bytes": result.zipped,
        "unpacked_bytes": result.unpacked,
        "files": result.files,
        "targets": [t.label for t in result.targets],
        "contents": [part(p) for p in result.parts],
        "left_out": [part(p) for p in result.left_out],
        "bytecode": {
            "mode": result.bytecode.mode,
            "files": result.bytecode.files,
            "compiled": {v: i.cache_tag for v, i in sorted(result.bytecode.compiled.items())},
            "missing": result.bytecode.missing,
        },
        "warnings": result.warnings,
    }


def _print(kind: str, result: Any) -> None:
    print(f"{kind} zip for {', '.join(t.label for t in result.targets)}: {result.out}")
    for p in result.parts:
        version = f" {'/'.join(sorted(p.versions))}" if p.versions else ""
        sizes = f"  {p.files} files, {_size(p.size)}" if p.files else ""
        print(f"  + {p.name}{version}{sizes}")
    for p in result.left_out:
        version = f" {'/'.join(sorted(p.versions))}" if p.versions else ""
        print(f"  - {p.name}{version}  left out: the Lambda runtime or a layer provides it")
    print(f"  {result.bytecode.summary()}")
    print(
        f"  {result.files} files, {_size(result.zipped)} zipped, {_size(result.unpacked)} unpacked, "
        f"sha256 {result.sha256}"
    )
