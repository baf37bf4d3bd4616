"""``serverless-retry discard``: delete the messages of a retry-exhausted queue or a DLQ that the
filters select, each written to a JSON Lines archive (and flushed to disk) before it is deleted."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any, TextIO

from serverless_retry.redrive.queue import ExhaustedMessage, Scan, attribute_int, describe_error, matches

from serverless_retry_tools.commands.archive_discard import cmd_discard_archive
from serverless_retry_tools.commands.archive_location import is_archive_url, parse_archive_location
from serverless_retry_tools.commands.archive_select import add_match_argument
from serverless_retry_tools.commands.args import EXAMPLES_FORMATTER, UsageError, int_range
from serverless_retry_tools.commands.aws import add_aws_arguments, sqs_client
from serverless_retry_tools.commands.clock import command_clock
from serverless_retry_tools.commands.confirm import add_yes_argument, confirm
from serverless_retry_tools.commands.filters import add_filter_arguments, filter_options
from serverless_retry_tools.commands.inspect_queue import _age, _short
from serverless_retry_tools.console import print_table

__all__ = ["archive_line", "register"]

EXAMPLES = """\
examples:
  # what would go: non-retryable messages older than a week (changes nothing)
  serverless-retry discard --queue-url "$EXHAUSTED_URL" --outcome non-retryable --older-than 7d --dry-run
  # for real, each one archived first
  serverless-retry discard --queue-url "$EXHAUSTED_URL" --outcome non-retryable --older-than 7d \\
      --archive discarded.jsonl --yes
  # the archive's records (s3:// location, no --queue-url): what would go, then for real
  serverless-retry discard --archive "s3://$ARCHIVE_BUCKET/serverless-retry/" --outcome non-retryable --dry-run
  serverless-retry discard --archive "s3://$ARCHIVE_BUCKET/serverless-retry/" --outcome non-retryable --yes

Each selected message is appended to --archive as one JSON object (its id, body, attributes as they
are in the queue, outcome, reason, last error, source, age) and the file is flushed to disk before
the message is deleted: an interrupted run loses nothing. --no-archive deletes without one. Messages
the filters do not select stay, visible again at once. Asks first on a terminal; needs --yes from a
script.
--archive s3://BUCKET/PREFIX/ without --queue-url deletes the archive's records the filters select
(the same filters, --match RE2 too); an object is read only when a filter needs its body.
exit status: 0 ok; 1 some messages (or archive records) could not be deleted or read (they stay, and are in the archive), or the
question was answered no; 2 usage error.
"""


def archive_line(message: ExhaustedMessage, queue_url: str, discarded_at: str) -> str:
    """One JSON Lines record: enough to send the message again by hand (body and attributes as they
    were in the queue) and to know why it was there."""
    return json.dumps(
        {
            "queue_url": queue_url,
            "message_id": message.message_id,
            "id": message.envelope_id,
            "discarded_at": discarded_at,
            "sent_at": message.sent_at.isoformat() if message.sent_at else None,
            "outcome": message.outcome,
            "reason": message.reason,
            "error_type": message.error_type,
            "error": message.error,
            "attempt": message.attempt,
            "receive_count": message.receive_count,
            "source": message.source,
            "origin": message.origin,
            "body": message.raw_body,
            "attributes": message.raw_attributes,
        },
        ensure_ascii=False,
        default=str,
    )


def _check_archive(args: argparse.Namespace) -> None:
    if args.dry_run or args.no_archive:
        return
    if args.archive is None:
        raise UsageError("--archive FILE.jsonl: required (or --no-archive to delete without a copy)")
    if Path(args.archive).is_dir():
        raise UsageError(f"--archive: {args.archive} is a directory")


def _open_archive(args: argparse.Namespace) -> TextIO | None:
    if args.dry_run or args.no_archive:
        return None
    path = Path(args.archive)
    try:
        return path.open("a", encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"--archive: cannot write {path}: {exc.strerror}") from None


class _QueueOrArchiveParser(argparse.ArgumentParser):
    """discard's parser: --queue-url is required unless --archive names an s3:// archive (then the
    location discarded from), checked where argparse checks a required option: at parse time."""

    def parse_known_args(self, args: Any = None, namespace: Any = None) -> Any:
        parsed, extras = super().parse_known_args(args, namespace)
        if parsed.queue_url is None and not is_archive_url(parsed.archive):
            self.error("one of the arguments --queue-url or --archive s3://BUCKET/PREFIX/ is required")
        return parsed, extras


def _archive_form(args: argparse.Namespace) -> bool:
    """--archive s3://...: the archive is where records are discarded from (not a copy of a queue's)."""
    if not is_archive_url(args.archive):
        if args.queue_url is None:
            raise UsageError("--queue-url QUEUE_URL or --archive s3://BUCKET/PREFIX/: one is required")
        if args.match is not None:
            raise UsageError("--match: with --archive s3://BUCKET/PREFIX/ only")
        return False
    if args.queue_url is not None:
        raise UsageError(
            "--archive s3://...: the archive to discard records from, not with --queue-url "
            "(a queue's messages are copied to --archive FILE.jsonl)"
        )
    try:
        args.archive = parse_archive_location(args.archive)
    except argparse.ArgumentTypeError as exc:
        raise UsageError(f"--archive: {exc}") from None
    return True


