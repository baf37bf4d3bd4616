"""The planned module on in-process moto: the same names (hence the same ARNs and URLs), and the AWS
services our functions rely on played by the harness, each acting with the role AWS would use.

What the harness plays, and as whom (the recorder attributes each call to that role):
- an event source mapping receives and deletes with the function's role;
- the pipe receives, calls the enrichment, puts on the bus and deletes with the pipe's role;
- Lambda's on-failure destination sends (to a queue) or writes (to a bucket) with the failed
  function's role; S3's notification of a new object goes to its queue as S3 (not recorded: the
  queue policy lets it, which ``check.rule_targets`` checks).
The Scheduler's deliveries are derived from each CreateSchedule (``actions.scheduler_delivery``), and
EventBridge's rule targets from the plan (``check``): those are the services' own principals.
"""

from __future__ import annotations

import io
import json
import os
import zipfile
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any
from unittest import mock

import boto3

from tests.terraform.iam.actions import Facts, Need
from tests.terraform.iam.granted import Function, Granted, Queue, dlq_sources
from tests.terraform.iam.plan import ACCOUNT, REGION
from tests.terraform.iam.recorder import Recorder

LAMBDA_TRUST = {
    "Version": "2012-10-17",
    "Statement": [
        {"Effect": "Allow", "Principal": {"Service": "lambda.amazonaws.com"}, "Action": "sts:AssumeRole"}
    ],
}


def _zip() -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("handler.py", "def handle(event, context):\n    return None\n")
    return buffer.getvalue()


@dataclass
class External:
    """What the module is given rather than creates: source functions with their roles, topics (and
    their keys), the idempotency table."""

    functions: dict[str, str] = field(default_factory=dict)  # function name -> role name
    topics: dict[str, str | None] = field(default_factory=dict)  # topic ARN -> KMS key ARN
    tables: list[str] = field(default_factory=list)  # DynamoDB table names (partition key "id")


