"""``serverless-retry inspect``: a queue's backlog (visible, in flight, delayed, oldest age) read
without receiving, and what is in a retry-exhausted queue or a DLQ, leaving every message where it
is (each one is released the moment the scan ends)."""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from typing import Any

from serverless_retry.redrive.queue import ExhaustedMessage, Inspection, Scan, matches, summarize

from serverless_retry_tools.backlog import Backlog, read_backlog
from serverless_retry_tools.commands.archive_inspect import cmd_inspect_archive
from serverless_retry_tools.commands.archive_location import parse_archive_location
from serverless_retry_tools.commands.archive_select import add_match_argument
from serverless_retry_tools.commands.args import EXAMPLES_FORMATTER, UsageError, int_range
from serverless_retry_tools.commands.aws import add_aws_arguments, cloudwatch_client, sqs_client
from serverless_retry_tools.commands.clock import command_clock
from serverless_retry_tools.commands.filters import add_filter_arguments, filter_options, filter_values
from serverless_retry_tools.commands.selfheal_pointer import body_text, with_pointer
from serverless_retry_tools.console import print_table

EXAMPLES = """\
examples:
  serverless-retry inspect --queue-url "$EXHAUSTED_URL"
  serverless-retry inspect --queue-url "$EXHAUSTED_URL" --outcome exhausted --error-type TimeoutError
  serverless-retry inspect --queue-url "$DLQ_URL" --oldest 20 --bodies
  serverless-retry inspect --queue-url "$QUEUE_URL" --backlog
  serverless-retry inspect --queue-url "$EXHAUSTED_URL" --json | jq '.by_outcome'
  serverless-retry inspect --archive "s3://$ARCHIVE_BUCKET/serverless-retry/" --newer-than 7d --outcome exhausted

First the backlog, from the queue's attributes and CloudWatch, without receiving anything. A queue
with its own redrive policy (a source queue on native retry) stops there: a receive would count
towards its maxReceiveCount (--receive looks anyway). Otherwise, counts by outcome, error type,
source, origin and age (time since SQS accepted the message) of the messages the filters select
(the same filters as redrive and discard), then the oldest with their attempt, receive count (this
look included), reason and last error. Plain DLQ messages (not written by serverless-retry) show
outcome "unknown": on a native DLQ filter by --source and age. In the self-healing pattern's
retry-exhausted queue the source is the function that failed and the id the event's retry id
(redrive those with --to-function). Every message is visible again when the command ends.
--archive s3://BUCKET/PREFIX/ looks into the archive instead (what the archiver kept of the
terminal queues): the same filters, ages since each message became terminal, --match RE2 on reason,
last error and body, and each record's redrive marks; it reads only.
exit status: 0 ok; 1 some messages could not be released (they reappear after 60 s by themselves), or
some archive objects could not be read as records; 2 usage error.
"""


