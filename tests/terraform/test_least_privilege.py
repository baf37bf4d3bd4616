"""Least privilege, proven both ways, for every role our modules create or extend.

Each case (scheduled-retry, self-healing, the native-retry example) plans a module with the ARNs AWS
would give it (tests/terraform/iam/plan.py; all cases in one generated root), builds the
same names on in-process moto, runs the deployed handlers with their planned environments through
every call path of that configuration, and records each AWS call and who makes it (the function's
code, or a service acting with a role). Then:

- every call is allowed by the planned policy of the role it is made with, on the exact ARN it names
  (with the KMS and iam:PassRole permissions the service needs behind it, and the Scheduler's
  deliveries as the execution role);
- every action on every resource the policies grant is used by some recorded path or service, or is
  listed in check.EXPLAINED with the reason;
- each role trusts only the service that uses it, and every rule target can be delivered to.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from moto import mock_aws
from serverless_retry_tools.local.emulator.moto_patches import patched

from tests.terraform.conftest import Workspace
from tests.terraform.iam import check, native_paths, operator_paths, selfheal_paths
from tests.terraform.iam.actions import Need, all_needs
from tests.terraform.iam.consumer_paths import POLICY, ConsumerRun
from tests.terraform.iam.granted import Granted, granted
from tests.terraform.iam.plan import plan_with_arns
from tests.terraform.iam.policy import Statement
from tests.terraform.iam.recorder import Recorder
from tests.terraform.iam.world import External, World

PACKAGE = "../tests/terraform/fixtures/empty.zip"  # from the generated root (tests/terraform/iam/plan.py)
KEY = "arn:aws:kms:us-east-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab"
TABLE = "orders-idempotency"
TABLE_ARN = f"arn:aws:dynamodb:us-east-1:123456789012:table/{TABLE}"
CLAIMS = "shared-claims"
CLAIMS_ARN = f"arn:aws:dynamodb:us-east-1:123456789012:table/{CLAIMS}"
CONSUMER = "serverless_retry.handlers.consumer.handler"
OPERATOR = "serverless_retry.handlers.redrive_queue.handler"

SCHEDULED: dict[str, dict[str, Any]] = {
    # auto: SQS delays, the Scheduler beyond 900 s; KMS, tracing, idempotency, the operator function.
    "standard": {
        "retry_policy": POLICY,
        "kms_key_arn": KEY,
        "tracing": True,
        "idempotency_table_arn": TABLE_ARN,
        "operator_redrive": {"enabled": True},
    },
    # No claims (opted out): no DynamoDB permission at all.
    "delays_within_900s": {
        "retry_policy": {**POLICY, "rules": POLICY["rules"][:1]},
        "claims": {"enabled": False},
    },
    "visibility": {"retry_policy": {**POLICY, "transport": "visibility"}, "idempotency_table_arn": TABLE_ARN},
    # Claims in a table of one's own (nothing created): the grants name exactly that table.
    "sqs_hops": {"retry_policy": {**POLICY, "transport": "sqs-hops"}, "claims": {"table_arn": CLAIMS_ARN}},
    "fifo_ordered": {"fifo": True, "retry_policy": POLICY, "idempotency_table_arn": TABLE_ARN},
    "fifo_unordered": {"fifo": True, "fifo_order": "unordered", "retry_policy": POLICY, "kms_key_arn": KEY},
}


TOPIC_KEY = "arn:aws:kms:us-east-1:123456789012:key/5678abcd-12ab-34cd-56ef-1234567890ab"
SOURCE_ROLES = {
    "orders-fn": "orders-fn-role",
    "reindex-fn": "reindex-fn-role",
    "billing-fn": "billing-fn-role",
}
SELF_HEALING: dict[str, dict[str, Any]] = {
    # Redrive to the failed function: an immediate invoke (reindex), a schedule (orders), exhausted.
    "function": {
        "sources": {
            "orders": {"function_name": "orders-fn", "function_role_name": "orders-fn-role", "topic_arn": selfheal_paths.TOPIC},
            "reindex": {"function_name": "reindex-fn", "function_role_name": "reindex-fn-role", "retry_policy": selfheal_paths.NOW},
        },
        "retry_policy": selfheal_paths.POLICY,
        "do_not_retry": ["KeyError", "ValidationError"],
    },
    # One source's failure records go to the module's bucket (on_failure = "s3"): Lambda writes them with
    # the source's role, the bucket's notification feeds the failure queue, and the enrichment and the
    # redrive read them back (a record too large for the bus crosses it as a pointer).
    "s3_records": {
        "sources": {
            "orders": {"function_name": "orders-fn", "function_role_name": "orders-fn-role", "topic_arn": selfheal_paths.TOPIC},
            "reindex": {"function_name": "reindex-fn", "function_role_name": "reindex-fn-role", "retry_policy": selfheal_paths.NOW, "on_failure": "s3"},
        },
        "retry_policy": selfheal_paths.POLICY,
        "do_not_retry": ["KeyError", "ValidationError"],
    },
    # Redrive to the topic (publish now, a schedule that publishes), with the function as the fallback;
    # SSE-KMS queues and encrypted topics; tracing.
    "topic": {
        "sources": {
            "orders": {"function_name": "orders-fn", "function_role_name": "orders-fn-role", "topic_arn": selfheal_paths.TOPIC, "retry_policy": selfheal_paths.NOW},
            "billing": {"function_name": "billing-fn", "function_role_name": "billing-fn-role", "topic_arn": selfheal_paths.BILLING_TOPIC},
            "reindex": {"function_name": "reindex-fn", "function_role_name": "reindex-fn-role"},
        },
        "retry_policy": selfheal_paths.POLICY,
        "do_not_retry": ["KeyError", "ValidationError"],
        "redrive_to": "topic",
        "kms_key_arn": KEY,
        "topic_kms_key_arns": [TOPIC_KEY],
        "tracing": True,
    },
}  # fmt: skip

# examples/native-retry: modules/consumer with a plain handler (processor = null), Powertools
# idempotency on its table, ledger writes granted by the example itself. No alarms (no IAM in them).
NATIVE: dict[str, Any] = {"package": PACKAGE, "release": "fixed", "monitoring": False}


@dataclass
class Outcome:
    granted: Granted
    needs: list[Need]
    problems: list[check.Problem]


@pytest.fixture(scope="module")
def plans(workspace: Workspace) -> dict[str, Granted]:
    """Every case of both modules, planned together (one root, one `terraform test`)."""
    processor = "tests.terraform.iam.processors:handle"
    cases: dict[str, tuple[str, dict[str, Any]]] = {
        **{
            f"scheduled_{name}": ("modules/scheduled-retry", {"name": "orders", "package": PACKAGE, "processor": processor, **variables})
            for name, variables in SCHEDULED.items()
        },
        **{
            f"healing_{name}": ("modules/self-healing", {"name": "heal", "package": PACKAGE, **variables})
            for name, variables in SELF_HEALING.items()
        },
        "native": ("examples/native-retry", NATIVE),
    }  # fmt: skip
    return {case: granted(planned) for case, planned in plan_with_arns(workspace, cases).items()}


@pytest.fixture(autouse=True)
def _aws_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in [n for n in __import__("os").environ if n.startswith("AWS_ENDPOINT_URL")] + ["AWS_PROFILE"]:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    monkeypatch.setenv("AWS_REGION", "us-east-1")


@pytest.fixture
def world_of() -> Iterator[Any]:
    with (
        mock_aws(config={"lambda": {"use_docker": False}}),
        patched("sqs_message_move_task_not_implemented"),
    ):
        recorder = Recorder()
        with recorder.recording():

            def make(g: Granted, external: External) -> World:
                world = World(g, external, recorder)
                world.create()
                return world

            yield make


def _verdict(world: World, function_roles: dict[str, str]) -> Outcome:
    g = world.granted
    facts = world.facts
    needs = (
        all_needs(world.recorder.calls, facts) + world.notes + check.platform_needs(g, facts, function_roles)
    )
    target_problems, _ = check.rule_targets(g)
    problems = (
        check.denied(g, needs) + check.unused(g, needs) + check.trust(g, function_roles) + target_problems
    )
    return Outcome(g, needs, problems)


@pytest.mark.parametrize("case", SCHEDULED)
def test_scheduled_retry_grants_exactly_what_its_functions_use(
    plans: dict[str, Granted], world_of: Any, case: str
) -> None:
    g = plans[f"scheduled_{case}"]
    external = External(
        tables=[TABLE] * bool(SCHEDULED[case].get("idempotency_table_arn"))
        + [CLAIMS] * bool(SCHEDULED[case].get("claims", {}).get("table_arn"))
    )
    world: World = world_of(g, external)
    consumer = next(f for f in g.functions.values() if f.handler == CONSUMER)
    ConsumerRun(world, consumer).every_path()
    operator = next((f for f in g.functions.values() if f.handler == OPERATOR), None)
    if operator is not None:
        operator_paths.every_path(world, operator)
    outcome = _verdict(world, {})
    if outcome.problems:
        pytest.fail(f"{case}:\n{check.describe(outcome.problems)}", pytrace=False)


@pytest.mark.parametrize("case", SELF_HEALING)
def test_self_healing_grants_exactly_what_its_functions_and_services_use(
    plans: dict[str, Granted], world_of: Any, case: str
) -> None:
    g = plans[f"healing_{case}"]
    sources = SELF_HEALING[case]["sources"]
    roles = {s["function_name"]: s["function_role_name"] for s in sources.values()}
    key = TOPIC_KEY if SELF_HEALING[case].get("topic_kms_key_arns") else None
    topics = {s["topic_arn"]: key for s in sources.values() if s.get("topic_arn")}
    world: World = world_of(g, External(functions=roles, topics=topics))
    selfheal_paths.every_path(world, topic_mode=SELF_HEALING[case].get("redrive_to") == "topic")
    outcome = _verdict(world, roles)
    if outcome.problems:
        pytest.fail(f"{case}:\n{check.describe(outcome.problems)}", pytrace=False)


@pytest.mark.filterwarnings("ignore:No application metrics to publish:UserWarning")
def test_native_retry_example_grants_exactly_what_its_plain_handler_uses(
    plans: dict[str, Granted], world_of: Any
) -> None:
    g = plans["native"]
    world: World = world_of(g, External())
    native_paths.every_path(world, next(iter(g.functions.values())))
    outcome = _verdict(world, {})
    if outcome.problems:
        pytest.fail(f"native:\n{check.describe(outcome.problems)}", pytrace=False)


def test_the_check_catches_a_missing_grant_and_an_extra_one(plans: dict[str, Granted], world_of: Any) -> None:
    """The same recorded run against the standard case's policy less one action (the claims' write)
    and plus one statement no path needs."""
    g = copy.deepcopy(plans["scheduled_standard"])
    world: World = world_of(g, External(tables=[TABLE]))
    ConsumerRun(world, next(f for f in g.functions.values() if f.handler == CONSUMER)).every_path()
    consumer = g.roles["orders"]
    claims = next(s for s in consumer.policy if s.sid == "RetryClaims")
    # The claims' one action (a conditional UpdateItem) taken away, a read no path makes in its place.
    narrowed = {**claims.raw, "Action": ["dynamodb:GetItem"]}
    extra = {
        "Sid": "Extra",
        "Effect": "Allow",
        "Action": "sqs:SendMessage",
        "Resource": g.queue_by_name("orders-dlq").arn,
    }
    consumer.policy = [s for s in consumer.policy if s is not claims] + [
        Statement(claims.document, claims.index, narrowed),
        Statement("extra", 0, extra),
    ]
    problems = check.describe(_verdict(world, {}).problems)
    assert (
        "needs dynamodb:UpdateItem on arn:aws:dynamodb:us-east-1:123456789012:table/orders-claims" in problems
    )
    assert (
        "Extra grants sqs:SendMessage on arn:aws:sqs:us-east-1:123456789012:orders-dlq, which no path uses"
        in problems
    )


def test_the_check_catches_a_bucket_destination_without_its_grants(
    plans: dict[str, Granted], world_of: Any
) -> None:
    """The S3 case's recorded run against its policies less ListBucket (which Lambda's S3 destination
    needs without any call of ours showing it) and a failure queue policy that lets S3 send for any
    account's bucket of that name."""
    g = copy.deepcopy(plans["healing_s3_records"])
    sources = SELF_HEALING["s3_records"]["sources"]
    roles = {s["function_name"]: s["function_role_name"] for s in sources.values()}
    world: World = world_of(g, External(functions=roles, topics={selfheal_paths.TOPIC: None}))
    selfheal_paths.every_path(world, topic_mode=False)
    source = g.roles["reindex-fn-role"]
    source.policy = [s for s in source.policy if s.sid != "ListFailureRecordsBucket"]
    [(bucket, queue, _prefix)] = g.bucket_notifications
    policy = g.queue_policies[queue]
    opened = next(s for s in policy if s.sid == "S3SendsFailureRecordEvents")
    loose = {**opened.raw, "Condition": {"ArnEquals": {"aws:SourceArn": bucket}}}
    g.queue_policies[queue] = [s for s in policy if s is not opened] + [
        Statement(opened.document, opened.index, loose)
    ]
    problems = check.describe(_verdict(world, roles).problems)
    assert f"needs s3:ListBucket on {bucket} for Lambda's S3 destination requires it" in problems
    assert f"{queue} lets S3 send for {bucket} of any account (no aws:SourceAccount)" in problems
