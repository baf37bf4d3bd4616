"""Drive the applied example in one test: send messages, run a fresh runtime until the queue and the
schedules are empty, and account for each message from the emulator's state."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import boto3
from botocore.config import Config
from serverless_retry_tools.local.demos.accounting import (
    Accounting,
    SentMessage,
    account,
    parse_final,
    parse_log_lines,
)
from serverless_retry_tools.local.demos.scheduled_workload import WorkItem
from serverless_retry_tools.local.runtime.runtime import Runtime, RuntimeEvent

from .conftest import Stack

CONFIG = Config(retries={"mode": "standard", "max_attempts": 5})


class Harness:
    def __init__(self, stack: Stack, work_dir: Path) -> None:
        self.stack = stack
        kwargs = stack.emulator.client_kwargs()
        self.sqs = boto3.client("sqs", config=CONFIG, **kwargs)
        self.scheduler = boto3.client("scheduler", config=CONFIG, **kwargs)
        self.logs = boto3.client("logs", config=CONFIG, **kwargs)
        self.lam = boto3.client("lambda", config=CONFIG, **kwargs)
        self.out = stack.outputs
        self.events: list[RuntimeEvent] = []
        self.started_ms = int(time.time() * 1000) - 1
        for url in (self.out["exhausted_queue_url"], self.out["dlq_url"]):
            self._empty(url)  # PurgeQueue is allowed once a minute; tests come faster
        self.runtime = Runtime(
            stack.emulator.url,
            region=stack.emulator.region,
            work_dir=work_dir,
            on_event=self.events.append,
        )
        self._quiet = 0

    def _empty(self, url: str) -> None:
        for _ in range(100):
            messages = self.sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10).get("Messages", [])
            if not messages:
                return
            self.sqs.delete_message_batch(
                QueueUrl=url,
                Entries=[{"Id": str(n), "ReceiptHandle": m["ReceiptHandle"]} for n, m in enumerate(messages)],
            )

    def send(self, items: list[WorkItem]) -> list[SentMessage]:
        sent = []
        for item in items:
            message_id = self.sqs.send_message(QueueUrl=self.out["queue_url"], MessageBody=item.body)[
                "MessageId"
            ]
            sent.append(SentMessage(message_id, item.label, item.order_id, item.expected))
        return sent

    def pending(self) -> int:
        attrs = self.sqs.get_queue_attributes(QueueUrl=self.out["queue_url"], AttributeNames=["All"])[
            "Attributes"
        ]
        schedules = self.scheduler.list_schedules(GroupName=self.out["schedule_group_name"])["Schedules"]
        return (
            int(attrs["ApproximateNumberOfMessages"])
            + int(attrs["ApproximateNumberOfMessagesNotVisible"])
            + int(attrs["ApproximateNumberOfMessagesDelayed"])
            + len(schedules)
        )

    def settled(self) -> bool:
        self._quiet = self._quiet + 1 if self.pending() == 0 else 0
        return self._quiet >= 2

    def run(self, *, deadline: float = 60.0, until: Callable[[], bool] | None = None) -> bool:
        return self.runtime.run(until=until or self.settled, deadline_seconds=deadline, check_every=0.3)

    def batches(self) -> list[dict[str, Any]]:
        return [e.detail for e in self.events if e.kind == "batch"]

    def log_lines(self) -> list[str]:
        group = f"/aws/lambda/{self.out['function_name']}"
        lines: list[str] = []
        for page in self.logs.get_paginator("filter_log_events").paginate(
            logGroupName=group, startTime=self.started_ms
        ):
            lines.extend(e["message"] for e in page.get("events", []))
        return lines

    def account(self, sent: list[SentMessage]) -> Accounting:
        finals = []
        for url, place in ((self.out["exhausted_queue_url"], "exhausted"), (self.out["dlq_url"], "dlq")):
            for _ in range(50):
                messages = self.sqs.receive_message(
                    QueueUrl=url,
                    MaxNumberOfMessages=10,
                    VisibilityTimeout=43_200,  # logical: the 12-hour maximum stays long at any scale
                    MessageAttributeNames=["All"],
                    MessageSystemAttributeNames=["All"],
                ).get("Messages", [])
                if not messages:
                    break
                finals.extend(parse_final(place, m) for m in messages)
        return account(sent, finals, parse_log_lines(self.log_lines()))
