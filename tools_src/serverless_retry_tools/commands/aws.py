"""boto3 clients for the commands that talk to AWS (simulate needs none)."""

from __future__ import annotations

from typing import Any


def sqs_client() -> Any:
    import boto3  # the CLI's AWS commands only; simulate needs no AWS

    return boto3.client("sqs")