def _age(seconds: float | None) -> str:
    if seconds is None:
        return "?"
    for unit, size in (("d", 86_400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds / size:.1f}{unit}"
    return f"{seconds:.0f}s"


def _short(text: str, limit: int = 60) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _row(message: ExhaustedMessage, inspection: Inspection, bodies: bool) -> dict[str, Any]:
    row: dict[str, Any] = {
        "id": message.envelope_id,
        "message_id": message.message_id,
        "outcome": message.outcome,
        "reason": message.reason,
        "error_type": message.error_type,
        "error": message.error,
        "attempt": message.attempt,
        "source": message.source,
        "origin": message.origin,
        "kind": message.kind,
        "sent_at": message.sent_at.isoformat() if message.sent_at else None,
        "age_seconds": message.age_seconds(inspection.now),
        "first_failed_at": message.first_failed_at or None,
        "receive_count": message.receive_count,
        "body_bytes": len(message.body.encode("utf-8", "surrogatepass")),
    }
    return with_pointer(row, message, bodies)  # a payload left in S3: where, not an empty body


def _as_json(inspection: Inspection, bodies: bool) -> dict[str, Any]:
    return {
        "queue_url": inspection.queue_url,
        "scanned": inspection.scanned,
        "limit_reached": inspection.limit_reached,
        "approximate_visible": inspection.approximate_visible,
        "approximate_in_flight": inspection.approximate_in_flight,
        "released": not inspection.not_released,
        "not_released": inspection.not_released,
        "by_outcome": dict(inspection.by_outcome.most_common()),
        "by_error_type": dict(inspection.by_error_type.most_common()),
        "by_source": dict(inspection.by_source.most_common()),
        "by_origin": dict(inspection.by_origin.most_common()),
        "by_age": inspection.by_age,
        "oldest": [_row(m, inspection, bodies) for m in inspection.oldest],
    }


def _counts(title: str, counts: Counter[str] | dict[str, int]) -> None:
    items = counts.most_common() if isinstance(counts, Counter) else list(counts.items())
    print(f"{title + ':':<15}" + ", ".join(f"{name} {n}" for name, n in items))


def _scan(args: argparse.Namespace, sqs: Any, backlog: Backlog) -> tuple[Inspection, int]:
    """Receive up to --limit messages, keep those the filters select, release every one at once.
    Returns the inspection of the selected messages and how many were looked at."""
    clock = command_clock()
    options = filter_options(args, args.queue_url)
    scan = Scan(sqs, args.queue_url, visibility=60, wait_seconds=1)
    selected: list[ExhaustedMessage] = []
    looked = 0
    try:
        for message in scan.messages(args.limit):
            looked += 1
            if matches(message, options, clock.now()):
                selected.append(message)
    finally:
        not_released = scan.release_all()
    now = clock.now()
    inspection = Inspection(
        queue_url=args.queue_url,
        scanned=len(selected),
        approximate_visible=backlog.visible,
        approximate_in_flight=backlog.in_flight,
        now=now,
        limit_reached=looked >= args.limit,
        not_released=not_released,
        max_receive_count=backlog.max_receive_count,
        **summarize(selected, now, oldest=args.oldest),
    )
    return inspection, looked


def _filtered(args: argparse.Namespace) -> bool:
    return any(v is not None for v in filter_values(args).values())


def _backlog_line(backlog: Backlog) -> str:
    def n(value: int | None) -> str:
        return "?" if value is None else str(value)

    oldest = (
        "oldest ? (no CloudWatch datapoint)"
        if backlog.oldest_age_seconds is None
        else (f"oldest {_age(backlog.oldest_age_seconds)} (CloudWatch)")
    )
    return f"backlog: {n(backlog.visible)} visible, {n(backlog.in_flight)} in flight, {n(backlog.delayed)} delayed; {oldest}"


def _policy_line(backlog: Backlog) -> str | None:
    if backlog.max_receive_count is None:
        return None
    after = backlog.dlq_after_seconds
    when = f"; a message that always fails reaches the DLQ {after} s after its first receive" if after else ""
    return (
        f"redrive policy: maxReceiveCount {backlog.max_receive_count}, visibility timeout "
        f"{backlog.visibility_timeout} s{when}"
    )


def cmd_inspect(args: argparse.Namespace) -> int:
    if args.archive is not None:
        if args.backlog or args.receive:
            raise UsageError("--backlog and --receive look at a queue: not with --archive")
        return cmd_inspect_archive(args)
    if args.match is not None:
        raise UsageError("--match: with --archive only (a queue's messages are filtered without it)")
    sqs = sqs_client(args)
    backlog = read_backlog(sqs, cloudwatch_client(args), args.queue_url, command_clock())
    # A receive on a queue with its own redrive policy counts towards its maxReceiveCount: looking
    # at a source queue during native retry would push its messages towards the DLQ.
    receive = not args.backlog and (backlog.max_receive_count is None or args.receive)
    inspection, looked = _scan(args, sqs, backlog) if receive else (None, 0)
    if args.json:
        document: dict[str, Any] = {
            "queue_url": args.queue_url,
            "backlog": backlog.as_json(),
            "received": receive,
        }
        if inspection is not None:
            document.update(_as_json(inspection, args.bodies))
            document["looked_at"] = looked
            document["filters"] = {k: v for k, v in filter_values(args).items() if v is not None}
        print(json.dumps(document, indent=2))
        return 1 if inspection is not None and inspection.not_released else 0
    print(f"queue {args.queue_url}")
    print(_backlog_line(backlog))
    policy = _policy_line(backlog)
    if policy:
        print(policy)
    if inspection is None:
        if not args.backlog:
            print(
                "not received: each receive here counts towards maxReceiveCount (--receive to look at the "
                "messages anyway; each look is one receive of every message it sees)"
            )
        return 0
    if backlog.max_receive_count is not None:
        print("note: --receive counted one receive of every message looked at", file=sys.stderr)
    print(
        f"looked at {looked} of ~{'?' if backlog.visible is None else backlog.visible} visible"
        + (f"; stopped at --limit {args.limit}" if inspection.limit_reached else "")
        + (f"; {inspection.scanned} match the filters" if _filtered(args) else "")
    )
    print()
    if inspection.scanned:
        _counts("by outcome", inspection.by_outcome)
        _counts("by error type", inspection.by_error_type)
        _counts("by source", inspection.by_source)
        _counts("by origin", inspection.by_origin)
        _counts("by age", {k: v for k, v in inspection.by_age.items() if v})
        print()
        rows = [
            (
                _age(m.age_seconds(inspection.now)),
                m.envelope_id,
                m.outcome,
                m.attempt or "-",
                m.receive_count or "-",
                m.error_type or "-",
                _short(m.reason or "-", 50),
                _short(m.error or "-", 50),
                *([_short(body_text(m), 40)] if args.bodies else []),
            )
            for m in inspection.oldest
        ]
        columns = ["age", "id", "outcome", "attempt", "receives", "error type", "reason", "last error"]
        if rows:
            print_table(f"oldest {len(rows)}", columns + (["body"] if args.bodies else []), rows)
            print()
    if inspection.not_released:
        print(
            f"{len(inspection.not_released)} message(s) could not be released now; they are visible again "
            "within 60 s (nothing was removed)"
        )
        return 1
    print(f"{looked} message(s) looked at; none removed, every one visible again")
    return 0


def register(sub: Any) -> None:
    ins = sub.add_parser(
        "inspect",
        help="summarise a queue: its backlog, and what is in a retry-exhausted queue or a DLQ",
        description=__doc__,
        epilog=EXAMPLES,
        formatter_class=EXAMPLES_FORMATTER,
    )
    where = ins.add_mutually_exclusive_group(required=True)
    where.add_argument("--queue-url", help="the queue to look into")
    where.add_argument(
        "--archive",
        type=parse_archive_location,
        metavar="s3://BUCKET/PREFIX/",
        help="the archive to look into instead (the archiver's bucket and key prefix)",
    )
    add_filter_arguments(ins)
    add_match_argument(ins)
    ins.add_argument(
        "--limit",
        type=int_range(1, 100_000),
        default=1000,
        help="look at this many messages at most (default 1000)",
    )
    ins.add_argument(
        "--oldest",
        type=int_range(0, 1000),
        default=10,
        help="list this many of the oldest messages (default 10)",
    )
    ins.add_argument(
        "--bodies", action="store_true", help="show message bodies (a preview; in full with --json)"
    )
    looking = ins.add_mutually_exclusive_group()
    looking.add_argument(
        "--backlog",
        action="store_true",
        help="the backlog only (queue attributes, CloudWatch): receive nothing",
    )
    looking.add_argument(
        "--receive",
        action="store_true",
        help="look at the messages even on a queue with a redrive policy (each look counts as a receive)",
    )
    ins.add_argument("--json", action="store_true", help="one JSON document, for scripts")
    add_aws_arguments(ins)
    ins.set_defaults(func=cmd_inspect)
