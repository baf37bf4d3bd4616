"""One emulator as a test's AWS account: boto3 clients aimed at it, unique names per test, a role
for functions and schedules, queues (a FIFO one named ``.fifo``). Each test module adds the
functions it deploys."""

from __future__ import annotations

from typing import Any

import boto3
from botocore.config import Config
from serverless_retry_tools.local.emulator.emulator import Emulator


class EmulatorAccount:
    def __init__(self, emulator: Emulator, *, config: Config, role_name: str = "fn") -> None:
        self.emulator = emulator
        self.config = config
        self.n = 0
        role = self.client("iam").create_role(RoleName=role_name, AssumeRolePolicyDocument="{}")
        self.role: str = role["Role"]["Arn"]

    def client(self, service: str) -> Any:
        return boto3.client(service, config=self.config, **self.emulator.client_kwargs())  # type: ignore[call-overload]

    def name(self, prefix: str) -> str:
        self.n += 1
        return f"{prefix}-{self.n}"

    def queue(self, prefix: str, **attributes: str) -> tuple[str, str]:
        """(URL, ARN) of a new queue with these attributes."""
        sqs = self.client("sqs")
        name = self.name(prefix) + (".fifo" if attributes.get("FifoQueue") == "true" else "")
        url = sqs.create_queue(QueueName=name, Attributes=attributes)["QueueUrl"]
        arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
        return url, arn
