"""``serverless-retry redrive``: move messages out of a retry-exhausted queue or a DLQ, safely (each is
sent before it is deleted), filtered, rate-limited, with a dry run; or start SQS's own move task."""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Any

from serverless_retry.clock import Clock
from serverless_retry.native_redrive import check_native, start_native, wait_native
from serverless_retry.queue_redrive import RedriveReport, attribute_int, redrive
from serverless_retry.redrive_options import RedriveOptions, options_from_mapping

from serverless_retry_tools.commands.args import EXAMPLES_FORMATTER, duration, int_range, rate
from serverless_retry_tools.commands.aws import add_aws_arguments, lambda_client, sqs_client
from serverless_retry_tools.commands.clock import command_clock
from serverless_retry_tools.commands.inspect_queue import _age, _short
from serverless_retry_tools.console import Progress, print_table

EXAMPLES = """\
examples:
  # what would move: exhausted TimeoutErrors older than an hour, at most 500 (changes nothing)
  serverless-retry redrive --from-queue-url "$EXHAUSTED_URL" --to-queue-url "$QUEUE_URL" \\
      --outcome exhausted --error-type TimeoutError --older-than 1h --max 500 --dry-run
  # the same for real, 20 messages a second, each with a fresh retry budget
  serverless-retry redrive --from-queue-url "$EXHAUSTED_URL" --to-queue-url "$QUEUE_URL" \\
      --outcome exhausted --error-type TimeoutError --older-than 1h --max 500 --rate 20/s --reset-attempts
  # a DLQ fed by an SQS redrive policy: SQS's own move task, back to the source queue
  serverless-retry redrive --from-queue-url "$DLQ_URL" --native --rate 50
  # self-healing: each exhausted event back to the function that failed (async invoke), one function only
  serverless-retry redrive --from-queue-url "$HEAL_EXHAUSTED_URL" --to-function --source charge-fn \\
      --error-type HTTPError --dry-run

Every message is sent to the destination before it is deleted here; skipped messages and whatever is
left when a run stops stay where they were, visible again. By default a message keeps its id, attempt
count and history (if it fails again it is exhausted at once); --reset-attempts sends the original
body and attributes with a fresh budget. Plain DLQ messages go back verbatim either way.
--to-function re-invokes, asynchronously, the function a self-healing record (or a Lambda on-failure
destination record) says failed, with the event as it first arrived and its retry state continued
(--reset-attempts: as it first arrived, a fresh budget); --to-function NAME only that function. A
self-healing record is refused for --to-queue-url, and any other message for --to-function: it stays.
--native (StartMessageMoveTask) moves every message of a DLQ fed by an SQS redrive policy, unchanged,
at up to 500 messages a second; it refuses, saying why, for a retry-exhausted queue (final envelopes
must be unwrapped), Lambda destination records and Scheduler dead-letter events.
exit status: 0 ok; 1 partial failure (a message failed, or the run stopped early: nothing was lost);
2 usage error (including --native where it cannot apply).
"""


def _options(args: argparse.Namespace) -> RedriveOptions:
    return options_from_mapping(
        {
            "from_queue_url": args.from_queue_url,
            "to_queue_url": args.to_queue_url,
            "to_function": args.to_function,
            "outcome": args.outcome,
            "error_type": args.error_type,
            "source": args.source,
            "older_than": args.older_than,
            "newer_than": args.newer_than,
            "max": args.max,
            "rate": args.rate,
            "reset_attempts": args.reset_attempts,
            "dry_run": args.dry_run,
            "native": args.native,
            "message_group_id": args.message_group_id,
        }
    )


def _filters(options: RedriveOptions) -> str:
    parts = [
        f"{name} {'|'.join(values)}"
        for name, values in (
            ("outcome", options.outcomes),
            ("error type", options.error_types),
            ("source", options.sources),
        )
        if values
    ]
    if options.older_than is not None:
        parts.append(f"older than {_age(options.older_than)}")
    if options.newer_than is not None:
        parts.append(f"newer than {_age(options.newer_than)}")
    if options.max_messages is not None:
        parts.append(f"at most {options.max_messages}")
    return ", ".join(parts) or "every message"


