"""The ``demo`` and ``local`` subcommands of ``serverless-retry`` (registered by ``cli.build_parser``)."""

from __future__ import annotations

import argparse
import json
import signal
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from serverless_retry_tools.local.runtime.functions import DEFAULT_MAX_CONCURRENCY

__all__ = ["demo_defaults", "register"]


def register(subparsers: Any) -> None:
    demo = subparsers.add_parser(
        "demo",
        help="run an example (scheduled-retry, self-healing, native-retry or stream) end to end on the "
        "local AWS emulator",
        description="Apply examples/<example> to a local emulator, send a mixed workload, run the "
        "local runtime until every message is final, account for each one, destroy.",
    )
    demo.add_argument(
        "--orders",
        type=int,
        help="number of orders to send (default 100; native-retry 40; stream 200 per stream)",
    )
    demo.add_argument(
        "--clock-scale",
        type=float,
        help="logical seconds per real second (default 100; self-healing 10, as its pipeline between two "
        "attempts runs in real time; native-retry 6, so the fix lands well within maxReceiveCount; stream 20)",
    )
    demo.add_argument(
        "--function-timeout",
        type=int,
        default=30,
        help="the consumer's timeout in real seconds (default 30, the module's; the queue's visibility "
        "timeout is 6 x this in logical seconds)",
    )
    demo.add_argument(
        "--deadline",
        type=float,
        help="real seconds to wait for every message (default 150; self-healing 240; native-retry 300; "
        "stream 120)",
    )
    demo.add_argument("--seed", type=int, default=7, help="workload seed (default 7)")
    demo.add_argument("--work-dir", help="where logs, state and the accounting go (default: a temp dir)")
    demo.add_argument("--repo", help="the serverless-retry checkout (default: found from this package)")
    demo.add_argument(
        "--skip-destroy", dest="keep", action="store_true", help="do not run terraform destroy at the end"
    )
    demo.add_argument(
        "example",
        nargs="?",
        default="scheduled-retry",
        choices=tuple(_DEMO_DEFAULTS),
        help="which example to run (default scheduled-retry)",
    )
    demo.add_argument(
        "--messages", type=int, default=5, help="self-healing: messages published to each topic (default 5)"
    )
    demo.set_defaults(func=_cmd_demo)

    local = subparsers.add_parser(
        "local",
        help="apply a Terraform root to the local AWS emulator and run it",
        description="Start the emulator, apply --root to it (terraform gets AWS_ENDPOINT_URL and test "
        "credentials, and -var aws_endpoint_url=... and -var aws_endpoint_url_in_environment=true when "
        "the root declares them), then run its event source mappings, schedules and pipes until "
        "--duration passes, Ctrl-C or SIGTERM (both "
        "let running invocations finish, then destroy unless --no-destroy). 'serverless-retry local "
        "apply --ready-file F' re-applies a changed root to it while it runs.",
    )
    local.add_argument("--root", help="the Terraform root directory to apply (required)")
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
    local.add_argument(
        "--max-concurrency",
        type=_positive_int,
        default=DEFAULT_MAX_CONCURRENCY,
        metavar="N",
        help="invocations of one function that run at once, each in its own worker process, below the "
        f"function's reserved concurrency if lower; also caps an event source mapping's concurrent "
        f"batches (default {DEFAULT_MAX_CONCURRENCY})",
    )
    local.add_argument(
        "--ready-file",
        metavar="PATH",
        help="once the apply is done and the pollers run, write JSON here: endpoint, region, the state "
        "file, the root's outputs, the clock (epoch, scale), the work dir, this process's pid and how the "
        "root was applied (for 'local apply'); removed at exit",
    )
    local.set_defaults(func=_cmd_local)
    actions = local.add_subparsers(dest="local_action", metavar="{apply}")
    again = actions.add_parser(
        "apply",
        help="re-apply a changed root to a running 'serverless-retry local' (e.g. the fix)",
        description="Init and apply a Terraform root to a running 'serverless-retry local', which keeps "
        "polling meanwhile: the state file, TF_DATA_DIR, Terraform CLI configuration and variables come "
        "from the sandbox's ready file; --var overrides a variable, --root another directory (default the "
        "one the sandbox applied). The ready file then holds the new outputs and variables, and the "
        "sandbox destroys what is deployed at exit. Exit 1 when Terraform fails, 2 when no sandbox runs.",
    )
    again.add_argument(
        "--ready-file",
        dest="apply_ready_file",
        required=True,
        metavar="PATH",
        help="the sandbox's ready file",
    )
    again.add_argument(
        "--root",
        dest="apply_root",
        metavar="DIR",
        help="the root to apply (default: the one the sandbox applied)",
    )
    again.add_argument(
        "--var",
        dest="apply_vars",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="a root variable, over the sandbox's (repeatable)",
    )
    again.set_defaults(func=_cmd_local_apply)