@dataclass
class World:
    granted: Granted
    external: External
    recorder: Recorder
    notes: list[Need] = field(default_factory=list)  # what a service does without an API call we make

    def __post_init__(self) -> None:
        self.sqs = boto3.client("sqs", region_name=REGION)
        self.events = boto3.client("events", region_name=REGION)
        self.s3 = boto3.client("s3", region_name=REGION)

    @property
    def facts(self) -> Facts:
        return Facts(
            REGION,
            ACCOUNT,
            queue_keys={q.arn: q.kms_key for q in self.granted.queues.values()},
            topic_keys=dict(self.external.topics),
            dlq_sources=dlq_sources(self.granted),
        )

    def create(self) -> None:
        """Every queue, table, schedule group, role and function of the plan, and the external resources."""
        g = self.granted
        for queue in g.queues.values():
            self.sqs.create_queue(QueueName=queue.name, Attributes=queue.attributes)
        for queue in g.queues.values():
            if queue.redrive_policy:
                self.sqs.set_queue_attributes(
                    QueueUrl=queue.url, Attributes={"RedrivePolicy": queue.redrive_policy}
                )
        for bus in g.buses:
            self.events.create_event_bus(Name=bus)
        for bucket in g.buckets:
            self.s3.create_bucket(Bucket=bucket)
        scheduler = boto3.client("scheduler", region_name=REGION)
        for group in g.schedule_groups:
            scheduler.create_schedule_group(Name=group)
        iam = boto3.client("iam", region_name=REGION)
        roles = {r.name: json.dumps({"Version": "2012-10-17", "Statement": [s.raw for s in r.trust]})
                 for r in g.roles.values() if r.trust is not None}  # fmt: skip
        roles.update({role: json.dumps(LAMBDA_TRUST) for role in self.external.functions.values()})
        for name, trust in roles.items():
            iam.create_role(RoleName=name, AssumeRolePolicyDocument=trust)
        lambda_ = boto3.client("lambda", region_name=REGION)
        functions = {f.name: f.role for f in g.functions.values()} | self.external.functions
        for name, role in functions.items():
            lambda_.create_function(
                FunctionName=name,
                Runtime="python3.12",
                Role=f"arn:aws:iam::{ACCOUNT}:role/{role}",
                Handler="handler.handle",
                Code={"ZipFile": _zip()},
            )
        sns = boto3.client("sns", region_name=REGION)
        for topic in self.external.topics:
            sns.create_topic(Name=topic.rsplit(":", 1)[-1])
        dynamodb = boto3.client("dynamodb", region_name=REGION)
        for table in g.tables:  # the planned tables, with their keys
            keys = [(table["hash_key"], "HASH")] + (
                [(table["range_key"], "RANGE")] if table.get("range_key") else []
            )
            dynamodb.create_table(
                TableName=table["name"],
                KeySchema=[{"AttributeName": k, "KeyType": kind} for k, kind in keys],
                AttributeDefinitions=[{"AttributeName": a["name"], "AttributeType": a["type"]} for a in table["attribute"]],
                BillingMode="PAY_PER_REQUEST",
            )  # fmt: skip
        for table in self.external.tables:
            dynamodb.create_table(
                TableName=table,
                KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
                AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"}],
                BillingMode="PAY_PER_REQUEST",
            )

    # -- the harness's own calls (not recorded) ------------------------------------------------------
    def send(self, queue: Queue, body: str, *, group: str | None = None, dedup: str | None = None) -> None:
        params: dict[str, Any] = {"QueueUrl": queue.url, "MessageBody": body}
        if queue.fifo:
            params["MessageGroupId"] = group or "g"
            if dedup:
                params["MessageDeduplicationId"] = dedup
        self.sqs.send_message(**params)

    def messages(self, queue: Queue, limit: int = 50) -> list[dict[str, Any]]:
        """Every visible message (bounded), left in place for a second."""
        out: list[dict[str, Any]] = []
        for _ in range(limit):
            got = self.sqs.receive_message(
                QueueUrl=queue.url, MaxNumberOfMessages=10, VisibilityTimeout=1, AttributeNames=["All"],
                MessageAttributeNames=["All"],
            ).get("Messages", [])  # fmt: skip
            if not got:
                break
            out.extend(got)
        return out

    def purge(self, queue: Queue) -> None:
        for _ in range(100):
            got = self.sqs.receive_message(QueueUrl=queue.url, MaxNumberOfMessages=10).get("Messages", [])
            if not got:
                return
            for m in got:
                self.sqs.delete_message(QueueUrl=queue.url, ReceiptHandle=m["ReceiptHandle"])

    # -- services acting with a role ------------------------------------------------------------------
    def receive_as(self, role: str, via: str, queue: Queue, *, count: int = 10) -> list[dict[str, Any]]:
        with self.recorder.acting_as(role, via):
            return list(
                self.sqs.receive_message(
                    QueueUrl=queue.url, MaxNumberOfMessages=count, VisibilityTimeout=30,
                    AttributeNames=["All"], MessageAttributeNames=["All"],
                ).get("Messages", [])
            )  # fmt: skip

    def delete_as(self, role: str, via: str, queue: Queue, handles: list[str]) -> None:
        if not handles:
            return
        with self.recorder.acting_as(role, via):
            self.sqs.delete_message_batch(
                QueueUrl=queue.url,
                Entries=[{"Id": str(i), "ReceiptHandle": h} for i, h in enumerate(handles)],
            )

    @contextmanager
    def environment(self, function: Function) -> Iterator[None]:
        """The function's planned environment (what its code reads at cold start)."""
        with mock.patch.dict(os.environ, function.env):
            yield


def lambda_records(messages: list[dict[str, Any]], queue_arn: str) -> list[dict[str, Any]]:
    """The records an event source mapping (or a pipe) builds from received SQS messages."""
    from tests.functional.conftest import event_from

    records: list[dict[str, Any]] = event_from(messages, queue_arn)["Records"]
    return records


def function_by_handler(g: Granted, handler: str) -> Function:
    [function] = [f for f in g.functions.values() if f.handler == handler]
    return function


def env_queue(g: Granted, env: Mapping[str, str], variable: str) -> Queue:
    url = env[variable]
    return next(q for q in g.queues.values() if q.url == url)
