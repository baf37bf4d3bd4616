"""What a planned module creates and grants, read from its resources (see ``plan``)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from tests.terraform.iam.plan import ACCOUNT, PARTITION, Planned
from tests.terraform.iam.policy import Statement, statements


@dataclass
class Role:
    name: str
    arn: str
    trust: list[Statement] | None  # None: a role the module does not create (it only attaches a policy)
    policy: list[Statement] = field(default_factory=list)  # every statement the module attaches


@dataclass
class Function:
    name: str
    arn: str
    role: str  # role name
    handler: str
    env: dict[str, str]
    tracing: bool
    log_group_arn: str


@dataclass
class Queue:
    name: str
    arn: str
    url: str
    fifo: bool
    kms_key: str | None
    attributes: dict[str, str]  # for CreateQueue (no RedrivePolicy: set once every queue exists)
    redrive_policy: str | None


@dataclass
class Granted:
    planned: Planned
    roles: dict[str, Role] = field(default_factory=dict)
    functions: dict[str, Function] = field(default_factory=dict)  # by function name
    queues: dict[str, Queue] = field(default_factory=dict)  # by ARN
    queue_policies: dict[str, list[Statement]] = field(default_factory=dict)  # queue ARN -> statements
    permissions: list[dict[str, Any]] = field(default_factory=list)  # aws_lambda_permission values
    mappings: list[dict[str, Any]] = field(default_factory=list)  # event source mappings
    invoke_configs: list[dict[str, Any]] = field(default_factory=list)
    pipes: list[dict[str, Any]] = field(default_factory=list)
    rules: dict[str, dict[str, Any]] = field(default_factory=dict)  # rule name -> values
    targets: list[dict[str, Any]] = field(default_factory=list)
    schedule_groups: list[str] = field(default_factory=list)
    buses: list[str] = field(default_factory=list)
    log_groups: dict[str, str] = field(default_factory=dict)  # name -> ARN
    tables: list[dict[str, Any]] = field(default_factory=list)  # aws_dynamodb_table values
    buckets: list[str] = field(default_factory=list)  # S3 bucket names
    # (bucket ARN, queue ARN, key prefix) of each S3 event notification to a queue
    bucket_notifications: list[tuple[str, str, str]] = field(default_factory=list)

    def role_of_arn(self, arn: str) -> Role:
        return self.roles[arn.rsplit("/", 1)[-1]]

    def function_of_arn(self, arn: str) -> Function | None:
        return next((f for f in self.functions.values() if f.arn == arn.removesuffix(":$LATEST")), None)

    def queue_by_name(self, name: str) -> Queue:
        return next(q for q in self.queues.values() if q.name == name)


def _configured_json(value: Any) -> str | None:
    """An optional-computed attribute: a JSON document when configured; when not, the overridden
    resource holds a placeholder string (the test framework's, for a computed value)."""
    if not isinstance(value, str):
        return None
    try:
        return value if isinstance(json.loads(value), dict) else None
    except ValueError:
        return None


def _role_arn(name: str) -> str:
    return f"arn:{PARTITION}:iam::{ACCOUNT}:role/{name}"


def granted(planned: Planned) -> Granted:
    g = Granted(planned)
    for values in planned.of("aws_iam_role").values():
        g.roles[values["name"]] = Role(
            values["name"], values["arn"], statements(f"{values['name']} trust", values["assume_role_policy"])
        )
    for values in planned.of("aws_iam_role_policy").values():
        name = values["role"]
        role = g.roles.setdefault(name, Role(name, _role_arn(name), None))
        role.policy += statements(f"{name}/{values['name']}", values["policy"])
    assert not planned.of("aws_iam_role_policy_attachment"), "managed policy attachments: read them too"
    for values in planned.of("aws_cloudwatch_log_group").values():
        g.log_groups[values["name"]] = values["arn"]
    for values in planned.of("aws_lambda_function").values():
        name = values["function_name"]
        variables = (values.get("environment") or [{}])[0].get("variables") or {}
        g.functions[name] = Function(
            name=name,
            arn=values["arn"],
            role=values["role"].rsplit("/", 1)[-1],
            handler=values["handler"],
            env=dict(variables),
            tracing=(values.get("tracing_config") or [{}])[0].get("mode") == "Active",
            log_group_arn=g.log_groups.get(f"/aws/lambda/{name}", ""),
        )
    for values in planned.of("aws_sqs_queue").values():
        attributes = {
            "VisibilityTimeout": str(values.get("visibility_timeout_seconds") or 30),
            "MessageRetentionPeriod": str(values.get("message_retention_seconds") or 345600),
            "MaximumMessageSize": str(values.get("max_message_size") or 262144),
        }
        if values.get("fifo_queue"):
            attributes["FifoQueue"] = "true"
            attributes["ContentBasedDeduplication"] = str(
                bool(values.get("content_based_deduplication"))
            ).lower()
        if values.get("kms_master_key_id"):
            attributes["KmsMasterKeyId"] = values["kms_master_key_id"]
        g.queues[values["arn"]] = Queue(
            name=values["name"],
            arn=values["arn"],
            url=values["url"],
            fifo=bool(values.get("fifo_queue")),
            kms_key=values.get("kms_master_key_id") or None,
            attributes=attributes,
            redrive_policy=_configured_json(values.get("redrive_policy")),
        )
    by_url = {q.url: q for q in g.queues.values()}
    for values in planned.of("aws_sqs_queue_policy").values():
        queue = by_url[values["queue_url"]]
        g.queue_policies[queue.arn] = statements(f"queue policy of {queue.name}", values["policy"])
    g.permissions = list(planned.of("aws_lambda_permission").values())
    g.mappings = list(planned.of("aws_lambda_event_source_mapping").values())
    g.invoke_configs = list(planned.of("aws_lambda_function_event_invoke_config").values())
    g.pipes = list(planned.of("aws_pipes_pipe").values())
    g.rules = {v["name"]: v for v in planned.of("aws_cloudwatch_event_rule").values()}
    g.targets = list(planned.of("aws_cloudwatch_event_target").values())
    g.schedule_groups = [v["name"] for v in planned.of("aws_scheduler_schedule_group").values()]
    g.buses = [v["name"] for v in planned.of("aws_cloudwatch_event_bus").values()]
    g.tables = list(planned.of("aws_dynamodb_table").values())
    g.buckets = [v["bucket"] for v in planned.of("aws_s3_bucket").values()]
    for values in planned.of("aws_s3_bucket_notification").values():
        for queue in values.get("queue") or []:
            g.bucket_notifications.append(
                (
                    f"arn:{PARTITION}:s3:::{values['bucket']}",
                    queue["queue_arn"],
                    queue.get("filter_prefix") or "",
                )
            )
    return g


def dlq_sources(g: Granted) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for queue in g.queues.values():
        if queue.redrive_policy:
            out.setdefault(json.loads(queue.redrive_policy)["deadLetterTargetArn"], []).append(queue.arn)
    return out
