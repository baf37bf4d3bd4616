"""What IAM authorises an API call by: the actions, on the exact ARNs, with the condition keys AWS
sets, including what a service then does with the caller's (or a passed role's) permissions.

Sources (AWS documentation):
- SQS: "Amazon SQS API permissions: Actions and resource reference": the batch operations are
  authorised by their single forms (SendMessageBatch by sqs:SendMessage, DeleteMessageBatch by
  sqs:DeleteMessage, ChangeMessageVisibilityBatch by sqs:ChangeMessageVisibility). SSE-KMS ("Key
  management"): a producer needs kms:GenerateDataKey and kms:Decrypt on the queue's key, a consumer
  kms:Decrypt. Dead-letter queue redrive: StartMessageMoveTask needs sqs:StartMessageMoveTask,
  sqs:ReceiveMessage, sqs:DeleteMessage and sqs:GetQueueAttributes on the dead-letter queue and
  sqs:SendMessage on the destination (without a DestinationArn: on each original source queue).
- DynamoDB: every operation is its own action (BatchWriteItem is dynamodb:BatchWriteItem, not
  PutItem); a condition expression needs nothing more than the write it guards.
- EventBridge Scheduler: GetSchedule needs scheduler:GetSchedule on the schedule's ARN.
  CreateSchedule needs scheduler:CreateSchedule on the schedule's ARN and
  iam:PassRole on the execution role (iam:PassedToService = scheduler.amazonaws.com); at run time the
  execution role needs the target's action: sqs:SendMessage (templated SQS target), lambda:InvokeFunction
  (Lambda target), the API's own action for a universal target (aws-sdk:sns:publish -> sns:Publish on
  the TopicArn of its input), and sqs:SendMessage on the dead-letter queue.
- Lambda: Invoke is lambda:InvokeFunction on the function's ARN (qualified when a Qualifier is given).
- SNS: Publish is sns:Publish on the topic; an encrypted topic also needs kms:GenerateDataKey and
  kms:Decrypt on its key.
- EventBridge: PutEvents is events:PutEvents on each entry's bus.
- S3: GetObject is s3:GetObject and PutObject s3:PutObject, on the object's ARN
  (arn:aws:s3:::bucket/key); an SSE-KMS bucket's keys are not modelled here (no case uses one).

An operation this table does not know fails the test: a new call in the code must be mapped here
(and granted) before it can pass.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from tests.terraform.iam.recorder import Call


@dataclass(frozen=True)
class Need:
    """One permission a role needs: ``action`` on ``resource`` (with condition keys ``context``)."""

    role: str
    via: str
    action: str
    resource: str
    because: str
    context: tuple[tuple[str, str], ...] = ()


@dataclass
class Facts:
    """What the needs depend on beyond the call: the account, each queue's and topic's KMS key, and
    the source queues of each dead-letter queue (its redrive policies)."""

    region: str
    account: str
    partition: str = "aws"
    queue_keys: dict[str, str | None] = field(default_factory=dict)  # queue ARN -> KMS key ARN
    topic_keys: dict[str, str | None] = field(default_factory=dict)  # topic ARN -> KMS key ARN
    dlq_sources: dict[str, list[str]] = field(default_factory=dict)  # DLQ ARN -> source queue ARNs

    def queue_arn(self, url_or_name: str) -> str:
        name = url_or_name.rstrip("/").rsplit("/", 1)[-1]
        account = self.account
        if url_or_name.startswith("http"):
            account = url_or_name.rstrip("/").rsplit("/", 2)[-2]
        return f"arn:{self.partition}:sqs:{self.region}:{account}:{name}"

    def function_arn(self, name_or_arn: str, qualifier: str | None = None) -> str:
        arn = (
            name_or_arn
            if name_or_arn.startswith("arn:")
            else f"arn:{self.partition}:lambda:{self.region}:{self.account}:function:{name_or_arn}"
        )
        return f"{arn}:{qualifier}" if qualifier else arn

    def table_arn(self, name: str) -> str:
        return (
            name
            if name.startswith("arn:")
            else f"arn:{self.partition}:dynamodb:{self.region}:{self.account}:table/{name}"
        )

    def bus_arn(self, name: str | None) -> str:
        name = name or "default"
        return (
            name
            if name.startswith("arn:")
            else f"arn:{self.partition}:events:{self.region}:{self.account}:event-bus/{name}"
        )


def _sqs_send(role: str, via: str, queue: str, facts: Facts, because: str) -> list[Need]:
    needs = [Need(role, via, "sqs:SendMessage", queue, because)]
    key = facts.queue_keys.get(queue)
    if key:
        needs += [
            Need(role, via, "kms:GenerateDataKey", key, f"{because} (SSE-KMS queue)"),
            Need(role, via, "kms:Decrypt", key, f"{because} (SSE-KMS queue)"),
        ]
    return needs


def _sqs_receive(role: str, via: str, queue: str, facts: Facts, because: str) -> list[Need]:
    needs = [Need(role, via, "sqs:ReceiveMessage", queue, because)]
    key = facts.queue_keys.get(queue)
    if key:
        needs.append(Need(role, via, "kms:Decrypt", key, f"{because} (SSE-KMS queue)"))
    return needs


def _sns_publish(role: str, via: str, topic: str, facts: Facts, because: str) -> list[Need]:
    needs = [Need(role, via, "sns:Publish", topic, because)]
    key = facts.topic_keys.get(topic)
    if key:
        needs += [
            Need(role, via, "kms:GenerateDataKey", key, f"{because} (encrypted topic)"),
            Need(role, via, "kms:Decrypt", key, f"{because} (encrypted topic)"),
        ]
    return needs


_SQS_SIMPLE = {
    "DeleteMessage": "sqs:DeleteMessage",
    "DeleteMessageBatch": "sqs:DeleteMessage",
    "ChangeMessageVisibility": "sqs:ChangeMessageVisibility",
    "ChangeMessageVisibilityBatch": "sqs:ChangeMessageVisibility",
    "GetQueueAttributes": "sqs:GetQueueAttributes",
    "ListDeadLetterSourceQueues": "sqs:ListDeadLetterSourceQueues",
}
_DYNAMODB_ITEM = {"GetItem", "PutItem", "UpdateItem", "DeleteItem", "Query"}


def scheduler_delivery(role: str, target: Mapping[str, Any], facts: Facts, because: str) -> list[Need]:
    """What the Scheduler does, as the schedule's execution role, when the schedule runs."""
    arn = str(target["Arn"])
    via = "EventBridge Scheduler (the schedule's target)"
    needs: list[Need] = []
    if ":sqs:" in arn:
        needs += _sqs_send(role, via, arn, facts, because)
    elif ":lambda:" in arn:
        needs.append(Need(role, via, "lambda:InvokeFunction", arn, because))
    elif arn.endswith(":aws-sdk:sns:publish"):
        topic = json.loads(str(target["Input"]))["TopicArn"]
        needs += _sns_publish(role, via, topic, facts, because)
    else:
        raise AssertionError(f"a schedule target this test does not know: {arn}")
    dead_letter = (target.get("DeadLetterConfig") or {}).get("Arn")
    if dead_letter:
        needs += _sqs_send(
            role, "EventBridge Scheduler (the schedule's dead-letter queue)", dead_letter, facts, because
        )
    return needs