def _destination(options: RedriveOptions) -> str:
    if options.to_function:
        return f"function {options.function}" if options.function else "the function that failed"
    return str(options.to_queue_url)


def _report_json(report: RedriveReport) -> dict[str, Any]:
    rate_measured = report.measured_rate()
    return {
        "dry_run": report.dry_run,
        "complete": report.complete,
        "stopped": report.stopped,
        **report.counts(),
        "measured_rate": round(rate_measured, 3) if rate_measured is not None else None,
        "moved_ids": [m.envelope_id for m in report.moved],
        "failures": [
            {"id": m.envelope_id, "message_id": m.message_id, "error": why} for m, why in report.failed
        ],
        "duplicated": [{"id": m.envelope_id, "error": why} for m, why in report.duplicated],
        "notes": [{"id": m.envelope_id, "note": note} for m, note in report.notes],
        "not_released": report.not_released,
    }


def _print_report(report: RedriveReport, options: RedriveOptions, clock: Clock) -> None:
    now = clock.now()
    now_rows = [
        (
            m.envelope_id,
            m.outcome,
            m.error_type or "-",
            _age(m.age_seconds(now)),
            _short(m.source or "-", 40),
            _short(m.reason or "-", 40),
        )
        for m in report.moved
    ]
    for message, why in report.failed:
        print(f"failed {message.envelope_id}: {why} (left in place)", file=sys.stderr)
    if report.dry_run:
        if now_rows:
            print_table(
                f"would move {len(now_rows)}",
                ["id", "outcome", "error type", "age", "source", "reason"],
                now_rows,
            )
        refused = f", would refuse {len(report.failed)}" if report.failed else ""
        print(
            f"dry run: would move {len(report.moved)}, would skip {len(report.skipped)}{refused} "
            f"(to {_destination(options)}, {'fresh budget' if options.reset_attempts else 'history kept'}); "
            "nothing was changed"
        )
        return
    for message, why in report.duplicated:
        print(f"duplicated {message.envelope_id}: sent, then {why} (a copy stays here)", file=sys.stderr)
    for message, note in report.notes:
        print(f"note {message.envelope_id}: {note}", file=sys.stderr)
    measured = report.measured_rate()
    speed = f"; measured {measured:.1f}/s" if measured is not None and options.rate is not None else ""
    print(
        f"moved {len(report.moved)}, skipped {len(report.skipped)}, failed {len(report.failed)}"
        + (f", duplicated {len(report.duplicated)}" if report.duplicated else "")
        + speed
    )
    if report.stopped:
        print(f"stopped early: {report.stopped}; everything not moved is still in the queue", file=sys.stderr)


def _client_side(args: argparse.Namespace, options: RedriveOptions, sqs: Any) -> int:
    clock = command_clock()  # ages and --older-than/--newer-than: the emulator's clock under it
    total = attribute_int(
        sqs.get_queue_attributes(
            QueueUrl=options.from_queue_url, AttributeNames=["ApproximateNumberOfMessages"]
        ).get("Attributes", {}),
        "ApproximateNumberOfMessages",
    )
    verb = "dry run of" if options.dry_run else "redriving"
    print(f"{verb} {options.from_queue_url} -> {_destination(options)}: {_filters(options)}", file=sys.stderr)
    with Progress("redrive", total) as progress:

        def on_progress(report: RedriveReport) -> None:
            seen = len(report.moved) + len(report.skipped) + len(report.failed)
            label = "would move" if report.dry_run else "moved"
            progress.update(
                seen, f"{label} {len(report.moved)} skipped {len(report.skipped)} failed {len(report.failed)}"
            )

        report = redrive(
            sqs,
            options,
            clock=clock,
            on_progress=on_progress,
            lambda_client=lambda_client(args) if options.to_function else None,
        )
        on_progress(report)
    if args.json:
        print(json.dumps(_report_json(report), indent=2))
    else:
        _print_report(report, options, clock)
    return 0 if report.complete else 1


