"""``./build.sh test-aws``: the entry point of the opt-in tier (``python -m serverless_retry_tools.aws_tier``).

Without the opt-in (``SERVERLESS_RETRY_AWS_TIER=yes`` and ``--region``) or without credentials it
prints what it would do, how to opt in, the expected time and the estimated cost, and exits 0
having called nothing. With them it prints the time and cost again, then for each example: apply
under ``<prefix>-<short>`` (the prefix ``srt-<8 hex>`` is new each run), the scenario, the
recursion settings, destroy; the service-level fidelity checks once; and, whatever happened (a
failure, Ctrl-C, SIGTERM), ``terraform destroy`` of every applied example and a sweep of everything
named with the prefix. Exit status 0 only when every scenario and check passed and nothing is left.

``--emulator`` runs the same code against a local emulator it starts (no opt-in needed, nothing
leaves 127.0.0.1): that is how ``./build.sh test`` runs it.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import secrets
import shutil
import signal
import sys
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import Any, TextIO

from serverless_retry_tools.aws_tier.cleanup import PREFIX_PATTERN, Found, sweep
from serverless_retry_tools.aws_tier.estimate import EXAMPLES, estimate, render
from serverless_retry_tools.aws_tier.fidelity import Check, recursion_checks, service_checks
from serverless_retry_tools.aws_tier.scenarios import SCENARIOS, Outcome
from serverless_retry_tools.aws_tier.targets import (
    OPT_IN_ENV,
    OPT_IN_VALUE,
    AwsTarget,
    EmulatorTarget,
    Gate,
    Target,
    opt_in,
)
from serverless_retry_tools.local.demos.demo_frame import ProgressLines, find_repo_root
from serverless_retry_tools.local.sandbox.terraform import Terraform, TerraformError

__all__ = ["Report", "main", "new_prefix", "run_tier"]


GATE_CLOSED = 10


def new_prefix() -> str:
    return f"srt-{secrets.token_hex(4)}"


@dataclass
class Report:
    prefix: str
    outcomes: list[Outcome] = field(default_factory=list)
    checks: list[Check] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    left: Found = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return (
            bool(self.outcomes)
            and all(o.ok for o in self.outcomes)
            and all(c.ok for c in self.checks)
            and not self.errors
            and not self.left
        )


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="./build.sh test-aws", description=__doc__.split("\n\n")[0])
    p.add_argument("--region", help="the AWS region to deploy to (required with the opt-in)")
    p.add_argument(
        "--examples",
        default=",".join(e.name for e in EXAMPLES),
        help="comma-separated examples to run (default: all three)",
    )
    p.add_argument(
        "--with-monitoring", action="store_true", help="deploy the examples' alarms and dashboards too"
    )
    p.add_argument("--work-dir", help="Terraform state and logs (default: build/aws-tier/<prefix>)")
    p.add_argument("--cleanup", metavar="PREFIX", help="only sweep the resources of an earlier run's prefix")
    p.add_argument(
        "--emulator", action="store_true", help="run against a local emulator (what ./build.sh test does)"
    )
    p.add_argument(
        "--gate-only",
        action="store_true",
        help=f"exit 0 when the run may call AWS, else explain and exit {GATE_CLOSED} (build.sh's first step)",
    )
    return p


def _explain(gate: Gate, examples: Sequence[str], with_monitoring: bool, out: ProgressLines) -> None:
    plan = estimate([e for e in EXAMPLES if e.name in examples], with_monitoring=with_monitoring)
    out("serverless-retry AWS tier: NOT run; nothing was called.", stamp=False)
    for reason in gate.reasons:
        out(f"  - {reason}", stamp=False)
    out("", stamp=False)
    out(
        "What it would do, in your account, under a new prefix srt-<8 hex> (so runs never collide):",
        stamp=False,
    )
    for e in plan.examples:
        out(f"  - examples/{e.name} as <prefix>-{e.short}: apply; {e.what};", stamp=False)
        out(
            "    every message accounted for as ./build.sh demo does; recursive loop settings read back; destroy",
            stamp=False,
        )
    out(
        "  - fidelity checks by API call: SQS refusing DelaySeconds > 900, a FIFO send without a dedup id,",
        stamp=False,
    )
    out("    a DelaySeconds honoured, the Scheduler refusing a FIFO dead-letter queue", stamp=False)
    out(
        "  - always: terraform destroy, then a sweep of everything named <prefix>-* (also on failure or Ctrl-C)",
        stamp=False,
    )
    out("", stamp=False)
    for line in render(plan):
        out(line, stamp=False)
    out("", stamp=False)
    out(
        "To run it (credentials from boto3's default chain: AWS_PROFILE, AWS_ACCESS_KEY_ID, SSO, ...):",
        stamp=False,
    )
    out(f"  {OPT_IN_ENV}={OPT_IN_VALUE} ./build.sh test-aws --region eu-west-1", stamp=False)
    out("Leftovers of an interrupted run: the same with --cleanup srt-xxxxxxxx.", stamp=False)


@contextlib.contextmanager
def _terminate_as_interrupt() -> Iterator[None]:
    """SIGTERM raises KeyboardInterrupt like Ctrl-C does, so the finally blocks destroy and sweep."""

    def handler(signum: int, frame: FrameType | None) -> None:
        raise KeyboardInterrupt(f"signal {signum}")

    try:
        previous: Any = signal.signal(signal.SIGTERM, handler)
    except ValueError:  # not the main thread: leave signals alone
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _deploy_and_run(
    target: Target,
    example: str,
    *,
    prefix: str,
    repo: Path,
    work_dir: Path,
    with_monitoring: bool,
    out: ProgressLines,
    report: Report,
) -> None:
    scenario = SCENARIOS[example]
    short = next(e.short for e in EXAMPLES if e.name == example)
    root = repo / "examples" / example
    package = repo / "dist" / "examples" / f"{example}.zip"
    if not package.is_file():
        report.errors.append(f"{package} is missing: run ./build.sh package")
        return
    here = work_dir / example
    here.mkdir(parents=True, exist_ok=True)
    copy = here / f"{example}.zip"
    shutil.copyfile(package, copy)
    variables = {
        **target.variables(root),
        "name": f"{prefix}-{short}",
        "package": str(copy),
        "monitoring": with_monitoring,
        "tags": {"project": "serverless-retry", "serverless-retry-aws-tier": prefix},
        **scenario.variables,
    }
    tf = Terraform(root, here / "terraform", target.terraform_env(here / "terraform"), timeout_seconds=1800)
    applied = False
    try:
        tf.init()
        out(f"{example}: terraform apply as {prefix}-{short}")
        applied = True  # a failed apply may still have created some: destroy in any case
        tf.apply(variables)
        out(f"{example}: applied in {tf.timings['apply']:.0f} s")
        outputs = tf.outputs()
        target.start_invoking(here)
        try:
            outcome = scenario.run(target, outputs, out, here)
        finally:
            target.stop_invoking()
        report.outcomes.append(outcome)
        out(f"{example}: {'OK' if outcome.ok else 'FAILED'}: {outcome.summary}")
        for problem in outcome.problems:
            out(f"{example}: problem: {problem}")
        report.checks.extend(recursion_checks(target, scenario.recursion(outputs)))
    except TerraformError as exc:
        report.errors.append(f"{example}: {str(exc)[:2000]}")
        out(f"{example}: error: {str(exc)[:2000]}")
    finally:
        if applied:
            _destroy(tf, variables, example=example, refresh=target.kind == "aws", out=out, report=report)


def _destroy(
    tf: Terraform,
    variables: dict[str, Any],
    *,
    example: str,
    refresh: bool,
    out: ProgressLines,
    report: Report,
) -> None:
    """``terraform destroy``; once more after a fresh ``init`` if it fails (the configuration may have
    gained a module since the apply, or a call may have been throttled). The sweep follows anyway."""
    for attempt in (1, 2):
        try:
            if attempt == 2:
                tf.init()
            tf.destroy(variables, refresh=refresh)
            out(f"{example}: destroyed in {tf.timings.get('destroy', 0):.0f} s")
            return
        except TerraformError as exc:
            if attempt == 2:
                report.errors.append(f"{example}: destroy failed (the sweep follows): {str(exc)[-800:]}")
                out(f"{example}: destroy failed; the sweep by prefix follows")
            else:
                out(f"{example}: destroy failed; init and destroy once more")


def run_tier(
    target: Target,
    *,
    examples: Sequence[str],
    prefix: str,
    work_dir: Path,
    repo: Path,
    out: ProgressLines,
    with_monitoring: bool = False,
) -> Report:
    """Deploy, run, check and destroy each example, then the service checks, then the sweep."""
    report = Report(prefix)
    try:
        with _terminate_as_interrupt():
            for example in examples:
                _deploy_and_run(
                    target,
                    example,
                    prefix=prefix,
                    repo=repo,
                    work_dir=work_dir,
                    with_monitoring=with_monitoring,
                    out=out,
                    report=report,
                )
            out("fidelity checks")
            try:
                report.checks.extend(service_checks(target, prefix))
            except Exception as exc:
                report.errors.append(f"fidelity checks: {type(exc).__name__}: {exc}")
    except KeyboardInterrupt:
        report.errors.append("interrupted")
        out("interrupted: destroying and sweeping")
    finally:
        out(f"sweeping everything named {prefix}-*")
        report.left = sweep(target, prefix, out=out)
    return report


def _summary(report: Report, target: Target, started: float, out: ProgressLines) -> None:
    out("", stamp=False)
    out(f"summary ({target.kind}, prefix {report.prefix}, {time.monotonic() - started:.0f} s):", stamp=False)
    for o in report.outcomes:
        out(f"  {'ok  ' if o.ok else 'FAIL'} scenario {o.example}: {o.summary}", stamp=False)
    for c in report.checks:
        out(f"  {'ok  ' if c.ok else 'FAIL'} {c.row}: expected {c.expected}, got {c.observed}", stamp=False)
    for e in report.errors:
        out(f"  FAIL {e[:300]}", stamp=False)
    if report.left:
        out(f"  FAIL left behind: {report.left}", stamp=False)
    else:
        out(f"  ok   nothing named {report.prefix}-* is left", stamp=False)
    out("OK" if report.ok else "FAILED", stamp=False)


def main(argv: Sequence[str] | None = None, stream: TextIO = sys.stdout) -> int:
    args = _parser().parse_args(argv)
    out = ProgressLines(stream)
    examples = [e.strip() for e in args.examples.split(",") if e.strip()]
    unknown = [e for e in examples if e not in SCENARIOS]
    if unknown or not examples:
        out(f"unknown example(s) {unknown}: choose from {', '.join(SCENARIOS)}", stamp=False)
        return 2
    repo = find_repo_root()
    if args.cleanup and not PREFIX_PATTERN.match(args.cleanup):
        out(f"--cleanup {args.cleanup!r}: a prefix is srt- and 8 hex digits", stamp=False)
        return 2
    prefix = args.cleanup or new_prefix()
    work_dir = Path(args.work_dir or repo / "build" / "aws-tier" / prefix).resolve()
    if args.emulator:
        with EmulatorTarget(work_dir) as emulator:
            return _run(
                emulator, args, examples=examples, prefix=prefix, work_dir=work_dir, repo=repo, out=out
            )
    if args.gate_only and args.emulator:
        return 0
    gate = opt_in(os.environ, args.region)
    if not gate.open:
        _explain(gate, examples, args.with_monitoring, out)
        return GATE_CLOSED if args.gate_only else 0
    if args.gate_only:
        return 0
    work_dir.mkdir(parents=True, exist_ok=True)
    return _run(
        AwsTarget(str(args.region)),
        args,
        examples=examples,
        prefix=prefix,
        work_dir=work_dir,
        repo=repo,
        out=out,
    )


def _run(
    target: Target,
    args: Any,
    *,
    examples: list[str],
    prefix: str,
    work_dir: Path,
    repo: Path,
    out: ProgressLines,
) -> int:
    started = time.monotonic()
    if args.cleanup:
        left = sweep(target, prefix, out=out)
        out(f"nothing named {prefix}-* is left" if not left else f"left behind: {left}", stamp=False)
        return 0 if not left else 1
    plan = estimate([e for e in EXAMPLES if e.name in examples], with_monitoring=args.with_monitoring)
    out(
        f"serverless-retry AWS tier against {target.kind} ({target.region}), prefix {prefix}, work dir {work_dir}"
    )
    for line in render(plan):
        out(line, stamp=False)
    if target.kind == "aws":
        out(
            f"leftovers, if this run is killed: {OPT_IN_ENV}={OPT_IN_VALUE} ./build.sh test-aws --region {target.region} --cleanup {prefix}",
            stamp=False,
        )
    report = run_tier(
        target,
        examples=examples,
        prefix=prefix,
        work_dir=work_dir,
        repo=repo,
        out=out,
        with_monitoring=args.with_monitoring,
    )
    _summary(report, target, started, out)
    return 0 if report.ok else 1


if __name__ == "__main__":  # python -m serverless_retry_tools.aws_tier.runner, as the package
    sys.exit(main())
