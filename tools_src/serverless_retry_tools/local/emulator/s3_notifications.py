"""S3 event notifications to SQS as S3 checks them (a fidelity patch of the emulator child).

moto sends a bucket's ObjectCreated events to its SQS destinations (and its ``s3:TestEvent`` when the
configuration is put), but stores any configuration as given. S3 first "verifies that any Amazon SQS
destination exists, and that the bucket owner has permission to publish to it by sending a test
notification" (PutBucketNotificationConfiguration), and refuses with ``InvalidArgument`` "Unable to
validate the following destination configurations" otherwise. Here: the queue must exist and its
policy must allow ``sqs:SendMessage`` to ``s3.amazonaws.com`` (or ``*``) for this bucket, with the
``aws:SourceArn`` / ``aws:SourceAccount`` conditions that name it satisfied, and no Deny that applies.
"""

from __future__ import annotations

import fnmatch
import json
from collections.abc import Mapping
from typing import Any

from serverless_retry_tools.local.emulator.patching import Undo, replace

__all__ = ["UNABLE_TO_VALIDATE", "install", "queue_policy_lets_s3_send"]

UNABLE_TO_VALIDATE = "Unable to validate the following destination configurations"
_S3 = "s3.amazonaws.com"
_ARN_TESTS = ("ArnEquals", "ArnLike", "StringEquals", "StringLike")


def _listed(value: Any) -> list[str]:
    if value is None:
        return []
    return [str(v) for v in value] if isinstance(value, list) else [str(value)]


def _principal_is_s3(principal: Any) -> bool:
    if principal == "*":
        return True
    if not isinstance(principal, Mapping):
        return False
    return _S3 in _listed(principal.get("Service")) or "*" in _listed(principal.get("AWS"))


def _matches(patterns: list[str], value: str, *, case: bool = True) -> bool:
    if not case:
        patterns, value = [p.lower() for p in patterns], value.lower()
    return any(fnmatch.fnmatchcase(value, p) for p in patterns)


def _conditions_hold(condition: Any, bucket_arn: str, account: str) -> bool:
    """Whether S3's request for this bucket satisfies ``condition`` (only the keys S3 sets are known;
    S3 sends over TLS, so aws:SecureTransport is true)."""
    if not isinstance(condition, Mapping):
        return True
    context = {"aws:sourcearn": bucket_arn, "aws:sourceaccount": account, "aws:securetransport": "true"}
    for test, pairs in condition.items():
        if not isinstance(pairs, Mapping):
            return False
        for key, wanted in pairs.items():
            actual = context.get(str(key).lower())
            if actual is None:
                return False  # a key S3's request does not carry
            values = _listed(wanted)
            if test in ("ArnEquals", "StringEquals", "Bool") and actual not in [
                v.lower() if test == "Bool" else v for v in values
            ]:
                return False
            if test in ("ArnLike", "StringLike") and not _matches(values, actual):
                return False
            if test not in (*_ARN_TESTS, "Bool"):
                return False
    return True


def _applies(statement: Mapping[str, Any], queue_arn: str, bucket_arn: str, account: str) -> bool:
    return (
        _principal_is_s3(statement.get("Principal"))
        and _matches(_listed(statement.get("Action")), "sqs:SendMessage", case=False)
        and _matches(_listed(statement.get("Resource")) or ["*"], queue_arn)
        and _conditions_hold(statement.get("Condition"), bucket_arn, account)
    )


def queue_policy_lets_s3_send(
    policy: Mapping[str, Any] | None, queue_arn: str, bucket: str, account: str
) -> bool:
    """Whether ``policy`` lets S3 send the events of ``bucket`` (owned by ``account``) to the queue."""
    statements = (policy or {}).get("Statement") or []
    if isinstance(statements, Mapping):
        statements = [statements]
    bucket_arn = f"arn:aws:s3:::{bucket}"
    applying = [
        s for s in statements if isinstance(s, Mapping) and _applies(s, queue_arn, bucket_arn, account)
    ]
    return any(s.get("Effect") == "Allow" for s in applying) and not any(
        s.get("Effect") == "Deny" for s in applying
    )


def install(_: Any) -> Undo:
    """PutBucketNotificationConfiguration refuses an SQS destination S3 could not send to."""
    from moto.s3.exceptions import S3ClientError
    from moto.s3.models import S3Backend
    from moto.sqs.models import sqs_backends

    put = S3Backend.__dict__["put_bucket_notification_configuration"]

    def checked(self: Any, bucket_name: str, notification_config: dict[str, Any]) -> None:
        for destination in (notification_config or {}).get("QueueConfiguration") or []:
            arn = str(destination.get("Queue", ""))
            parts = arn.split(":")
            queue = None
            if len(parts) == 6 and parts[2] == "sqs":
                queue = sqs_backends[parts[4]][parts[3]].queues.get(parts[5])
            policy = json.loads(queue.policy) if queue is not None and queue.policy else None
            if queue is None or not queue_policy_lets_s3_send(policy, arn, bucket_name, self.account_id):
                raise S3ClientError("InvalidArgument", UNABLE_TO_VALIDATE)
        put(self, bucket_name, notification_config)

    return replace(S3Backend, "put_bucket_notification_configuration", checked)