def cmd_discard(args: argparse.Namespace) -> int:
    if _archive_form(args):
        return cmd_discard_archive(args)
    options = filter_options(args, args.queue_url)
    _check_archive(args)
    sqs = sqs_client(args)
    clock = command_clock()
    total = attribute_int(
        sqs.get_queue_attributes(QueueUrl=args.queue_url, AttributeNames=["ApproximateNumberOfMessages"]).get(
            "Attributes", {}
        ),
        "ApproximateNumberOfMessages",
    )
    if not args.dry_run and not confirm(
        args,
        f"delete the selected messages of {args.queue_url} (~{'?' if total is None else total} in it)?",
        change="discard deletes messages (--dry-run shows which)",
    ):
        return 1
    archive = _open_archive(args)
    scan = Scan(sqs, args.queue_url, visibility=120, wait_seconds=1)
    selected: list[ExhaustedMessage] = []
    deleted: list[ExhaustedMessage] = []
    failed: list[tuple[ExhaustedMessage, str]] = []
    looked = 0
    try:
        for message in scan.messages():
            looked += 1
            if not matches(message, options, clock.now()):
                continue
            selected.append(message)
            if archive is not None:
                archive.write(archive_line(message, args.queue_url, clock.now().isoformat()) + "\n")
                archive.flush()
                os.fsync(archive.fileno())  # on disk before the only other copy goes
            if not args.dry_run:
                try:
                    sqs.delete_message(QueueUrl=args.queue_url, ReceiptHandle=scan.handle(message))
                except Exception as exc:  # it stays in the queue (and is in the archive)
                    failed.append((message, describe_error(exc)))
                else:
                    scan.forget(message)
                    deleted.append(message)
            if args.max is not None and len(selected) >= args.max:
                break
    finally:
        not_released = scan.release_all()
        if archive is not None:
            archive.close()
    return _report(
        args,
        looked,
        selected=selected,
        deleted=deleted,
        failed=failed,
        not_released=not_released,
        now=clock.now(),
    )


def _report(
    args: argparse.Namespace,
    looked: int,
    *,
    selected: list[ExhaustedMessage],
    deleted: list[ExhaustedMessage],
    failed: list[tuple[ExhaustedMessage, str]],
    not_released: list[str],
    now: Any,
) -> int:
    if args.json:
        print(
            json.dumps(
                {
                    "dry_run": args.dry_run,
                    "looked_at": looked,
                    "selected": len(selected),
                    "deleted": len(deleted),
                    "archive": None if args.dry_run or args.no_archive else args.archive,
                    "ids": [m.envelope_id for m in (selected if args.dry_run else deleted)],
                    "failures": [{"id": m.envelope_id, "error": why} for m, why in failed],
                    "not_released": not_released,
                },
                indent=2,
            )
        )
        return 1 if failed else 0
    for message, why in failed:
        print(f"failed {message.envelope_id}: {why} (left in place)", file=sys.stderr)
    rows = [
        (m.envelope_id, m.outcome, m.error_type or "-", _age(m.age_seconds(now)), _short(m.reason or "-", 50))
        for m in selected
    ]
    if rows and args.dry_run:
        print_table(f"would discard {len(rows)}", ["id", "outcome", "error type", "age", "reason"], rows)
    if args.dry_run:
        print(f"dry run: would discard {len(selected)} of {looked} looked at; nothing was changed")
        return 0
    where = "" if args.no_archive else f", archived to {args.archive}"
    print(f"discarded {len(deleted)} of {looked} looked at{where}; failed {len(failed)}")
    return 1 if failed else 0


def register(sub: Any) -> None:
    cmd = sub.add_parser(
        "discard",
        help="delete filtered messages of a retry-exhausted queue or DLQ, archived to JSON Lines first",
        description=__doc__,
        epilog=EXAMPLES,
        formatter_class=EXAMPLES_FORMATTER,
    )
    cmd.__class__ = _QueueOrArchiveParser  # add_parser builds the subcommands' one class
    cmd.add_argument("--queue-url", help="the retry-exhausted queue or DLQ (or --archive s3://...)")
    add_filter_arguments(cmd)
    add_match_argument(cmd)
    cmd.add_argument("--max", type=int_range(1, 1_000_000), help="discard at most this many")
    archive = cmd.add_mutually_exclusive_group()
    archive.add_argument(
        "--archive",
        metavar="FILE.jsonl|s3://BUCKET/PREFIX/",
        help="with --queue-url: append each message here before deleting it; alone, an s3:// archive "
        "location: delete the archive's records the filters select",
    )
    archive.add_argument("--no-archive", action="store_true", help="delete without a copy")
    cmd.add_argument("--dry-run", action="store_true", help="list what would be discarded; change nothing")
    cmd.add_argument("--json", action="store_true", help="the report as one JSON document")
    add_yes_argument(cmd)
    add_aws_arguments(cmd)
    cmd.set_defaults(func=cmd_discard)
