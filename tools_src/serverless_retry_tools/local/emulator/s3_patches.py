"""S3 as the archive needs it on the emulator (issue 31): moto's bucket policies against HTTPS.

A bucket policy of ours denies what does not come over TLS 1.2 or later (modules/archive: a Deny on
``aws:SecureTransport = false`` and on ``s3:TlsVersion < 1.2``). On AWS every call of the archiver,
the consumer and the CLI is HTTPS with TLS 1.2+, so neither statement applies
(https://docs.aws.amazon.com/AmazonS3/latest/userguide/security-best-practices.html). moto 5.2
evaluates a bucket policy without the request's condition keys and takes each such statement as
matching every request: every PutObject and GetObject of the bucket is refused with 403. The
emulator stands in for AWS's HTTPS endpoints (its plain HTTP is the local transport, not the one a
deployment uses), so here a statement conditioned only on the transport is judged as for a request
over TLS 1.3; every other statement goes to moto as before.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from serverless_retry_tools.local.emulator.patch_types import Patch, PatchContext
from serverless_retry_tools.local.emulator.patching import Undo, replace

__all__ = ["HTTPS_REQUEST", "patches", "transport_statement_applies"]

# The transport condition keys of a request to AWS over HTTPS, as the emulator stands for them.
HTTPS_REQUEST = {"aws:SecureTransport": "true", "s3:TlsVersion": "1.3"}


def _holds(operator: str, key: str, expected: Any) -> bool | None:
    """Whether one transport condition holds for HTTPS_REQUEST; None for anything else."""
    values = expected if isinstance(expected, list) else [expected]
    actual = HTTPS_REQUEST.get(key)
    if actual is None:
        return None
    if operator == "Bool":
        return any(str(v).lower() == actual for v in values)
    numeric = {
        "NumericLessThan": lambda a, b: a < b,
        "NumericLessThanEquals": lambda a, b: a <= b,
        "NumericGreaterThan": lambda a, b: a > b,
        "NumericGreaterThanEquals": lambda a, b: a >= b,
        "NumericEquals": lambda a, b: a == b,
    }.get(operator)
    if numeric is None:
        return None
    try:
        return any(numeric(float(actual), float(v)) for v in values)
    except (TypeError, ValueError):
        return None


def transport_statement_applies(statement: Mapping[str, Any]) -> bool | None:
    """For a statement conditioned only on the transport: whether its conditions hold for an HTTPS
    request (all of them must). None when it has other conditions, or none: moto judges it."""
    conditions = statement.get("Condition")
    if not isinstance(conditions, Mapping) or not conditions:
        return None
    results: list[bool] = []
    for operator, keys in conditions.items():
        if not isinstance(keys, Mapping):
            return None
        for key, expected in keys.items():
            holds = _holds(str(operator), str(key), expected)
            if holds is None:
                return None
            results.append(holds)
    return all(results)


def _s3_bucket_policy_ignores_transport(_: PatchContext) -> Undo:
    from moto.iam.access_control import IAMPolicy, PermissionResult
    from moto.s3.models import FakeBucket

    original = FakeBucket.get_permission

    def get_permission(self: Any, action: str, resource: str) -> Any:
        if self.policy is None:
            return original(self, action, resource)
        document = json.loads(self.policy.decode() if isinstance(self.policy, bytes) else self.policy)
        statements = document.get("Statement")
        statements = statements if isinstance(statements, list) else [statements]
        # A transport statement that does not apply to HTTPS is left out; one that does is kept
        # without its condition, which moto would misjudge.
        kept = []
        for statement in statements:
            applies = transport_statement_applies(statement)
            if applies is None:
                kept.append(statement)
            elif applies:
                kept.append({k: v for k, v in statement.items() if k != "Condition"})
        if not kept:
            return PermissionResult.NEUTRAL
        return IAMPolicy(json.dumps({**document, "Statement": kept})).is_action_permitted(action, resource)

    return replace(FakeBucket, "get_permission", get_permission)


def patches() -> list[Patch]:
    return [
        Patch(
            "s3_bucket_policy_ignores_transport",
            "a bucket policy that denies plain HTTP or TLS < 1.2 refuses every request (moto evaluates it "
            "without the request's aws:SecureTransport and s3:TlsVersion)",
            _s3_bucket_policy_ignores_transport,
        )
    ]
