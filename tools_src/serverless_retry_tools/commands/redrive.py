"""``serverless-retry redrive``: send exhausted messages back to their queue with a fresh budget."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from serverless_retry.queue_redrive import ExhaustedMessage, redrive

from serverless_retry_tools.commands.aws import sqs_client


def cmd_redrive(args: argparse.Namespace) -> int:
    def select(message: ExhaustedMessage) -> bool:
        if args.outcome and message.outcome not in args.outcome:
            return False
        return not (args.error_type and message.error_type not in args.error_type)

    report = redrive(
        sqs_client(),
        from_queue_url=args.from_queue_url,
        to_queue_url=args.to_queue_url,
        limit=args.max,
        select=select,
        dry_run=args.dry_run,
    )
    verb = "would redrive" if args.dry_run else "redriven"
    print(
        f"{verb}: {len(report.redriven)}, left in place: {len(report.skipped)}, failed: {len(report.failed)}"
    )
    for message, why in report.failed:
        print(f"  failed {message.envelope_id}: {why}", file=sys.stderr)
    return 1 if report.failed else 0


def register(sub: Any) -> None:
    red = sub.add_parser("redrive", help="send exhausted messages back to their queue with a fresh budget")
    red.add_argument("--from-queue-url", required=True, help="the retry-exhausted queue")
    red.add_argument("--to-queue-url", required=True, help="the source queue")
    red.add_argument("--outcome", action="append", help="only these outcomes (repeatable)")
    red.add_argument("--error-type", action="append", help="only these error types (repeatable)")
    red.add_argument("--max", type=int, default=100)
    red.add_argument("--dry-run", action="store_true")
    red.set_defaults(func=cmd_redrive)
