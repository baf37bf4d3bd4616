"""``serverless-retry redrive``: move messages out of a retry-exhausted queue or a DLQ, safely (each is
sent before it is deleted), filtered, rate-limited, with a dry run; or start SQS's own move task."""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter
from dataclasses import replace
from typing import Any

from serverless_retry.clock import Clock
from serverless_retry.redrive.native import check_native, start_native, wait_native
from serverless_retry.redrive.options import RedriveOptions, options_from_mapping
from serverless_retry.redrive.queue import ExhaustedMessage, RedriveReport, attribute_int, redrive

from serverless_retry_tools.commands.archive_location import parse_archive_location
from serverless_retry_tools.commands.archive_redrive import cmd_redrive_archive
from serverless_retry_tools.commands.archive_scan import s3_client
from serverless_retry_tools.commands.archive_select import add_match_argument
from serverless_retry_tools.commands.args import EXAMPLES_FORMATTER, UsageError, duration, int_range, rate
from serverless_retry_tools.commands.aws import add_aws_arguments, lambda_client, sqs_client
from serverless_retry_tools.commands.clock import command_clock
from serverless_retry_tools.commands.confirm import add_yes_argument, confirm
from serverless_retry_tools.commands.filters import add_filter_arguments, filter_values
from serverless_retry_tools.commands.inspect_queue import _age, _short
from serverless_retry_tools.commands.move_tasks import cancel_task
from serverless_retry_tools.commands.selfheal_pointer import StoredPayloads
from serverless_retry_tools.console import Progress, print_table
from serverless_retry_tools.routing import SourceRouter

EXAMPLES = """\
examples:
  # what would move: exhausted TimeoutErrors older than an hour, at most 500 (changes nothing)
  serverless-retry redrive --from-queue-url "$EXHAUSTED_URL" --to-queue-url "$QUEUE_URL" \\
      --outcome exhausted --error-type TimeoutError --older-than 1h --max 500 --dry-run
  # the same for real, 20 messages a second, each with a fresh retry budget (--yes: no question asked)
  serverless-retry redrive --from-queue-url "$EXHAUSTED_URL" --to-queue-url "$QUEUE_URL" \\
      --outcome exhausted --error-type TimeoutError --older-than 1h --max 500 --rate 20/s --reset-attempts --yes
  # each message back to the source queue it records (no --to-queue-url)
  serverless-retry redrive --from-queue-url "$EXHAUSTED_URL" --outcome exhausted --dry-run
  # a DLQ fed by an SQS redrive policy: SQS's own move task, back to the source queue
  serverless-retry redrive --from-queue-url "$DLQ_URL" --native --rate 50 --yes
  # self-healing: each exhausted event back to the function that failed (async invoke), one function only
  serverless-retry redrive --from-queue-url "$HEAL_EXHAUSTED_URL" --to-function --source charge-fn \\
      --error-type HTTPError --dry-run
  # the archive: last week's exhausted TimeoutErrors back to the queues they came from, 20 a second
  serverless-retry redrive --archive "s3://$ARCHIVE_BUCKET/serverless-retry/" --newer-than 7d \\
      --outcome exhausted --error-type TimeoutError --rate 20/s --yes

A redrive that changes anything asks first on a terminal; from a script it needs --yes. Every message
is sent to the destination before it is deleted here; skipped messages and whatever is left when a
run stops stay where they were, visible again. One run moves each message at most once and only what
the queue held when it started: a message sent to it after the start (a redriven copy that failed
again, with the consumer running) and a second copy of a chain the run already moved stay, listed as
left; a later run takes them. Without --to-queue-url each message goes back to the
source queue it records (a message without one stays, and is listed). By default a message keeps its
id, attempt count and history (if it fails again it is exhausted at once); --reset-attempts sends the
original body and attributes with a fresh budget. Plain DLQ messages go back verbatim either way.
--to-function re-invokes, asynchronously, the function a self-healing record (or a Lambda on-failure
destination record) says failed, with the event as it first arrived and its retry state continued
(--reset-attempts: as it first arrived, a fresh budget); --to-function NAME only that function. A
self-healing record is refused for --to-queue-url, and any other message for --to-function: it stays.
A self-healing record whose payload is in S3 (payload null, a payload_ref) is read back through its
pointer, sha256-checked; one whose object is gone or changed is refused and stays.
--native (StartMessageMoveTask) moves every message of a DLQ fed by an SQS redrive policy, unchanged,
at up to 500 messages a second; it refuses, saying why, for a retry-exhausted queue (final envelopes
must be unwrapped), Lambda destination records and Scheduler dead-letter events. Ctrl-C cancels the
move task (CancelMessageMoveTask); serverless-retry move-tasks lists, follows and cancels them.
--archive s3://BUCKET/PREFIX/ redrives archived records instead: what redrive from the queue would
send for the same message, to --to-queue-url or the queue each record was consumed from (with
--to-function, a self-healing record to the function that failed); each object is then marked redriven (a conditional rewrite on its ETag). One run takes only the keys listed when it
starts and each chain once; a record already redriven is skipped unless --again.
exit status: 0 ok; 1 partial failure (a message failed or had no source to go back to, the run
stopped early, or the question was answered no: nothing was lost); 2 usage error (including --native
where it cannot apply, and a change without --yes when there is no terminal to ask on).
"""


