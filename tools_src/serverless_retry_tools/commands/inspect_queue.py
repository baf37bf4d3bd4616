"""``serverless-retry inspect``: what is in a retry-exhausted queue or a DLQ, leaving every message
where it is (each one is released the moment the scan ends)."""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from typing import Any

from serverless_retry.queue_redrive import ExhaustedMessage, Inspection, inspect

from serverless_retry_tools.commands.args import EXAMPLES_FORMATTER, int_range
from serverless_retry_tools.commands.aws import add_aws_arguments, sqs_client
from serverless_retry_tools.commands.clock import command_clock
from serverless_retry_tools.console import print_table

EXAMPLES = """\
examples:
  serverless-retry inspect --queue-url "$EXHAUSTED_URL"
  serverless-retry inspect --queue-url "$DLQ_URL" --oldest 20 --bodies
  serverless-retry inspect --queue-url "$EXHAUSTED_URL" --json | jq '.by_outcome'

Counts by outcome, error type, source, origin and age (time since SQS accepted the message), then
the oldest messages with their reason and last error. Plain DLQ messages (not written by
serverless-retry) show outcome "unknown". In the self-healing pattern's retry-exhausted queue the
source is the function that failed and the id the event's retry id (redrive those with --to-function).
Every message is visible again when the command ends.
exit status: 0 ok; 1 some messages could not be released (they reappear after 60 s by themselves);
2 usage error.
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
    if bodies:
        row["body"] = message.body
    return row


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


def cmd_inspect(args: argparse.Namespace) -> int:
    inspection = inspect(
        sqs_client(args), args.queue_url, limit=args.limit, oldest=args.oldest, clock=command_clock()
    )
    if inspection.max_receive_count is not None:
        print(
            f"note: this queue has its own redrive policy (maxReceiveCount {inspection.max_receive_count}): "
            "each inspect counts as one receive of every message it sees",
            file=sys.stderr,
        )
    if args.json:
        print(json.dumps(_as_json(inspection, args.bodies), indent=2))
        return 1 if inspection.not_released else 0
    visible = "?" if inspection.approximate_visible is None else inspection.approximate_visible
    in_flight = "?" if inspection.approximate_in_flight is None else inspection.approximate_in_flight
    print(f"queue {inspection.queue_url}")
    print(
        f"scanned {inspection.scanned} of ~{visible} visible ({in_flight} in flight elsewhere, not seen)"
        + (f"; stopped at --limit {args.limit}" if inspection.limit_reached else "")
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
                m.error_type or "-",
                _short(m.reason or "-", 50),
                _short(m.error or "-", 50),
                *([_short(m.body, 40)] if args.bodies else []),
            )
            for m in inspection.oldest
        ]
        columns = ["age", "id", "outcome", "attempt", "error type", "reason", "last error"]
        if rows:
            print_table(f"oldest {len(rows)}", columns + (["body"] if args.bodies else []), rows)
            print()
    if inspection.not_released:
        print(
            f"{len(inspection.not_released)} message(s) could not be released now; they are visible again "
            "within 60 s (nothing was removed)"
        )
        return 1
    print(f"{inspection.scanned} message(s) looked at; none removed, every one visible again")
    return 0


def register(sub: Any) -> None:
    ins = sub.add_parser(
        "inspect",
        help="summarise a retry-exhausted queue or a DLQ, leaving every message in place",
        description=__doc__,
        epilog=EXAMPLES,
        formatter_class=EXAMPLES_FORMATTER,
    )
    ins.add_argument("--queue-url", required=True, help="the retry-exhausted queue or DLQ to look into")
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
    ins.add_argument("--json", action="store_true", help="one JSON document, for scripts")
    add_aws_arguments(ins)
    ins.set_defaults(func=cmd_inspect)
