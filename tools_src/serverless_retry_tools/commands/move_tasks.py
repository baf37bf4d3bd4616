"""``serverless-retry move-tasks``: SQS's own redrives (StartMessageMoveTask) of a DLQ, listed,
followed and cancelled. ``redrive --native`` starts one (and cancels it on Ctrl-C)."""

from __future__ import annotations

import argparse
import json
import sys
import time
from datetime import UTC, datetime
from typing import Any

from serverless_retry.redrive.native import wait_native

from serverless_retry_tools.commands.args import EXAMPLES_FORMATTER, UsageError, duration
from serverless_retry_tools.commands.aws import add_aws_arguments, sqs_client
from serverless_retry_tools.commands.confirm import add_yes_argument, confirm
from serverless_retry_tools.console import Progress, print_table

__all__ = ["cancel_task", "register"]

EXAMPLES = """\
examples:
  serverless-retry move-tasks --queue-url "$DLQ_URL"
  serverless-retry move-tasks --queue-url "$DLQ_URL" --follow
  serverless-retry move-tasks --queue-url "$DLQ_URL" --cancel --yes

SQS keeps the most recent move tasks of a queue (ListMessageMoveTasks, up to 10), newest first; only
a RUNNING task can be cancelled, and what it moved stays moved. --cancel asks first on a terminal and
needs --yes from a script. Ctrl-C while following stops watching and leaves the task running (it was
started elsewhere); Ctrl-C in redrive --native, which started its task, cancels it.
exit status: 0 ok; 1 the followed task failed, or nothing was cancelled; 2 usage error.
"""


def cancel_task(sqs: Any, handle: str) -> dict[str, Any]:
    """CancelMessageMoveTask: the task stops (CANCELLING, then CANCELLED); moved messages stay moved."""
    return dict(sqs.cancel_message_move_task(TaskHandle=handle))


def _started(task: dict[str, Any]) -> str:
    millis = task.get("StartedTimestamp")
    if not isinstance(millis, int | float):
        return "-"
    return f"{datetime.fromtimestamp(millis / 1000, UTC):%Y-%m-%dT%H:%M:%SZ}"


def _tasks(sqs: Any, arn: str) -> list[dict[str, Any]]:
    return [dict(t) for t in sqs.list_message_move_tasks(SourceArn=arn, MaxResults=10).get("Results", [])]


def cmd_move_tasks(args: argparse.Namespace) -> int:
    sqs = sqs_client(args)
    arn = sqs.get_queue_attributes(QueueUrl=args.queue_url, AttributeNames=["QueueArn"])["Attributes"][
        "QueueArn"
    ]
    tasks = _tasks(sqs, arn)
    running = next((t for t in tasks if t.get("Status") == "RUNNING" and t.get("TaskHandle")), None)
    if args.cancel:
        if running is None:
            print(f"no running move task on {args.queue_url}: nothing to cancel", file=sys.stderr)
            return 1
        moved = running.get("ApproximateNumberOfMessagesMoved", 0)
        if not confirm(
            args,
            f"cancel the move task of {args.queue_url} ({moved} moved so far)?",
            change="--cancel stops a move task",
        ):
            return 1
        cancel_task(sqs, str(running["TaskHandle"]))
        tasks = _tasks(sqs, arn)
        print(f"cancelled {running['TaskHandle']}: what moved stays moved", file=sys.stderr)
    elif args.follow:
        if running is None:
            raise UsageError(f"--follow: no running move task on {args.queue_url}")
        with Progress("move task", running.get("ApproximateNumberOfMessagesToMove")) as progress:

            def on_progress(task: dict[str, Any]) -> None:
                progress.update(int(task.get("ApproximateNumberOfMessagesMoved", 0)), str(task.get("Status")))

            try:
                last = wait_native(
                    sqs,
                    arn,
                    str(running["TaskHandle"]),
                    timeout=args.wait,
                    on_progress=on_progress,
                    sleep=time.sleep,
                )
            except KeyboardInterrupt:  # a watcher: the task was started elsewhere and goes on
                print(
                    f"stopped following; the task goes on in SQS (serverless-retry move-tasks --queue-url "
                    f"{args.queue_url} --cancel stops it)",
                    file=sys.stderr,
                )
                return 130
        tasks = _tasks(sqs, arn)
        if last.get("Status") not in ("COMPLETED", "RUNNING"):
            print(
                f"move task {last.get('Status')}: {last.get('FailureReason', 'no reason given')}",
                file=sys.stderr,
            )
            _show(args, tasks)
            return 1
    _show(args, tasks)
    return 0


def _show(args: argparse.Namespace, tasks: list[dict[str, Any]]) -> None:
    if args.json:
        print(json.dumps({"queue_url": args.queue_url, "tasks": tasks}, indent=2, default=str))
        return
    if not tasks:
        print(f"no move tasks on {args.queue_url}")
        return
    rows = [
        (
            t.get("Status", "?"),
            f"{t.get('ApproximateNumberOfMessagesMoved', 0)}/{t.get('ApproximateNumberOfMessagesToMove', '?')}",
            t.get("MaxNumberOfMessagesPerSecond", "-"),
            _started(t),
            str(t.get("DestinationArn") or "each message's source"),
            t.get("TaskHandle") or "-",
            t.get("FailureReason") or "-",
        )
        for t in tasks
    ]
    print_table(
        f"move tasks of {args.queue_url}",
        ["status", "moved", "per second", "started", "destination", "handle", "failure"],
        rows,
    )


def register(sub: Any) -> None:
    cmd = sub.add_parser(
        "move-tasks",
        help="list, follow or cancel SQS's own DLQ redrives (StartMessageMoveTask)",
        description=__doc__,
        epilog=EXAMPLES,
        formatter_class=EXAMPLES_FORMATTER,
    )
    cmd.add_argument("--queue-url", required=True, help="the DLQ the tasks move messages out of")
    what = cmd.add_mutually_exclusive_group()
    what.add_argument("--follow", action="store_true", help="watch the running task until it ends")
    what.add_argument("--cancel", action="store_true", help="cancel the running task (CancelMessageMoveTask)")
    cmd.add_argument(
        "--wait", type=duration, default=900.0, help="--follow: watch this long at most (default 15m)"
    )
    cmd.add_argument("--json", action="store_true", help="the tasks as one JSON document")
    add_yes_argument(cmd)
    add_aws_arguments(cmd)
    cmd.set_defaults(func=cmd_move_tasks)
