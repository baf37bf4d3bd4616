"""``serverless-retry retries``: the retries waiting in a Scheduler schedule group (the scheduled-retry
consumer's long waits, the self-healing redrive's schedules): each one's due time, message id,
attempt and last error; cancel one, or run it now."""

from __future__ import annotations

import argparse
import json
import re
import sys
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError
from serverless_retry.envelope import ENVELOPE_KEY

from serverless_retry_tools.commands.args import EXAMPLES_FORMATTER, int_range
from serverless_retry_tools.commands.aws import add_aws_arguments, lambda_client, scheduler_client, sqs_client
from serverless_retry_tools.commands.clock import command_clock
from serverless_retry_tools.commands.confirm import add_yes_argument, confirm
from serverless_retry_tools.commands.inspect_queue import _short
from serverless_retry_tools.console import print_table

__all__ = ["PendingRetry", "pending_retry", "register"]

EXAMPLES = """\
examples:
  serverless-retry retries --group orders-retries
  serverless-retry retries --group orders-retries --json | jq '.retries[] | select(.attempt > 3)'
  serverless-retry retries --group orders-retries --cancel sr-0f3c...-4 --yes
  serverless-retry retries --group orders-retries --run-now sr-0f3c...-4 --yes

Lists the one-time schedules of the group, soonest first: due time (UTC), schedule name, message id,
the attempt it will run, the last error and where it goes. --cancel deletes a schedule: that retry
never runs and its message is gone (nothing else holds it; inspect its body first with --json).
--run-now delivers the schedule's input to its target at once (SendMessage to its queue, without the
due time it carries, or an asynchronous Invoke of its function), then deletes the schedule. Both ask
first on a terminal and need --yes from a script.
exit status: 0 ok; 1 a schedule could not be cancelled or run, or the question was answered no;
2 usage error.
"""

_AT = re.compile(r"at\((\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)\)")


class PendingRetry(dict[str, Any]):
    """One waiting retry, as listed (a dict, so --json prints it as it is)."""


def _due(schedule: dict[str, Any]) -> str | None:
    match = _AT.fullmatch(str(schedule.get("ScheduleExpression", "")))
    if match is None:
        return None
    return f"{match[1]}Z" if schedule.get("ScheduleExpressionTimezone", "UTC") == "UTC" else match[1]


def pending_retry(schedule: dict[str, Any]) -> PendingRetry:
    """What a schedule says about its retry: the envelope (scheduled-retry) or the retry state
    (self-healing) in its target's input."""
    target = schedule.get("Target", {})
    try:
        document = json.loads(target.get("Input", ""))
    except ValueError:
        document = None
    meta = document.get(ENVELOPE_KEY) if isinstance(document, dict) else None
    meta = meta if isinstance(meta, dict) else {}
    history = meta.get("history") if isinstance(meta.get("history"), list) else []
    last = history[-1] if history and isinstance(history[-1], dict) else {}
    return PendingRetry(
        name=schedule.get("Name"),
        group=schedule.get("GroupName"),
        due_at=_due(schedule),
        id=meta.get("id"),
        attempt=meta.get("attempt"),
        error_type=last.get("error_type"),
        error=last.get("error"),
        target=target.get("Arn"),
        state=schedule.get("State"),
    )


def _list(scheduler: Any, group: str, limit: int) -> list[PendingRetry]:
    names: list[str] = []
    token: str | None = None
    while len(names) < limit:
        params: dict[str, Any] = {"GroupName": group, "MaxResults": min(100, limit - len(names))}
        if token:
            params["NextToken"] = token
        page = scheduler.list_schedules(**params)
        names.extend(s["Name"] for s in page.get("Schedules", []))
        token = page.get("NextToken")
        if not token:
            break
    retries = []
    for name in names[:limit]:
        try:
            retries.append(pending_retry(scheduler.get_schedule(Name=name, GroupName=group)))
        except ClientError as exc:  # fired (and deleted) between the list and the get
            if exc.response.get("Error", {}).get("Code") != "ResourceNotFoundException":
                raise
    return sorted(retries, key=lambda r: (r["due_at"] is None, r["due_at"] or "", r["name"]))


def _without_due_time(text: str) -> str:
    """The input with its ``due_at`` removed: a copy that arrives before it is re-delayed, unprocessed."""
    try:
        document = json.loads(text)
    except ValueError:
        return text
    meta = document.get(ENVELOPE_KEY) if isinstance(document, dict) else None
    if not isinstance(meta, dict) or "due_at" not in meta:
        return text
    meta.pop("due_at")
    return json.dumps(document, ensure_ascii=False, separators=(",", ":"))


