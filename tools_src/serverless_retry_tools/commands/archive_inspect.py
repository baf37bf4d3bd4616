"""``serverless-retry inspect --archive s3://bucket/prefix/``: what the archive holds, as ``inspect``
shows a retry-exhausted queue (counts, the oldest), plus each record's redrive marks. Reads only."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from serverless_retry.redrive.queue import summarize

from serverless_retry_tools.commands.archive_objects import ArchiveObjects
from serverless_retry_tools.commands.archive_scan import Found, Unreadable, age_text, judge, s3_client, short
from serverless_retry_tools.commands.archive_select import archive_filters, listed_keys
from serverless_retry_tools.commands.clock import command_clock
from serverless_retry_tools.commands.filters import filter_values
from serverless_retry_tools.commands.selfheal_pointer import body_text, with_pointer
from serverless_retry_tools.console import Progress, print_table

__all__ = ["cmd_inspect_archive", "record_row"]


def record_row(found: Found, now: Any, bodies: bool) -> dict[str, Any]:
    """One record as ``inspect --json`` shows a message, plus where it is and its redrive marks."""
    message, stored = found.message, found.stored
    assert message is not None
    assert stored is not None
    record = stored.record
    row: dict[str, Any] = {
        "key": found.key.key,
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
        "place": record["place"],
        "source_queue_arn": record["source_queue_arn"],
        "terminal_at": record["terminal_at"],
        "archived_at": record["archived_at"],
        "age_seconds": message.age_seconds(now),
        "first_failed_at": message.first_failed_at or None,
        "body_bytes": len(message.raw_body.encode("utf-8", "surrogatepass")),
        "redriven": found.redriven,
    }
    return with_pointer(row, message, bodies)


def _scan(args: argparse.Namespace) -> tuple[list[Found], list[Unreadable], int, bool, Any]:
    now = command_clock().now()
    filters = archive_filters(args, args.archive, now)
    objects = ArchiveObjects(s3_client(args), args.archive)
    selected: list[Found] = []
    unreadable: list[Unreadable] = []
    looked = 0
    with Progress("inspect", None) as progress:
        for key in listed_keys(objects, filters):
            if looked >= args.limit:
                return selected, unreadable, looked, True, now
            looked += 1
            verdict = judge(objects, filters, key, read=True)
            if isinstance(verdict, Unreadable):
                unreadable.append(verdict)
            elif verdict is not None:
                selected.append(verdict)
            progress.update(looked, f"selected {len(selected)} unreadable {len(unreadable)}")
    return selected, unreadable, looked, False, now


def cmd_inspect_archive(args: argparse.Namespace) -> int:
    selected, unreadable, looked, limit_reached, now = _scan(args)
    messages = [f.message for f in selected if f.message is not None]
    summary = summarize(messages, now, oldest=args.oldest)
    by_message = {id(f.message): f for f in selected}
    oldest = [by_message[id(m)] for m in summary["oldest"]]
    redriven = sum(1 for f in selected if f.redriven)
    for item in unreadable:
        print(f"unreadable {item.key}: {item.why} (left in place)", file=sys.stderr)
    if args.json:
        document = {
            "archive": str(args.archive),
            "looked_at": looked,
            "scanned": len(selected),
            "limit_reached": limit_reached,
            "redriven": redriven,
            "by_outcome": dict(summary["by_outcome"].most_common()),
            "by_error_type": dict(summary["by_error_type"].most_common()),
            "by_source": dict(summary["by_source"].most_common()),
            "by_origin": dict(summary["by_origin"].most_common()),
            "by_age": summary["by_age"],
            "oldest": [record_row(f, now, args.bodies) for f in oldest],
            "unreadable": [{"key": u.key, "error": u.why} for u in unreadable],
            "filters": {k: v for k, v in filter_values(args).items() if v is not None}
            | ({"match": args.match} if args.match else {}),
        }
        print(json.dumps(document, indent=2, default=str))
        return 1 if unreadable else 0
    print(f"archive {args.archive}")
    print(
        f"looked at {looked} record(s)"
        + (f"; stopped at --limit {args.limit}" if limit_reached else "")
        + f"; {len(selected)} match the filters, {redriven} of them redriven before"
    )
    if selected:
        print()
        for title, counts in (
            ("by outcome", summary["by_outcome"]),
            ("by error type", summary["by_error_type"]),
            ("by source", summary["by_source"]),
            ("by origin", summary["by_origin"]),
        ):
            print(f"{title + ':':<15}" + ", ".join(f"{name} {n}" for name, n in counts.most_common()))
        ages = {k: v for k, v in summary["by_age"].items() if v}
        print(f"{'by age:':<15}" + ", ".join(f"{name} {n}" for name, n in ages.items()))
        print()
    rows = [
        (
            age_text(f.message.age_seconds(now)) if f.message else "?",
            f.chain_id,
            f.message.outcome if f.message else f.key.outcome,
            f.message.attempt if f.message else f.key.attempt,
            f.message.error_type or "-" if f.message else "-",
            short(f.message.reason or "-", 40) if f.message else "-",
            short(f.message.error or "-", 40) if f.message else "-",
            ", ".join(f"{m.get('at', '?')} -> {m.get('to', '?')}" for m in f.redriven) or "-",
            *([short(body_text(f.message) if f.message else "", 40)] if args.bodies else []),
        )
        for f in oldest
    ]
    if rows:
        columns = ["age", "id", "outcome", "attempt", "error type", "reason", "last error", "redriven"]
        print_table(f"oldest {len(rows)}", columns + (["body"] if args.bodies else []), rows)
        print()
    if unreadable:
        print(
            f"{len(unreadable)} object(s) could not be read as archive records (listed above; nothing changed)"
        )
        return 1
    print(f"{looked} record(s) looked at; nothing changed")
    return 0