def _role_name(role_arn: str) -> str:
    return role_arn.rsplit("/", 1)[-1]


def needs_of(call: Call, facts: Facts) -> list[Need]:
    """Every permission ``call`` needs, as its actor and as the roles it hands work to."""
    role, via, op, p = call.actor.role, call.actor.via, call.operation, call.params
    because = f"{call.service}:{op}"
    if call.service == "sqs":
        if op in ("SendMessage", "SendMessageBatch"):
            return _sqs_send(role, via, facts.queue_arn(p["QueueUrl"]), facts, because)
        if op == "ReceiveMessage":
            return _sqs_receive(role, via, facts.queue_arn(p["QueueUrl"]), facts, because)
        if op in _SQS_SIMPLE:
            return [Need(role, via, _SQS_SIMPLE[op], facts.queue_arn(p["QueueUrl"]), because)]
        if op == "GetQueueUrl":
            return [Need(role, via, "sqs:GetQueueUrl", facts.queue_arn(p["QueueName"]), because)]
        if op == "StartMessageMoveTask":
            source = str(p["SourceArn"])
            needs = [Need(role, via, "sqs:StartMessageMoveTask", source, because)]
            needs += _sqs_receive(role, via, source, facts, f"{because} (moving out of the DLQ)")
            needs += [
                Need(role, via, "sqs:DeleteMessage", source, f"{because} (moving out of the DLQ)"),
                Need(role, via, "sqs:GetQueueAttributes", source, f"{because} (moving out of the DLQ)"),
            ]
            destinations = (
                [str(p["DestinationArn"])] if p.get("DestinationArn") else facts.dlq_sources[source]
            )
            for destination in destinations:
                needs += _sqs_send(role, via, destination, facts, f"{because} (moving into {destination})")
            return needs
    if call.service == "scheduler" and op == "CreateSchedule":
        group = p.get("GroupName") or "default"
        schedule = (
            f"arn:{facts.partition}:scheduler:{facts.region}:{facts.account}:schedule/{group}/{p['Name']}"
        )
        target = p["Target"]
        role_arn = str(target["RoleArn"])
        passed = (("iam:PassedToService", "scheduler.amazonaws.com"),)
        return [
            Need(role, via, "scheduler:CreateSchedule", schedule, because),
            Need(role, via, "iam:PassRole", role_arn, f"{because} (the execution role)", passed),
            *scheduler_delivery(_role_name(role_arn), target, facts, f"schedule {p['Name']}"),
        ]
    if call.service == "scheduler" and op == "GetSchedule":
        group = p.get("GroupName") or "default"
        schedule = (
            f"arn:{facts.partition}:scheduler:{facts.region}:{facts.account}:schedule/{group}/{p['Name']}"
        )
        return [Need(role, via, "scheduler:GetSchedule", schedule, because)]
    if call.service == "lambda" and op == "Invoke":
        return [
            Need(
                role,
                via,
                "lambda:InvokeFunction",
                facts.function_arn(p["FunctionName"], p.get("Qualifier")),
                because,
            )
        ]
    if call.service == "sns" and op == "Publish":
        return _sns_publish(role, via, str(p["TopicArn"]), facts, because)
    if call.service == "dynamodb":
        if op in _DYNAMODB_ITEM:
            return [Need(role, via, f"dynamodb:{op}", facts.table_arn(p["TableName"]), because)]
        if op in ("BatchWriteItem", "BatchGetItem"):
            return [Need(role, via, f"dynamodb:{op}", facts.table_arn(t), because) for t in p["RequestItems"]]
    if call.service == "events" and op == "PutEvents":
        return [
            Need(role, via, "events:PutEvents", facts.bus_arn(e.get("EventBusName")), because)
            for e in p["Entries"]
        ]
    if call.service == "s3" and op in ("GetObject", "PutObject"):
        return [Need(role, via, f"s3:{op}", f"arn:{facts.partition}:s3:::{p['Bucket']}/{p['Key']}", because)]
    if call.service == "sts" and op == "GetCallerIdentity":
        return []  # needs no permission
    raise AssertionError(
        f"{call.service}:{op} (made by {via} as {role}) is not in tests/terraform/iam/actions.py: map it to the "
        "IAM actions that authorise it, and grant them in the module"
    )


def all_needs(calls: Iterable[Call], facts: Facts) -> list[Need]:
    out: list[Need] = []
    for call in calls:
        out.extend(needs_of(call, facts))
    return out
