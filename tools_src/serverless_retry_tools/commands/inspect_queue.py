"""``serverless-retry inspect``: a read-only look into a retry-exhausted queue or a DLQ."""

from __future__ import annotations

import argparse
import json
from typing import Any

from serverless_retry.queue_redrive import iter_exhausted, release

from serverless_retry_tools.commands.aws import sqs_client


def cmd_inspect(args: argparse.Namespace) -> int:
    sqs = sqs_client()
    rows = list(iter_exhausted(sqs, args.queue_url, limit=args.max, visibility=30))
    for message in rows:
        release(sqs, args.queue_url, message)
    if args.json:
        print(json.dumps([m.__dict__ | {"receipt_handle": None} for m in rows], indent=2, default=str))
        return 0
    print(f"{'id':<38} {'outcome':<20} {'attempt':>7}  {'error_type':<22} reason")
    for m in rows:
        print(f"{m.envelope_id:<38} {m.outcome:<20} {m.attempt:>7}  {m.error_type:<22} {m.reason}")
    print(f"{len(rows)} message(s) shown; none removed")
    return 0


def register(sub: Any) -> None:
    ins = sub.add_parser("inspect", help="list messages in a retry-exhausted queue (non-destructive)")
    ins.add_argument("--queue-url", required=True)
    ins.add_argument("--max", type=int, default=50)
    ins.add_argument("--json", action="store_true")
    ins.set_defaults(func=cmd_inspect)
