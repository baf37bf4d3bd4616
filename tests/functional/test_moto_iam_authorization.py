"""Why the emulator does not enforce IAM: moto 5.2.5's authorization denies what AWS allows.

Issue 9 asked whether the emulator could check every call against the caller's role, as AWS does, by
giving each function worker its role's credentials and turning on moto's IAM authorization
(``INITIAL_NO_AUTH_ACTION_COUNT``). These are the answers moto gives a role holding exactly the
permissions our modules grant (each one correct on AWS, per AWS's service authorization reference),
pinned so an upgrade of moto that fixes them shows up here. Until then the emulator leaves IAM off, and
tests/terraform/test_least_privilege.py checks every call our functions and AWS's services make
against the planned policies instead (both ways: used is granted, granted is used).

What moto gets wrong, each a false AccessDenied for a call AWS allows:
- a batch operation is checked under its own name (sqs:SendMessageBatch, sqs:DeleteMessageBatch,
  sqs:ChangeMessageVisibilityBatch), which IAM has no action for: AWS authorises it by the single form;
- Lambda's Invoke is checked as lambda:Invoke, not lambda:InvokeFunction;
- every service but SQS (and S3, IAM, STS) is checked against resource "*": a statement naming the
  exact schedule, table or topic ARN never matches;
- the credentials terraform and the runtime use are not an IAM user's, and a role that trusts a
  service principal (lambda.amazonaws.com, scheduler.amazonaws.com) cannot be assumed by anyone but
  that service, so the runtime could not take its functions' roles at all.
And what it never checks: iam:PassRole (CreateSchedule's RoleArn), resource-based policies (queue
policies, Lambda permissions), condition keys other than a trust policy's, KMS behind SSE-KMS queues.
"""

from __future__ import annotations

import io
import json
import zipfile
from collections.abc import Callable, Iterator
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError
from moto import mock_aws
from moto.core import set_initial_no_auth_action_count

REGION = "us-east-1"
ACCOUNT = "123456789012"
QUEUE_ARN = f"arn:aws:sqs:{REGION}:{ACCOUNT}:orders"
TABLE_ARN = f"arn:aws:dynamodb:{REGION}:{ACCOUNT}:table/orders-idempotency"
TOPIC_ARN = f"arn:aws:sns:{REGION}:{ACCOUNT}:orders"
FUNCTION_ARN = f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:orders-fn"
ACCOUNT_TRUST = {
    "Version": "2012-10-17",
    "Statement": [
        {"Effect": "Allow", "Principal": {"AWS": f"arn:aws:iam::{ACCOUNT}:root"}, "Action": "sts:AssumeRole"}
    ],
}
LAMBDA_TRUST = {
    "Version": "2012-10-17",
    "Statement": [
        {"Effect": "Allow", "Principal": {"Service": "lambda.amazonaws.com"}, "Action": "sts:AssumeRole"}
    ],
}
# What modules/consumer and modules/self-healing grant (exact ARNs), in one role.
GRANTED = {
    "Version": "2012-10-17",
    "Statement": [
        {"Effect": "Allow", "Action": ["sqs:SendMessage", "sqs:DeleteMessage", "sqs:ChangeMessageVisibility"], "Resource": QUEUE_ARN},
        {"Effect": "Allow", "Action": "scheduler:CreateSchedule", "Resource": f"arn:aws:scheduler:{REGION}:{ACCOUNT}:schedule/orders-retries/*"},
        {"Effect": "Allow", "Action": ["dynamodb:PutItem", "dynamodb:BatchWriteItem"], "Resource": TABLE_ARN},
        {"Effect": "Allow", "Action": "sns:Publish", "Resource": TOPIC_ARN},
        {"Effect": "Allow", "Action": "lambda:InvokeFunction", "Resource": FUNCTION_ARN},
    ],
}  # fmt: skip


def _zip() -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("handler.py", "def handle(event, context):\n    return None\n")
    return buffer.getvalue()


