"""Which services an applied example called, and whether its README's way to reach an emulator covers them.

The stacks' Terraform runs with AWS_ENDPOINT_URL set to their emulator, as `serverless-retry local apply`
and the demo run it, and that serves any service the examples' endpoints block leaves out: an apply
cannot show a gap. A user who follows an example's README (`-var aws_endpoint_url=...` alone) has only
the block, and a service missing from it sends their calls to real AWS (DynamoDB did, for the
scheduled-retry example's claims table). Each resource and data source in a stack's state was made or
read through one service, and that service must be in the block.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from tests.terraform.stack import Applied

# Resource and data source types by prefix, longest first, to the endpoints block's key for them.
SERVICE_BY_PREFIX = (
    ("aws_cloudwatch_event_", "eventbridge"),
    ("aws_cloudwatch_log_", "cloudwatchlogs"),
    ("aws_cloudwatch_", "cloudwatch"),
    ("aws_caller_identity", "sts"),
    ("aws_dynamodb_", "dynamodb"),
    ("aws_iam_", "iam"),
    ("aws_kinesis_", "kinesis"),
    ("aws_kms_", "kms"),
    ("aws_lambda_", "lambda"),
    ("aws_pipes_", "pipes"),
    ("aws_s3_", "s3"),
    ("aws_scheduler_", "scheduler"),
    ("aws_sns_", "sns"),
    ("aws_sqs_", "sqs"),
)
# Data sources the provider answers itself, calling nothing.
LOCAL = {"aws_iam_policy_document", "aws_partition", "aws_region"}
_BLOCK = re.compile(r'dynamic\s+"endpoints"\s*\{.*?content\s*\{(?P<body>[^}]*)\}', re.DOTALL)
_KEY = re.compile(r"^\s*(\w+)\s*=\s*endpoints\.value\s*$", re.MULTILINE)


def block_services(root: Path) -> set[str]:
    """The services the endpoints block of ``root``'s providers.tf points at the emulator."""
    found = _BLOCK.search((root / "providers.tf").read_text(encoding="utf-8"))
    assert found, f"{root}/providers.tf has no dynamic endpoints block"
    return set(_KEY.findall(found.group("body")))


def used_services(applied: Applied) -> dict[str, set[str]]:
    """Service -> the types in ``applied``'s state served by it (local data sources left out)."""
    state = json.loads((applied.directory / "terraform.tfstate").read_text(encoding="utf-8"))
    types = {r["type"] for r in state["resources"]} - LOCAL
    assert types, f"{applied.directory}: the state holds nothing"
    used: dict[str, set[str]] = {}
    for rtype in sorted(types):
        service = next((s for prefix, s in SERVICE_BY_PREFIX if rtype.startswith(prefix)), None)
        assert service is not None, f"{rtype}: which service serves it? (add it to SERVICE_BY_PREFIX)"
        used.setdefault(service, set()).add(rtype)
    return used


def missing_from_block(applied: Applied) -> dict[str, set[str]]:
    """The services ``applied``'s example calls that its endpoints block leaves to real AWS."""
    named = block_services(applied.directory)
    return {service: types for service, types in used_services(applied).items() if service not in named}
