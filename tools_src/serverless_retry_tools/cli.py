"""The ``serverless-retry`` command: simulate a policy, inspect and redrive the exhausted queue, and
(with the ``local`` extra) run the local emulator and the demo. One module per subcommand, under
:mod:`serverless_retry_tools.commands` and :mod:`serverless_retry_tools.local.cli`."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from serverless_retry.errors import PolicyError

from serverless_retry_tools.commands import inspect_queue, redrive, simulate


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="serverless-retry", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    for command in (simulate, inspect_queue, redrive):
        command.register(sub)
    try:
        from serverless_retry_tools.local.cli import register
    except ImportError:  # the local runtime needs the [local] extra (moto)
        pass
    else:
        register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args))
    except PolicyError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