# No --to-queue-url: each message goes back to the source queue it records. The options are checked
# as for an explicit destination (this stand-in, never sent to), then the destination is cleared.
_EACH_SOURCE = "#each-recorded-source"


def _by_source(args: argparse.Namespace) -> bool:
    return args.to_queue_url is None and not args.native and not args.to_function


def _options(args: argparse.Namespace) -> RedriveOptions:
    options = options_from_mapping(
        {
            "from_queue_url": args.from_queue_url,
            "to_queue_url": args.from_queue_url + _EACH_SOURCE if _by_source(args) else args.to_queue_url,
            "to_function": args.to_function,
            **filter_values(args),
            "max": args.max,
            "rate": args.rate,
            "reset_attempts": args.reset_attempts,
            "dry_run": args.dry_run,
            "native": args.native,
            "message_group_id": args.message_group_id,
        }
    )
    return replace(options, to_queue_url=None) if _by_source(args) else options


def _form(message: ExhaustedMessage, options: RedriveOptions) -> str:
    """How a message would go back (what outgoing_message() does with it)."""
    if options.to_function:  # the event as it first arrived, its retry state continued or fresh
        return "fresh budget" if options.reset_attempts else "history kept"
    if message.kind == "plain" or (message.kind == "retry-envelope" and not options.reset_attempts):
        return "verbatim"
    if options.reset_attempts or message.kind == "compact":
        return "fresh budget"
    return "history kept"


def _forms(messages: list[ExhaustedMessage], options: RedriveOptions) -> str:
    counts = Counter(_form(m, options) for m in messages)
    return ", ".join(f"{n} {form}" for form, n in counts.most_common())


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
    if options.to_queue_url is None:
        return "each message's recorded source queue"
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
        "found_at_start": report.found_at_start,
        "arrived_ids": [m.envelope_id for m in report.arrived],
        "repeated_ids": [
            {"id": m.envelope_id, "message_id": m.message_id, "why": why} for m, why in report.repeated
        ],
    }


def _left_in_run(report: RedriveReport) -> str:
    """What one run leaves by rule (at most once per run, only what it found): see queue_redrive."""
    parts = []
    if report.arrived:
        parts.append(f", left {len(report.arrived)} sent after the run started (for a later run)")
    if report.repeated:
        parts.append(f", left {len(report.repeated)} of chains this run already moved")
    return "".join(parts)