def _run_now(args: argparse.Namespace, schedule: dict[str, Any]) -> str:
    target = schedule.get("Target", {})
    arn = str(target.get("Arn", ""))
    parts = arn.split(":")
    if len(parts) >= 6 and parts[2] == "sqs":
        sqs = sqs_client(args)
        url = sqs.get_queue_url(QueueName=parts[5], QueueOwnerAWSAccountId=parts[4])["QueueUrl"]
        params: dict[str, Any] = {"QueueUrl": url, "MessageBody": _without_due_time(target.get("Input", ""))}
        group = target.get("SqsParameters", {}).get("MessageGroupId")
        if group:
            params["MessageGroupId"] = group
        if url.endswith(".fifo"):
            params["MessageDeduplicationId"] = f"run-now-{schedule['Name']}"[:128]
        sqs.send_message(**params)
        return f"sent to {url}"
    if len(parts) >= 7 and parts[2] == "lambda":
        response = lambda_client(args).invoke(
            FunctionName=arn, InvocationType="Event", Payload=str(target.get("Input", "")).encode("utf-8")
        )
        if response.get("StatusCode") != 202:
            raise RuntimeError(f"asynchronous Invoke answered {response.get('StatusCode')}, not 202")
        return f"invoked {arn}"
    raise RuntimeError(f"its target {arn} is neither an SQS queue nor a Lambda function: left as it is")


def _act(args: argparse.Namespace, scheduler: Any) -> int:
    names = args.cancel or args.run_now
    verb = "cancel" if args.cancel else "run now"
    if not confirm(
        args,
        f"{verb} {len(names)} scheduled retr{'y' if len(names) == 1 else 'ies'} in {args.group}?",
        change=f"--{'cancel' if args.cancel else 'run-now'} changes the schedule group",
    ):
        return 1
    failed = 0
    results = []
    for name in names:
        try:
            schedule = scheduler.get_schedule(Name=name, GroupName=args.group)
            done = "deleted" if args.cancel else _run_now(args, schedule)
            scheduler.delete_schedule(Name=name, GroupName=args.group)
        except (ClientError, BotoCoreError, RuntimeError) as exc:
            failed += 1
            results.append({"name": name, "ok": False, "error": str(exc)})
            print(f"failed {name}: {exc}", file=sys.stderr)
            continue
        results.append({"name": name, "ok": True, "done": done})
        if not args.json:
            print(f"{name}: {done}" + ("" if args.cancel else ", schedule deleted"))
    if args.json:
        print(json.dumps({"action": "cancel" if args.cancel else "run-now", "results": results}, indent=2))
    return 1 if failed else 0


def cmd_retries(args: argparse.Namespace) -> int:
    scheduler = scheduler_client(args)
    if args.cancel or args.run_now:
        return _act(args, scheduler)
    retries = _list(scheduler, args.group, args.limit)
    if args.json:
        print(json.dumps({"group": args.group, "retries": retries}, indent=2))
        return 0
    if not retries:
        print(f"no retries waiting in {args.group}")
        return 0
    # The due times are the Scheduler's, so on the emulator they are logical: "now" must be too.
    now = f"{command_clock().now():%Y-%m-%dT%H:%M:%SZ}"
    print_table(
        f"{len(retries)} retr{'y' if len(retries) == 1 else 'ies'} waiting in {args.group} (now {now})",
        ["due (UTC)", "schedule", "message id", "attempt", "last error", "target"],
        [
            (
                r["due_at"] or "-",
                r["name"],
                r["id"] or "-",
                r["attempt"] or "-",
                _short(f"{r['error_type'] or '-'}: {r['error'] or ''}".rstrip(": "), 50),
                _short(str(r["target"]).rsplit(":", 1)[-1], 40),
            )
            for r in retries
        ],
    )
    return 0


def register(sub: Any) -> None:
    cmd = sub.add_parser(
        "retries",
        help="list the retries waiting in a Scheduler group; cancel one or run it now",
        description=__doc__,
        epilog=EXAMPLES,
        formatter_class=EXAMPLES_FORMATTER,
    )
    cmd.add_argument("--group", required=True, help="the schedule group (the module's schedule_group_name)")
    action = cmd.add_mutually_exclusive_group()
    action.add_argument("--cancel", nargs="+", metavar="SCHEDULE", help="delete these schedules")
    action.add_argument(
        "--run-now", nargs="+", metavar="SCHEDULE", help="deliver these now, then delete them"
    )
    cmd.add_argument(
        "--limit", type=int_range(1, 10_000), default=1000, help="list this many at most (default 1000)"
    )
    cmd.add_argument("--json", action="store_true", help="one JSON document, for scripts")
    add_yes_argument(cmd)
    add_aws_arguments(cmd)
    cmd.set_defaults(func=cmd_retries)
