"""Both directions: every permission used is granted (on the exact ARN), every permission granted is
used by some path, or is listed in ``EXPLAINED`` with the reason no recorded call shows it.

What the services do with our roles, read from the plan:
- Lambda's runtime writes each function's logs (and traces, when tracing is on) with its role;
- an SQS event source mapping receives, deletes and reads the queue's attributes with the function's
  role (AWS: "Lambda execution role permissions" for SQS: ReceiveMessage, DeleteMessage,
  GetQueueAttributes; kms:Decrypt for an SSE-KMS queue);
- an on-failure destination of an asynchronous invocation is sent with the function's role; to an S3
  bucket, Lambda writes the record under aws/lambda/async/<function>/ and needs s3:ListBucket on the
  bucket as well (AWS: "Capturing records of Lambda asynchronous invocations", execution role
  permissions of an Amazon S3 destination: s3:PutObject and s3:ListBucket,
  https://docs.aws.amazon.com/lambda/latest/dg/invocation-async-retain-records.html);
- a pipe reads its SQS source (ReceiveMessage, DeleteMessage, GetQueueAttributes), invokes its
  enrichment, puts on its target bus and writes its log group with the pipe's role;
- each role is assumed by the service that uses it, under the conditions its trust policy sets;
- EventBridge rule targets: a Lambda target needs a resource-based permission for the rule, an SQS
  target (and a target's dead-letter queue) a queue policy letting events.amazonaws.com send for it;
- S3 event notifications: the queue a bucket notifies needs a queue policy letting s3.amazonaws.com
  send for that bucket (aws:SourceArn) of this account (aws:SourceAccount).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from tests.terraform.iam.actions import Facts, Need
from tests.terraform.iam.granted import Granted
from tests.terraform.iam.plan import ACCOUNT, PARTITION, REGION
from tests.terraform.iam.policy import Request, Statement, _glob, evaluate

LOG_STREAM = "2026/11/30/[$LATEST]0123456789abcdef0123456789abcdef"
# Where Lambda's S3 destination puts a record: aws/lambda/async/<function-name>/ then this.
S3_RECORD_KEY = "2026/11/30/2026-11-30T10.00.04-0b1c2d3e-4f50-6172-8394-a5b6c7d8e9f0"

# (statement sid, action) -> why no recorded call shows the grant used. Keep it short: every entry is a
# permission our tests cannot see being needed.
EXPLAINED: dict[tuple[str, str], str] = {}


def platform_needs(g: Granted, facts: Facts, function_roles: Mapping[str, str]) -> list[Need]:
    """What AWS services do with the module's roles (see the module docstring). ``function_roles``
    names the roles of functions the module does not create (self-healing's sources)."""
    needs: list[Need] = []
    roles = {f.name: f.role for f in g.functions.values()} | dict(function_roles)
    for f in g.functions.values():
        via = f"Lambda runtime of {f.name}"
        stream = f"{f.log_group_arn}:log-stream:{LOG_STREAM}"
        needs += [
            Need(f.role, via, "logs:CreateLogStream", stream, "the function's logs"),
            Need(f.role, via, "logs:PutLogEvents", stream, "the function's logs"),
        ]
        if f.tracing:
            needs += [
                Need(f.role, via, "xray:PutTraceSegments", "*", "active tracing"),
                Need(f.role, via, "xray:PutTelemetryRecords", "*", "active tracing"),
            ]
    for mapping in g.mappings:
        function = g.function_of_arn(mapping["function_name"]) or g.functions[mapping["function_name"]]
        queue = mapping["event_source_arn"]
        via = f"event source mapping of {function.name}"
        needs += [
            Need(function.role, via, "sqs:ReceiveMessage", queue, "polling"),
            Need(function.role, via, "sqs:DeleteMessage", queue, "deleting processed records"),
            Need(function.role, via, "sqs:GetQueueAttributes", queue, "reading the queue's settings"),
        ]
        if facts.queue_keys.get(queue):
            needs.append(
                Need(function.role, via, "kms:Decrypt", str(facts.queue_keys[queue]), "SSE-KMS queue")
            )
    for config in g.invoke_configs:
        name = (
            config["function_name"].rsplit(":", 1)[-1]
            if config["function_name"].startswith("arn:")
            else config["function_name"]
        )
        for destination in (config.get("destination_config") or [{}])[0].get("on_failure") or []:
            arn = destination["destination"]
            via = f"Lambda on-failure destination of {name}"
            if arn.startswith(f"arn:{PARTITION}:s3:::"):
                key = f"{arn}/aws/lambda/async/{name}/{S3_RECORD_KEY}"
                needs += [
                    Need(roles[name], via, "s3:PutObject", key, "a failed invocation's record"),
                    Need(roles[name], via, "s3:ListBucket", arn, "Lambda's S3 destination requires it"),
                ]
                continue
            assert ":sqs:" in arn, f"a destination type this test does not know: {arn}"
            needs.append(Need(roles[name], via, "sqs:SendMessage", arn, "a failed invocation's record"))
            if facts.queue_keys.get(arn):
                key = str(facts.queue_keys[arn])
                needs += [
                    Need(roles[name], via, a, key, "SSE-KMS queue")
                    for a in ("kms:GenerateDataKey", "kms:Decrypt")
                ]
    for pipe in g.pipes:
        role = pipe["role_arn"].rsplit("/", 1)[-1]
        via = f"pipe {pipe['name']}"
        source = pipe["source"]
        needs += [
            Need(role, via, "sqs:ReceiveMessage", source, "polling the source"),
            Need(role, via, "sqs:DeleteMessage", source, "deleting a delivered batch"),
            Need(role, via, "sqs:GetQueueAttributes", source, "reading the source's settings"),
            Need(role, via, "lambda:InvokeFunction", pipe["enrichment"], "the enrichment"),
            Need(role, via, "events:PutEvents", pipe["target"], "the target bus"),
        ]
        if facts.queue_keys.get(source):
            needs.append(Need(role, via, "kms:Decrypt", str(facts.queue_keys[source]), "SSE-KMS source"))
        for logging in pipe.get("log_configuration") or []:
            for destination in logging.get("cloudwatch_logs_log_destination") or []:
                stream = f"{destination['log_group_arn']}:log-stream:{LOG_STREAM}"
                needs += [
                    Need(role, via, a, stream, "the pipe's logs")
                    for a in ("logs:CreateLogStream", "logs:PutLogEvents")
                ]
    return needs


@dataclass(frozen=True)
class Problem:
    kind: str  # denied | unused | trust | target
    text: str


def _identity_allows(g: Granted, need: Need) -> tuple[bool, str]:
    role = g.roles.get(need.role)
    if role is None:
        return False, "the module neither creates this role nor attaches a policy to it"
    context = {"aws:SecureTransport": "true", **dict(need.context)}
    verdict = evaluate(role.policy, Request(need.action, need.resource, context))
    if verdict.decision == "deny":
        return False, f"denied by {[s.sid for s in verdict.denied_by]}"
    # Same account: a queue policy may also allow, and its explicit deny (e.g. TLS only) always wins.
    resource_policy = g.queue_policies.get(need.resource)
    if resource_policy is not None:
        principal = {"AWS": role.arn}
        on_resource = evaluate(resource_policy, Request(need.action, need.resource, context, principal))
        if on_resource.decision == "deny":
            return False, f"denied by the queue policy ({[s.sid for s in on_resource.denied_by]})"
        if on_resource.allowed:
            return True, ""
    return verdict.allowed, "no statement of the role allows it"


def denied(g: Granted, needs: Iterable[Need]) -> list[Problem]:
    problems: dict[str, Problem] = {}
    for need in needs:
        ok, why = _identity_allows(g, need)
        if not ok:
            text = f"{need.role} (as {need.via}) needs {need.action} on {need.resource} for {need.because}: {why}"
            problems.setdefault(text, Problem("denied", text))
    return list(problems.values())


def unused(g: Granted, needs: Iterable[Need]) -> list[Problem]:
    """Every (action, resource) an Allow statement grants that no need matches and EXPLAINED does not
    name."""
    by_role: dict[str, list[Need]] = {}
    for need in needs:
        by_role.setdefault(need.role, []).append(need)
    problems: list[Problem] = []
    for role in g.roles.values():
        used = by_role.get(role.name, [])
        for statement in role.policy:
            if statement.effect != "Allow":
                continue
            for action in statement.actions():
                for resource in statement.resources():
                    hit = any(
                        _glob(action, case=False).match(n.action)
                        and _glob(resource, case=True).match(n.resource)
                        for n in used
                    )
                    if not hit and (statement.sid, action) not in EXPLAINED:
                        problems.append(
                            Problem(
                                "unused",
                                f"{role.name}: {statement.sid} grants {action} on {resource}, which no path uses",
                            )
                        )
    return problems


def trust(g: Granted, function_roles: Mapping[str, str]) -> list[Problem]:
    """Each role the module creates can be assumed by the service that uses it (with the conditions AWS
    sets), and by nothing else that we know of."""
    users: dict[str, list[tuple[str, dict[str, str]]]] = {}
    for f in g.functions.values():
        users.setdefault(f.role, []).append(("lambda.amazonaws.com", {}))
    for pipe in g.pipes:
        users.setdefault(pipe["role_arn"].rsplit("/", 1)[-1], []).append(
            ("pipes.amazonaws.com", {"aws:SourceAccount": ACCOUNT, "aws:SourceArn": pipe["arn"]})
        )
    for name, role in g.roles.items():
        if role.trust is not None and any(
            "scheduler.amazonaws.com" in str(s.raw.get("Principal")) for s in role.trust
        ):
            for group in g.schedule_groups:
                arn = f"arn:{PARTITION}:scheduler:{REGION}:{ACCOUNT}:schedule-group/{group}"
                users.setdefault(name, []).append(
                    ("scheduler.amazonaws.com", {"aws:SourceAccount": ACCOUNT, "aws:SourceArn": arn})
                )
    problems: list[Problem] = []
    for name, role in g.roles.items():
        if role.trust is None:
            continue
        if name not in users:
            problems.append(Problem("trust", f"{name}: no service of the plan uses this role"))
        for service, context in users.get(name, []):
            request = Request("sts:AssumeRole", role.arn, context, {"Service": service})
            if not evaluate(role.trust, request).allowed:
                problems.append(Problem("trust", f"{name}: {service} cannot assume it ({context})"))
        stranger = Request(
            "sts:AssumeRole",
            role.arn,
            {"aws:SourceAccount": "999999999999"},
            {"Service": "ec2.amazonaws.com"},
        )
        if evaluate(role.trust, stranger).allowed:
            problems.append(Problem("trust", f"{name}: a service that does not use the role can assume it"))
    return problems


def _queue_policy_allows(
    g: Granted, queue: str, source_arn: str, service: str = "events.amazonaws.com", account: str = ACCOUNT
) -> bool:
    statements = g.queue_policies.get(queue)
    if statements is None:
        return False
    context = {"aws:SourceArn": source_arn, "aws:SourceAccount": account, "aws:SecureTransport": "true"}
    request = Request("sqs:SendMessage", queue, context, {"Service": service})
    return evaluate(statements, request).allowed


def rule_targets(g: Granted) -> tuple[list[Problem], set[tuple[str, str]]]:
    """Every rule target can be delivered to (and dead-lettered) by EventBridge, and every S3 bucket
    notification by S3; returns the problems and the resource-policy grants that are used, as
    (statement document, sid) pairs."""
    problems: list[Problem] = []
    used: set[tuple[str, str]] = set()
    for target in g.targets:
        rule = g.rules[target["rule"]]
        rule_arn = rule["arn"]
        arn = target["arn"]
        if ":lambda:" in arn:
            granting = [
                p for p in g.permissions
                if p["principal"] == "events.amazonaws.com" and p["action"] == "lambda:InvokeFunction"
                and p.get("source_arn") == rule_arn
                and (g.function_of_arn(arn) is not None and p["function_name"] in (arn, g.function_of_arn(arn).name))  # type: ignore[union-attr]
            ]  # fmt: skip
            if not granting:
                problems.append(
                    Problem("target", f"rule {rule['name']} cannot invoke {arn}: no lambda permission for it")
                )
            used.update(("lambda permission", str(p["statement_id"])) for p in granting)
        elif ":sqs:" in arn:
            if not _queue_policy_allows(g, arn, rule_arn):
                problems.append(
                    Problem(
                        "target",
                        f"rule {rule['name']} cannot send to {arn}: its queue policy does not let it",
                    )
                )
        else:
            problems.append(
                Problem("target", f"rule {rule['name']}: a target type this test does not know: {arn}")
            )
        for dead_letter in target.get("dead_letter_config") or []:
            if not _queue_policy_allows(g, dead_letter["arn"], rule_arn):
                problems.append(
                    Problem("target", f"rule {rule['name']} cannot dead-letter to {dead_letter['arn']}")
                )
    for bucket, queue, prefix in g.bucket_notifications:
        if not _queue_policy_allows(g, queue, bucket, "s3.amazonaws.com"):
            problems.append(
                Problem(
                    "target", f"{bucket} cannot notify {queue} ({prefix}): its queue policy does not let S3"
                )
            )
        elif _queue_policy_allows(g, queue, bucket, "s3.amazonaws.com", account="999999999999"):
            problems.append(
                Problem("target", f"{queue} lets S3 send for {bucket} of any account (no aws:SourceAccount)")
            )
    # Every Allow of a queue policy names a service and the rules (or buckets) it serves: all must be
    # targets (or notify it).
    targets_of = {(t["arn"], g.rules[t["rule"]]["arn"]) for t in g.targets}
    targets_of |= {(queue, bucket) for bucket, queue, _prefix in g.bucket_notifications}
    targets_of |= {
        (d["arn"], g.rules[t["rule"]]["arn"]) for t in g.targets for d in t.get("dead_letter_config") or []
    }
    for queue, statements in g.queue_policies.items():
        for statement in statements:
            if statement.effect != "Allow":
                continue
            sources = [str(v) for v in _condition_values(statement, "aws:SourceArn")]
            for source in sources:
                if (queue, source) not in targets_of:
                    problems.append(
                        Problem(
                            "unused",
                            f"{statement.document} {statement.sid} lets {source} send, which targets no such rule",
                        )
                    )
    for permission in g.permissions:
        if ("lambda permission", str(permission["statement_id"])) not in used:
            problems.append(
                Problem("unused", f"lambda permission {permission['statement_id']} is used by no rule target")
            )
    return problems, used


def _condition_values(statement: Statement, key: str) -> list[str]:
    out: list[str] = []
    for block in statement.raw.get("Condition", {}).values():
        for name, values in block.items():
            if name.lower() == key.lower():
                out += values if isinstance(values, list) else [values]
    return out


def describe(problems: Iterable[Problem]) -> str:
    return "\n".join(f"- [{p.kind}] {p.text}" for p in problems)