# Each example's own defaults for the options it leaves to the user.
_DEMO_DEFAULTS: dict[str, dict[str, float]] = {
    "scheduled-retry": {"orders": 100, "clock_scale": 100.0, "deadline": 150.0},
    "self-healing": {"clock_scale": 10.0, "deadline": 240.0},
    "native-retry": {"orders": 40, "clock_scale": 6.0, "deadline": 300.0},
    "stream": {"orders": 200, "clock_scale": 20.0, "deadline": 120.0},
    "stream-retry": {"orders": 200, "clock_scale": 20.0, "deadline": 120.0},
}


def demo_defaults(args: argparse.Namespace) -> argparse.Namespace:
    """Fill the options left unset with the chosen example's defaults."""
    for name, value in _DEMO_DEFAULTS.get(args.example, _DEMO_DEFAULTS["scheduled-retry"]).items():
        if getattr(args, name, None) is None:
            setattr(args, name, value)
    return args


def _cmd_demo(args: argparse.Namespace) -> int:
    demo_defaults(args)
    if args.example == "self-healing":
        from serverless_retry_tools.local.demos.selfheal_demo import SelfHealingOptions, run_selfheal_demo

        return run_selfheal_demo(SelfHealingOptions.from_args(args, per_topic=args.messages), sys.stdout)
    if args.example == "native-retry":
        from serverless_retry_tools.local.demos.native_demo import native_demo_main

        return native_demo_main(args)
    if args.example in ("stream", "stream-retry"):
        from serverless_retry_tools.local.demos.stream_demo import stream_demo_main

        return stream_demo_main(args)
    from serverless_retry_tools.local.demos.scheduled_demo import demo_main

    return demo_main(args)


def _positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, not {value}")
    return value