def _print_report(
    report: RedriveReport, options: RedriveOptions, clock: Clock, router: SourceRouter | None
) -> None:
    now = clock.now()
    for message, why in report.repeated:
        print(f"left {message.envelope_id} (message {message.message_id}): {why}", file=sys.stderr)
    routes = router.routes if router is not None else {}
    now_rows = [
        (
            m.envelope_id,
            m.outcome,
            m.error_type or "-",
            _age(m.age_seconds(now)),
            _short(m.source or "-", 40),
            _short(m.reason or "-", 40),
            _form(m, options),
            *([routes.get(m.message_id, "-")] if router is not None else []),
        )
        for m in report.moved
    ]
    for message, why in report.failed:
        print(f"failed {message.envelope_id}: {why} (left in place)", file=sys.stderr)
    unrouted = router.unrouted if router is not None else []
    for message, why in unrouted:
        print(
            f"not routed {message.envelope_id}: {why}; give --to-queue-url (left in place)", file=sys.stderr
        )
    skipped = len(report.skipped) - len(unrouted)
    not_routed = f", not routed {len(unrouted)}" if unrouted else ""
    if report.dry_run:
        if now_rows:
            print_table(
                f"would move {len(now_rows)}",
                ["id", "outcome", "error type", "age", "source", "reason", "sent as"]
                + (["to"] if router is not None else []),
                now_rows,
            )
        refused = f", would refuse {len(report.failed)}" if report.failed else ""
        forms = _forms(report.moved, options)
        print(
            f"dry run: would move {len(report.moved)}, would skip {skipped}{refused}{not_routed}"
            f"{_left_in_run(report)} "
            f"(to {_destination(options)}{': ' + forms if forms else ''}); nothing was changed"
        )
        return
    for message, why in report.duplicated:
        print(f"duplicated {message.envelope_id}: sent, then {why} (a copy stays here)", file=sys.stderr)
    for message, note in report.notes:
        print(f"note {message.envelope_id}: {note}", file=sys.stderr)
    measured = report.measured_rate()
    speed = f"; measured {measured:.1f}/s" if measured is not None and options.rate is not None else ""
    print(
        f"moved {len(report.moved)}, skipped {skipped}, failed {len(report.failed)}"
        + not_routed
        + (f", duplicated {len(report.duplicated)}" if report.duplicated else "")
        + _left_in_run(report)
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
    if not options.dry_run and not confirm(
        args,
        f"move ~{'?' if total is None else total} message(s) of {options.from_queue_url} "
        f"({_filters(options)}) to {_destination(options)}?",
        change="redrive moves messages (--dry-run shows which)",
    ):
        return 1
    router = (
        SourceRouter(sqs, message_group_id=options.message_group_id)
        if options.to_queue_url is None and not options.to_function
        else None
    )
    # To a function: a self-healing record whose payload stayed in S3 is read back through its pointer.
    stored = StoredPayloads(s3_client(args)) if options.to_function else None
    verb = "dry run of" if options.dry_run else "redriving"
    print(f"{verb} {options.from_queue_url} -> {_destination(options)}: {_filters(options)}", file=sys.stderr)
    with Progress("redrive", total) as progress:

        def on_progress(report: RedriveReport) -> None:
            seen = len(report.moved) + len(report.skipped) + len(report.failed)
            seen += len(report.arrived) + len(report.repeated)
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
            sender=router.send if router is not None else None,
            select=router.select if router is not None else stored.select if stored is not None else None,
            should_stop=stored.should_stop if stored is not None else None,
        )
        if stored is not None:
            stored.account(report)
        on_progress(report)
    unrouted = router.unrouted if router is not None else []
    if args.json:
        document = _report_json(report)
        document["skipped"] -= len(unrouted)
        document["not_routed"] = [{"id": m.envelope_id, "why": why} for m, why in unrouted]
        document["forms"] = dict(Counter(_form(m, options) for m in report.moved))
        if router is not None:
            document["routes"] = {m.envelope_id: router.routes.get(m.message_id) for m in report.moved}
        print(json.dumps(document, indent=2))
    else:
        _print_report(report, options, clock, router)
    return 0 if report.complete and not unrouted else 1


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
    if options.dry_run and args.json:
        document = {
            "native": True,
            "dry_run": True,
            "queue_arn": check.queue_arn,
            "destination_arn": check.destination_arn,
            "approximate_messages": check.approximate_messages,
            "rate": options.rate,
            "warnings": list(check.warnings),
        }
        print(json.dumps(document, indent=2))
        return 0
    if options.dry_run:
        print(
            f"dry run: would start StartMessageMoveTask of ~{check.approximate_messages} message(s) to {where} "
            f"at {speed}; nothing was changed"
        )
        return 0
    if not confirm(
        args,
        f"start a move task of ~{check.approximate_messages} message(s) of {options.from_queue_url} to {where}?",
        change="redrive --native starts a move task (--dry-run shows what it would do)",
    ):
        return 1
    handle = start_native(sqs, check, rate=options.rate)
    try:  # from the moment the task exists: an interrupt cancels it
        print(
            f"started StartMessageMoveTask {handle} to {where} at {speed} (Ctrl-C cancels it)",
            file=sys.stderr,
        )
        with Progress("move task", check.approximate_messages) as progress:

            def on_progress(task: dict[str, Any]) -> None:
                moved = int(task.get("ApproximateNumberOfMessagesMoved", 0))
                progress.update(moved, str(task.get("Status", "?")))

            task = wait_native(
                sqs, check.queue_arn, handle, timeout=args.wait, on_progress=on_progress, sleep=time.sleep
            )
    except KeyboardInterrupt:
        cancel_task(sqs, handle)
        print(
            f"interrupted: cancelled move task {handle} (CancelMessageMoveTask); what moved stays moved, "
            "the rest stays in the DLQ",
            file=sys.stderr,
        )
        return 130
    status = task.get("Status", "UNKNOWN")
    moved = task.get("ApproximateNumberOfMessagesMoved", 0)
    if args.json:
        print(json.dumps({"native": True, "task_handle": handle, **task}, indent=2, default=str))
    else:
        print(f"move task {status}: moved ~{moved} of ~{task.get('ApproximateNumberOfMessagesToMove', '?')}")
    if status == "RUNNING":
        print(
            f"still running in AWS after {args.wait:g} s; follow it with: serverless-retry move-tasks "
            f"--queue-url {options.from_queue_url} --follow (--cancel to stop it)",
            file=sys.stderr,
        )
        return 0
    if status != "COMPLETED":
        print(f"move task {status}: {task.get('FailureReason', 'no reason given')}", file=sys.stderr)
        return 1
    return 0


def cmd_redrive(args: argparse.Namespace) -> int:
    if args.archive is not None:
        return cmd_redrive_archive(args)
    for flag, given in (("--match", args.match is not None), ("--again", args.again)):
        if given:
            raise UsageError(f"{flag}: with --archive only")
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
    where = red.add_mutually_exclusive_group(required=True)
    where.add_argument("--from-queue-url", help="the retry-exhausted queue or DLQ")
    where.add_argument(
        "--archive",
        type=parse_archive_location,
        metavar="s3://BUCKET/PREFIX/",
        help="redrive records of the archive instead (each object marked redriven after its send)",
    )
    red.add_argument(
        "--to-queue-url",
        help="the queue to send to (default: the source queue each message records; with --native, SQS's choice)",
    )
    red.add_argument(
        "--to-function",
        nargs="?",
        const=True,
        metavar="NAME",
        help="re-invoke the function each self-healing record failed in (NAME or ARN: only that function)",
    )
    add_filter_arguments(red)
    add_match_argument(red)
    red.add_argument(
        "--again", action="store_true", help="--archive: also records an earlier run redrove already"
    )
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
    add_yes_argument(red)
    add_aws_arguments(red)
    red.set_defaults(func=cmd_redrive)
