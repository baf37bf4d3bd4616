"""The fidelity rows an API call can check (docs/local-emulator.md): what AWS refuses, its defaults,
its delays. Each check makes the call the row is about and compares what comes back with what the
row says; against the emulator the same checks show the emulator says the same.

The probes (a standard and a FIFO queue, a schedule) are named with the run's prefix and deleted
here; the sweep by prefix (:mod:`serverless_retry_tools.aws_tier.cleanup`) removes any a failure left.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from botocore.exceptions import ClientError

from serverless_retry_tools.aws_tier.targets import Target, wait_logical

__all__ = ["Check", "recursion_checks", "service_checks"]

SQS_MAX_DELAY = 900
DELAY_PROBE_SECONDS = 5


@dataclass(frozen=True)
class Check:
    row: str  # the fidelity row, as the table says it
    ok: bool
    expected: str
    observed: str


def _error_code(call: Callable[[], Any]) -> str:
    """The error code the call is refused with, or "accepted"."""
    try:
        call()
    except ClientError as exc:
        return str(exc.response.get("Error", {}).get("Code", "?"))
    return "accepted"


def _refused(row: str, call: Callable[[], Any], codes: tuple[str, ...], undo: Callable[[], None]) -> Check:
    code = _error_code(call)
    if code == "accepted":
        undo()
    return Check(row, code in codes, "refused: " + " or ".join(codes), code)


def service_checks(target: Target, prefix: str) -> list[Check]:
    """The checks that need nothing deployed but their own probes."""
    sqs, scheduler, sts = target.client("sqs"), target.client("scheduler"), target.client("sts")
    checks: list[Check] = []
    standard = sqs.create_queue(QueueName=f"{prefix}-probe")["QueueUrl"]
    fifo = sqs.create_queue(QueueName=f"{prefix}-probe.fifo", Attributes={"FifoQueue": "true"})["QueueUrl"]
    try:
        checks.append(
            _refused(
                f"SQS refuses DelaySeconds above {SQS_MAX_DELAY}",
                lambda: sqs.send_message(QueueUrl=standard, MessageBody="x", DelaySeconds=SQS_MAX_DELAY + 1),
                ("InvalidParameterValue",),
                lambda: sqs.purge_queue(QueueUrl=standard),
            )
        )
        checks.append(
            _refused(
                "SQS refuses a FIFO send without a deduplication id on a queue without content-based deduplication",
                lambda: sqs.send_message(QueueUrl=fifo, MessageBody="x", MessageGroupId="g"),
                ("InvalidParameterValue", "MissingParameter"),
                lambda: sqs.purge_queue(QueueUrl=fifo),
            )
        )
        checks.append(_delay_check(target, sqs, standard))
        account = str(sts.get_caller_identity()["Account"])
        arn = str(
            sqs.get_queue_attributes(QueueUrl=standard, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
        )
        fifo_arn = arn + ".fifo"
        name = f"{prefix}-probe"
        checks.append(
            _refused(
                "EventBridge Scheduler refuses a FIFO queue as a schedule's dead-letter queue",
                lambda: scheduler.create_schedule(
                    Name=name,
                    ScheduleExpression="at(2099-01-01T00:00:00)",
                    FlexibleTimeWindow={"Mode": "OFF"},
                    Target={
                        "Arn": arn,
                        "RoleArn": f"arn:aws:iam::{account}:role/{prefix}-probe",
                        "Input": "{}",
                        "DeadLetterConfig": {"Arn": fifo_arn},
                    },
                ),
                ("ValidationException",),
                lambda: scheduler.delete_schedule(Name=name),
            )
        )
    finally:
        for url in (standard, fifo):
            with contextlib.suppress(ClientError):  # else the sweep by prefix deletes it
                sqs.delete_queue(QueueUrl=url)
    return checks


def _delay_check(target: Target, sqs: Any, url: str) -> Check:
    """A message sent with DelaySeconds=5 is not received before 5 s and is received after."""
    sqs.send_message(QueueUrl=url, MessageBody="delayed", DelaySeconds=DELAY_PROBE_SECONDS)
    early = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=1).get("Messages", [])
    wait_logical(target, DELAY_PROBE_SECONDS + 1)
    late: list[Any] = []
    deadline = time.monotonic() + max(10.0, 5 * target.poll_seconds)
    while not late and time.monotonic() < deadline:  # bounded: SQS may take a moment to show it
        late = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=1).get("Messages", [])
        if not late:
            time.sleep(min(1.0, target.poll_seconds))
    observed = f"received before the delay: {len(early)}; after: {len(late)}"
    return Check(
        f"SQS holds a message for its DelaySeconds ({DELAY_PROBE_SECONDS} s)",
        not early and bool(late),
        "none before, one after",
        observed,
    )


def recursion_checks(target: Target, expected: Mapping[str, str]) -> list[Check]:
    """Each function's recursive loop detection setting (``expected``: function -> Allow/Terminate):
    Lambda's default is Terminate; the consumer that sends retries to its own queue sets Allow."""
    lam = target.client("lambda")
    checks = []
    for function, want in expected.items():
        try:
            observed = str(lam.get_function_recursion_config(FunctionName=function).get("RecursiveLoop", "?"))
        except ClientError as exc:
            observed = str(exc.response.get("Error", {}).get("Code", "?"))
        checks.append(
            Check(f"Lambda recursive loop detection of {function}", observed == want, want, observed)
        )
    return checks