def _parse_vars(pairs: list[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep or not name:
            raise SystemExit(f"error: --var expects NAME=VALUE, got {pair!r}")
        out[name] = value
    return out


class _Stopped(KeyboardInterrupt):
    """SIGTERM, handled exactly like Ctrl-C."""


def _on_sigterm(signum: int, frame: Any) -> None:
    raise _Stopped()


def _cmd_local_apply(args: argparse.Namespace) -> int:
    from serverless_retry_tools.local.sandbox.ready_file import ReadyFileError
    from serverless_retry_tools.local.sandbox.reapply import apply_to_sandbox
    from serverless_retry_tools.local.sandbox.terraform import TerraformError

    root = Path(args.apply_root) if args.apply_root else None
    if root is not None and not root.is_dir():
        print(f"error: {root} is not a directory", file=sys.stderr)
        return 2
    try:
        info = apply_to_sandbox(
            Path(args.apply_ready_file),
            root=root,
            overrides=_parse_vars(args.apply_vars),
            printer=lambda line: print(f"  {line}", flush=True),
        )
    except ReadyFileError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except TerraformError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    for name, value in info["outputs"].items():
        print(f"output {name} = {value}", flush=True)
    print(
        f"applied {info['terraform']['root']} to the sandbox at {info['endpoint']} (pid {info['pid']})",
        flush=True,
    )
    return 0


def _recorded_variables(ready_file: Path | None, applied: dict[str, Any]) -> dict[str, Any]:
    """The variables last applied: the ready file's, once 'local apply' changed them."""
    if ready_file is None:
        return applied
    try:
        recorded = json.loads(ready_file.read_text(encoding="utf-8"))["terraform"]["variables"]
    except (OSError, ValueError, KeyError, TypeError):
        return applied
    return dict(recorded) if isinstance(recorded, dict) else applied


def _cmd_local(args: argparse.Namespace) -> int:
    if not args.root:
        print(
            "error: serverless-retry local needs --root DIR (or: local apply --ready-file F)", file=sys.stderr
        )
        return 2
    previous = signal.signal(signal.SIGTERM, _on_sigterm)
    ready_file = Path(args.ready_file).resolve() if args.ready_file else None
    try:
        return _run_local(args, ready_file)
    finally:
        signal.signal(signal.SIGTERM, previous)
        if ready_file is not None:
            ready_file.unlink(missing_ok=True)


def _run_local(args: argparse.Namespace, ready_file: Path | None) -> int:
    from serverless_retry_tools.local.emulator.emulator import Emulator
    from serverless_retry_tools.local.emulator_contract import talk_environment, write_json_atomically
    from serverless_retry_tools.local.runtime.runtime import Runtime, RuntimeEvent
    from serverless_retry_tools.local.sandbox.ready_file import sandbox_info
    from serverless_retry_tools.local.sandbox.terraform import (
        Terraform,
        TerraformError,
        emulator_environment,
        emulator_variables,
    )

    root = Path(args.root).resolve()
    if not root.is_dir():
        print(f"error: {root} is not a directory", file=sys.stderr)
        return 2
    work_dir = (
        Path(args.work_dir) if args.work_dir else Path(tempfile.mkdtemp(prefix="serverless-retry-local-"))
    )
    variables: dict[str, Any] = _parse_vars(args.var)
    runtime: Runtime | None = None
    with Emulator(log_path=work_dir / "emulator.log", clock_scale=args.clock_scale) as emulator:
        print(f"emulator at {emulator.url} (work dir {work_dir})", flush=True)
        for name, value in emulator_variables(root, emulator.url).items():
            variables.setdefault(name, value)
        tf = Terraform(
            root,
            work_dir / "terraform",
            emulator_environment(work_dir / "terraform", emulator.env()),
            printer=lambda line: print(f"  {line}", flush=True),
        )
        try:
            try:
                tf.init()
                tf.apply(variables)
                outputs = tf.outputs()
            except TerraformError as exc:
                print(f"error: {exc}", file=sys.stderr)
                return 1
            for name, value in outputs.items():
                print(f"output {name} = {value}", flush=True)
            print(
                f"running event source mappings, schedules and pipes (clock x{args.clock_scale:g}); talk to it "
                f"with {talk_environment(emulator.url, emulator.region)}",
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
                max_concurrency=args.max_concurrency,
            )
            runtime.start()
            ready = sandbox_info(emulator, tf, variables, outputs, work_dir)
            if ready_file is not None:
                write_json_atomically(ready_file, ready)
            print(
                f"ready: endpoint {emulator.url}, region {emulator.region}, state {tf.state}"
                + (f"; ready file {ready_file}" if ready_file is not None else ""),
                flush=True,
            )
            started = time.monotonic()
            runtime.run(deadline_seconds=args.duration if args.duration is not None else 10 * 365 * 86400.0)
            print(f"ran {time.monotonic() - started:.0f} s: {runtime.stats}", flush=True)
        except KeyboardInterrupt as stop:
            # Ctrl-C or SIGTERM: stop polling, let running invocations finish, then destroy.
            print(f"\n{'SIGTERM' if isinstance(stop, _Stopped) else 'interrupted'}: draining", flush=True)
            if runtime is not None:
                runtime.stop()
                print(f"stopped: {runtime.stats}", flush=True)
        if not args.no_destroy:
            try:
                tf.destroy(_recorded_variables(ready_file, variables))
                print("destroyed", flush=True)
            except TerraformError as exc:
                print(f"warning: {exc}", file=sys.stderr)
    return 1 if runtime is not None and runtime.errors else 0
