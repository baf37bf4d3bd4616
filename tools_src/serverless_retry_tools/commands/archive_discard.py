"""``serverless-retry discard --archive s3://bucket/prefix/``: delete the archive objects the filters
select. The keys are listed first (what the run deletes is fixed when it starts); an object is read
only when a filter needs its body, and one that cannot be read then stays, reported."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from serverless_retry.redrive.queue import describe_error

from serverless_retry_tools.commands.archive_objects import ArchiveObjects
from serverless_retry_tools.commands.archive_scan import Found, Unreadable, judge, s3_client
from serverless_retry_tools.commands.archive_select import archive_filters, listed_keys
from serverless_retry_tools.commands.clock import command_clock
from serverless_retry_tools.commands.confirm import confirm
from serverless_retry_tools.console import Progress, print_table

__all__ = ["cmd_discard_archive"]


def _row(found: Found) -> tuple[Any, ...]:
    key = found.key
    message = found.message
    return (
        found.chain_id,
        message.outcome if message else key.outcome,
        (message.error_type or "-") if message else key.error_type,
        key.attempt,
        f"{key.day:%Y-%m-%d}",
        key.key,
    )


def cmd_discard_archive(args: argparse.Namespace) -> int:
    location = args.archive
    filters = archive_filters(args, location, command_clock().now())
    objects = ArchiveObjects(s3_client(args), location)
    keys = list(listed_keys(objects, filters))  # fixed before the first delete
    if not args.dry_run and not confirm(
        args,
        f"delete up to {len(keys)} record(s) of {location}?",
        change="discard deletes archive records (--dry-run shows which)",
    ):
        return 1
    selected: list[Found] = []
    deleted: list[Found] = []
    failed: list[tuple[Found, str]] = []
    unreadable: list[Unreadable] = []
    with Progress("discard", len(keys)) as progress:
        for done, key in enumerate(keys, 1):
            verdict = judge(objects, filters, key, read=False)
            if isinstance(verdict, Unreadable):
                unreadable.append(verdict)
            elif verdict is not None:
                selected.append(verdict)
                if not args.dry_run:
                    try:
                        objects.delete(key.key)
                    except Exception as exc:  # it stays; the run goes on
                        failed.append((verdict, describe_error(exc)))
                    else:
                        deleted.append(verdict)
            progress.update(done, f"deleted {len(deleted)} failed {len(failed)}")
            if args.max is not None and len(selected) >= args.max:
                break
    if args.json:
        print(
            json.dumps(
                {
                    "dry_run": args.dry_run,
                    "archive": str(location),
                    "listed": len(keys),
                    "selected": len(selected),
                    "deleted": len(deleted),
                    "keys": [f.key.key for f in (selected if args.dry_run else deleted)],
                    "ids": [f.chain_id for f in (selected if args.dry_run else deleted)],
                    "failures": [{"key": f.key.key, "error": why} for f, why in failed],
                    "unreadable": [{"key": u.key, "error": u.why} for u in unreadable],
                },
                indent=2,
            )
        )
        return 1 if failed or unreadable else 0
    for found, why in failed:
        print(f"failed {found.key.key}: {why} (left in place)", file=sys.stderr)
    for item in unreadable:
        print(f"unreadable {item.key}: {item.why} (left in place)", file=sys.stderr)
    columns = ["id", "outcome", "error type", "attempt", "day", "key"]
    if selected and args.dry_run:
        print_table(f"would discard {len(selected)}", columns, [_row(f) for f in selected])
    unread = f", unreadable {len(unreadable)}" if unreadable else ""
    if args.dry_run:
        print(f"dry run: would discard {len(selected)} of {len(keys)} listed{unread}; nothing was changed")
        return 1 if unreadable else 0
    print(f"discarded {len(deleted)} of {len(keys)} listed from {location}; failed {len(failed)}{unread}")
    return 1 if failed or unreadable else 0