@pytest.fixture
def world(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, Any]]:
    for name in ("AWS_ENDPOINT_URL", "AWS_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    with mock_aws(config={"lambda": {"use_docker": False}}):
        iam = boto3.client("iam", region_name=REGION)
        queue = boto3.client("sqs", region_name=REGION).create_queue(QueueName="orders")["QueueUrl"]
        boto3.client("scheduler", region_name=REGION).create_schedule_group(Name="orders-retries")
        boto3.client("dynamodb", region_name=REGION).create_table(
            TableName="orders-idempotency",
            KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
            AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"}],
            BillingMode="PAY_PER_REQUEST",
        )
        boto3.client("sns", region_name=REGION).create_topic(Name="orders")
        role = iam.create_role(RoleName="orders", AssumeRolePolicyDocument=json.dumps(ACCOUNT_TRUST))["Role"][
            "Arn"
        ]
        service_role = iam.create_role(
            RoleName="orders-fn", AssumeRolePolicyDocument=json.dumps(LAMBDA_TRUST)
        )["Role"]["Arn"]
        boto3.client("lambda", region_name=REGION).create_function(
            FunctionName="orders-fn", Runtime="python3.12", Role=service_role, Handler="handler.handle", Code={"ZipFile": _zip()}
        )  # fmt: skip
        iam.put_role_policy(RoleName="orders", PolicyName="granted", PolicyDocument=json.dumps(GRANTED))
        credentials = boto3.client("sts", region_name=REGION).assume_role(
            RoleArn=role, RoleSessionName="orders"
        )["Credentials"]
        as_role = {
            "region_name": REGION,
            "aws_access_key_id": credentials["AccessKeyId"],
            "aws_secret_access_key": credentials["SecretAccessKey"],
            "aws_session_token": credentials["SessionToken"],
        }
        yield {"queue": queue, "as_role": as_role, "service_role": service_role}


def _answer(call: Callable[[], Any]) -> str:
    @set_initial_no_auth_action_count(0)
    def enforced() -> str:
        try:
            call()
        except ClientError as exc:
            return str(exc.response["Error"]["Code"])
        return "allowed"

    answer: str = enforced()
    return answer


def test_moto_checks_an_exact_queue_arn_as_aws_does(world: dict[str, Any]) -> None:
    sqs = boto3.client("sqs", **world["as_role"])
    other = boto3.client("sqs", region_name=REGION).create_queue(QueueName="other")["QueueUrl"]
    assert _answer(lambda: sqs.send_message(QueueUrl=world["queue"], MessageBody="x")) == "allowed"
    assert _answer(lambda: sqs.send_message(QueueUrl=other, MessageBody="x")) == "403"


@pytest.mark.parametrize(
    "call",
    [
        "SendMessageBatch (sqs:SendMessage)",
        "DeleteMessageBatch (sqs:DeleteMessage)",
        "ChangeMessageVisibilityBatch (sqs:ChangeMessageVisibility)",
        "CreateSchedule in the group (scheduler:CreateSchedule on schedule/orders-retries/*)",
        "PutItem (dynamodb:PutItem on the table)",
        "BatchWriteItem (dynamodb:BatchWriteItem on the table)",
        "Publish (sns:Publish on the topic)",
        "Invoke (lambda:InvokeFunction on the function)",
    ],
)
def test_moto_denies_what_aws_allows(world: dict[str, Any], call: str) -> None:
    role = world["as_role"]
    sqs, scheduler, dynamodb = (boto3.client(s, **role) for s in ("sqs", "scheduler", "dynamodb"))
    sns, lambda_ = boto3.client("sns", **role), boto3.client("lambda", **role)
    entry = [{"Id": "0", "ReceiptHandle": "handle"}]
    calls: dict[str, Callable[[], Any]] = {
        "SendMessageBatch": lambda: sqs.send_message_batch(QueueUrl=world["queue"], Entries=[{"Id": "0", "MessageBody": "x"}]),
        "DeleteMessageBatch": lambda: sqs.delete_message_batch(QueueUrl=world["queue"], Entries=entry),
        "ChangeMessageVisibilityBatch": lambda: sqs.change_message_visibility_batch(
            QueueUrl=world["queue"], Entries=[{**entry[0], "VisibilityTimeout": 10}]
        ),
        "CreateSchedule": lambda: scheduler.create_schedule(
            Name="sr-1", GroupName="orders-retries", ScheduleExpression="at(2030-01-01T00:00:00)",
            FlexibleTimeWindow={"Mode": "OFF"}, Target={"Arn": QUEUE_ARN, "RoleArn": world["service_role"]},
        ),
        "PutItem": lambda: dynamodb.put_item(TableName="orders-idempotency", Item={"id": {"S": "a"}}),
        "BatchWriteItem": lambda: dynamodb.batch_write_item(
            RequestItems={"orders-idempotency": [{"PutRequest": {"Item": {"id": {"S": "a"}}}}]}
        ),
        "Publish": lambda: sns.publish(TopicArn=TOPIC_ARN, Message="x"),
        "Invoke": lambda: lambda_.invoke(FunctionName=FUNCTION_ARN, InvocationType="DryRun"),
    }  # fmt: skip
    answer = _answer(calls[call.split(maxsplit=1)[0]])
    assert answer in ("403", "AccessDenied", "AccessDeniedException"), (
        f"moto now allows {call}: its IAM authorization may have caught up with AWS; see whether the "
        "emulator can enforce IAM (this module's docstring)"
    )


def test_the_runtime_could_not_take_its_functions_roles(world: dict[str, Any]) -> None:
    sts = boto3.client("sts", region_name=REGION)
    sqs = boto3.client("sqs", region_name=REGION)
    # The runtime's and terraform's credentials belong to no IAM user: refused once authorization is on.
    assert _answer(lambda: sqs.create_queue(QueueName="q")) == "403"
    # A function's role trusts lambda.amazonaws.com only: nobody the runtime can be may assume it.
    assert _answer(lambda: sts.assume_role(RoleArn=world["service_role"], RoleSessionName="worker")) in (
        "InvalidClientTokenId",
        "AccessDenied",
        "403",
    )
