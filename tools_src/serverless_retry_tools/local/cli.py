"""The ``demo`` and ``local`` subcommands of ``serverless-retry`` (registered by ``cli.build_parser``)."""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

__all__ = ["register"]


def register(subparsers: Any) -> None:
    demo = subparsers.add_parser(
        "demo",
        help="run the scheduled-retry example end to end on the local AWS emulator",
        description="Apply examples/scheduled-retry to a local emulator, send a mixed workload, run the "
        "local runtime until every message is final, account for each one, destroy.",
    )
    demo.add_argument("--orders", type=int, default=100, help="number of orders to send (default 100)")
    demo.add_argument(
        "--clock-scale", type=float, default=100.0, help="logical seconds per real second (default 100)"
    )
    demo.add_argument(
        "--function-timeout",
        type=int,
        default=30,
        help="the consumer's timeout in real seconds (default 30, the module's; the queue's visibility "
        "timeout is 6 x this in logical seconds)",
    )
    demo.add_argument(
        "--deadline", type=float, default=150.0, help="real seconds to wait for every message (default 150)"
    )
    demo.add_argument("--seed", type=int, default=7, help="workload seed (default 7)")
    demo.add_argument("--work-dir", help="where logs, state and the accounting go (default: a temp dir)")
    demo.add_argument("--repo", help="the serverless-retry checkout (default: found from this package)")
    demo.add_argument(
        "--skip-destroy", dest="keep", action="store_true", help="do not run terraform destroy at the end"
    )
    demo.set_defaults(func=_cmd_demo)

    local = subparsers.add_parser(
        "local",
        help="apply a Terraform root to the local AWS emulator and run it",
        description="Start the emulator, apply --root to it (terraform gets AWS_ENDPOINT_URL and test "
        "credentials, and -var aws_endpoint_url=... when the root declares that variable), then run its "
        "event source mappings, schedules and pipes until --duration passes or Ctrl-C, and destroy.",
    )
    local.add_argument("--root", required=True, help="the Terraform root directory to apply")
    local.add_argument(
        "--var", action="append", default=[], metavar="NAME=VALUE", help="a root variable (repeatable)"
    )
    local.add_argument(
        "--clock-scale", type=float, default=1.0, help="logical seconds per real second (default 1)"
    )
    local.add_argument("--duration", type=float, help="real seconds to run (default: until Ctrl-C)")
    local.add_argument("--work-dir", help="where logs and state go (default: a temp dir)")
    local.add_argument("--no-destroy", action="store_true", help="skip terraform destroy at the end")
    local.add_argument("--quiet", action="store_true", help="do not echo the functions' log lines")
    local.set_defaults(func=_cmd_local)


def _cmd_demo(args: argparse.Namespace) -> int:
    from serverless_retry_tools.local.demo import demo_main

    return demo_main(args)


def _parse_vars(pairs: list[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep or not name:
            raise SystemExit(f"error: --var expects NAME=VALUE, got {pair!r}")
        out[name] = value
    return out


def _cmd_local(args: argparse.Namespace) -> int:
    from serverless_retry_tools.local.emulator import Emulator
    from serverless_retry_tools.local.runtime import Runtime, RuntimeEvent
    from serverless_retry_tools.local.terraform import (
        Terraform,
        TerraformError,
        cli_environment,
        declared_variables,
    )

    root = Path(args.root).resolve()
    if not root.is_dir():
        print(f"error: {root} is not a directory", file=sys.stderr)
        return 2
    work_dir = (
        Path(args.work_dir) if args.work_dir else Path(tempfile.mkdtemp(prefix="serverless-retry-local-"))
    )
    variables: dict[str, Any] = _parse_vars(args.var)
    base = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    with Emulator(log_path=work_dir / "emulator.log", clock_scale=args.clock_scale) as emulator:
        print(f"emulator at {emulator.url} (work dir {work_dir})", flush=True)
        if "aws_endpoint_url" in declared_variables(root):
            variables.setdefault("aws_endpoint_url", emulator.url)
        tf = Terraform(
            root,
            work_dir / "terraform",
            cli_environment(work_dir / "terraform", {**base, **emulator.env()}),
            printer=lambda line: print(f"  {line}", flush=True),
        )
        try:
            tf.init()
            tf.apply(variables)
            for name, value in tf.outputs().items():
                print(f"output {name} = {value}", flush=True)
        except TerraformError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 1
        print(
            f"running event source mappings, schedules and pipes (clock x{args.clock_scale:g}); talk to it with "
            f"AWS_ENDPOINT_URL={emulator.url} AWS_ACCESS_KEY_ID=testing AWS_SECRET_ACCESS_KEY=testing",
            flush=True,
        )

        def on_event(event: RuntimeEvent) -> None:
            if event.kind != "async-invoke":
                print(f"[{event.kind}] {event.detail}", flush=True)

        runtime = Runtime(
            emulator.url,
            region=emulator.region,
            work_dir=work_dir / "runtime",
            on_event=on_event,
            echo_logs=not args.quiet,
        )
        started = time.monotonic()
        try:
            runtime.run(deadline_seconds=args.duration if args.duration is not None else 10 * 365 * 86400.0)
        except KeyboardInterrupt:
            runtime.stop()
            print("\ninterrupted", flush=True)
        print(f"ran {time.monotonic() - started:.0f} s: {runtime.stats}", flush=True)
        if not args.no_destroy:
            try:
                tf.destroy(variables)
            except TerraformError as exc:
                print(f"warning: {exc}", file=sys.stderr)
    return 1 if runtime.errors else 0
