"""boto3 clients for the commands that talk to AWS (simulate needs none). The standard variables
choose the account, region and endpoint (``AWS_PROFILE``, ``AWS_REGION``, ``AWS_ENDPOINT_URL`` for the
local emulator); ``--region`` overrides the region."""

from __future__ import annotations

import argparse
import os
from typing import Any

__all__ = [
    "add_aws_arguments",
    "cloudwatch_client",
    "lambda_client",
    "scheduler_client",
    "sqs_client",
]


def add_aws_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--region", help="AWS region (default: AWS_REGION, AWS_DEFAULT_REGION or your profile's)"
    )


def _client(service: str, args: argparse.Namespace | None) -> Any:
    import boto3  # the CLI's AWS commands only; simulate needs no AWS
    from serverless_retry.aws import BOTO_CONFIG

    # botocore reads AWS_DEFAULT_REGION (and the profile); AWS_REGION is what most SDKs and Lambda use.
    region = (getattr(args, "region", None) if args is not None else None) or os.environ.get("AWS_REGION")
    return boto3.client(service, region_name=region, config=BOTO_CONFIG)  # type: ignore[call-overload]


def sqs_client(args: argparse.Namespace | None = None) -> Any:
    return _client("sqs", args)


def lambda_client(args: argparse.Namespace | None = None) -> Any:
    """For ``redrive --to-function``: asynchronous invokes of the functions that failed."""
    return _client("lambda", args)


def cloudwatch_client(args: argparse.Namespace | None = None) -> Any:
    """For ``inspect``: a queue's oldest message age (ApproximateAgeOfOldestMessage) without receiving."""
    return _client("cloudwatch", args)


def scheduler_client(args: argparse.Namespace | None = None) -> Any:
    """For ``retries``: the retries waiting in a schedule group."""
    return _client("scheduler", args)