def _native(args: argparse.Namespace, options: RedriveOptions, sqs: Any) -> int:
    check = check_native(sqs, options.from_queue_url, options.to_queue_url)
    where = options.to_queue_url or "each message's source queue"
    for warning in check.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    if not check.applies:
        print(f"--native does not apply to {options.from_queue_url}:", file=sys.stderr)
        for problem in check.problems:
            print(f"  - {problem}", file=sys.stderr)
        return 2
    sources = ", ".join(check.source_queue_urls)
    print(f"native redrive applies: {options.from_queue_url} is the DLQ of {sources}", file=sys.stderr)
    speed = f"{options.rate:g} messages/s" if options.rate is not None else "a rate SQS chooses"
    if options.dry_run:
        print(
            f"dry run: would start StartMessageMoveTask of ~{check.approximate_messages} message(s) to {where} "
            f"at {speed}; nothing was changed"
        )
        return 0
    handle = start_native(sqs, check, rate=options.rate)
    print(f"started StartMessageMoveTask {handle} to {where} at {speed}", file=sys.stderr)
    with Progress("move task", check.approximate_messages) as progress:

        def on_progress(task: dict[str, Any]) -> None:
            moved = int(task.get("ApproximateNumberOfMessagesMoved", 0))
            progress.update(moved, str(task.get("Status", "?")))

        task = wait_native(
            sqs, check.queue_arn, handle, timeout=args.wait, on_progress=on_progress, sleep=time.sleep
        )
    status = task.get("Status", "UNKNOWN")
    moved = task.get("ApproximateNumberOfMessagesMoved", 0)
    if args.json:
        print(json.dumps({"native": True, "task_handle": handle, **task}, indent=2, default=str))
    else:
        print(f"move task {status}: moved ~{moved} of ~{task.get('ApproximateNumberOfMessagesToMove', '?')}")
    if status == "RUNNING":
        print(
            f"still running in AWS after {args.wait:g} s; follow it with: aws sqs list-message-move-tasks "
            f"--source-arn {check.queue_arn}",
            file=sys.stderr,
        )
        return 0
    if status != "COMPLETED":
        print(f"move task {status}: {task.get('FailureReason', 'no reason given')}", file=sys.stderr)
        return 1
    return 0


def cmd_redrive(args: argparse.Namespace) -> int:
    options = _options(args)
    sqs = sqs_client(args)
    return _native(args, options, sqs) if options.native else _client_side(args, options, sqs)


def register(sub: Any) -> None:
    red = sub.add_parser(
        "redrive",
        help="move messages out of a retry-exhausted queue or DLQ: filtered, rate-limited, send before delete",
        description=__doc__,
        epilog=EXAMPLES,
        formatter_class=EXAMPLES_FORMATTER,
    )
    red.add_argument("--from-queue-url", required=True, help="the retry-exhausted queue or DLQ")
    red.add_argument(
        "--to-queue-url", help="the queue to send to (required unless --native or --to-function)"
    )
    red.add_argument(
        "--to-function",
        nargs="?",
        const=True,
        metavar="NAME",
        help="re-invoke the function each self-healing record failed in (NAME or ARN: only that function)",
    )
    red.add_argument(
        "--outcome", action="append", help="only this outcome (repeatable): exhausted, non-retryable, ..."
    )
    red.add_argument("--error-type", action="append", help="only this last error type (repeatable)")
    red.add_argument(
        "--source", action="append", help="only this source queue/function ARN or name (repeatable)"
    )
    red.add_argument(
        "--older-than", type=duration, help="only messages in the queue longer than this (30m, 2h, 7d)"
    )
    red.add_argument("--newer-than", type=duration, help="only messages in the queue for less than this")
    red.add_argument("--max", type=int_range(1, 1_000_000), help="move at most this many")
    red.add_argument("--rate", type=rate, help="at most this many messages per second (10, 10/s, 30/m)")
    red.add_argument(
        "--reset-attempts", action="store_true", help="send the original message with a fresh budget"
    )
    red.add_argument("--dry-run", action="store_true", help="print exactly what would move; change nothing")
    red.add_argument(
        "--native", action="store_true", help="use SQS's StartMessageMoveTask (DLQs of SQS queues only)"
    )
    red.add_argument("--message-group-id", help="FIFO destination: the group id (default: the message's own)")
    red.add_argument(
        "--wait", type=duration, default=900.0, help="--native: watch the move task this long (default 15m)"
    )
    red.add_argument("--json", action="store_true", help="the report as one JSON document")
    add_aws_arguments(red)
    red.set_defaults(func=cmd_redrive)
