"""The emulator's S3 patch (serverless_retry_tools.local.emulator.s3_patches): raw moto refuses every write to a
bucket whose policy denies plain HTTP and TLS < 1.2 (modules/archive's), the patched emulator judges
those statements as AWS does for an HTTPS request, and still applies the rest of the policy."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError
from serverless_retry_tools.local.emulator.emulator import Emulator
from serverless_retry_tools.local.emulator.s3_patches import transport_statement_applies


def _tls_only(bucket: str, *, deny_key: str | None = None) -> str:
    """modules/archive's bucket policy (both transport denials), plus a plain Deny of one key."""
    resources = [f"arn:aws:s3:::{bucket}", f"arn:aws:s3:::{bucket}/*"]
    statements: list[dict[str, Any]] = [
        {
            "Sid": "DenyInsecureTransport",
            "Effect": "Deny",
            "Principal": "*",
            "Action": "s3:*",
            "Resource": resources,
            "Condition": {"Bool": {"aws:SecureTransport": "false"}},
        },
        {
            "Sid": "DenyTlsOlderThan12",
            "Effect": "Deny",
            "Principal": "*",
            "Action": "s3:*",
            "Resource": resources,
            "Condition": {"NumericLessThan": {"s3:TlsVersion": "1.2"}},
        },
    ]
    if deny_key:
        statements.append(
            {
                "Sid": "DenyOne",
                "Effect": "Deny",
                "Principal": "*",
                "Action": "s3:PutObject",
                "Resource": f"arn:aws:s3:::{bucket}/{deny_key}",
            }
        )
    return json.dumps({"Version": "2012-10-17", "Statement": statements})


def _bucket(emulator: Emulator, name: str) -> Any:
    s3 = boto3.client("s3", **emulator.client_kwargs())
    s3.create_bucket(Bucket=name)
    s3.put_bucket_policy(Bucket=name, Policy=_tls_only(name, deny_key="denied.json"))
    return s3


@pytest.fixture(scope="module")
def raw() -> Iterator[Emulator]:
    with Emulator(patches=()) as emulator:
        yield emulator


@pytest.fixture(scope="module")
def patched() -> Iterator[Emulator]:
    with Emulator() as emulator:
        assert "s3_bucket_policy_ignores_transport" in emulator.applied_patches
        yield emulator


def test_raw_moto_tls_only_bucket_policy_refuses_every_write(raw: Emulator) -> None:
    s3 = _bucket(raw, "raw-archive")
    with pytest.raises(ClientError) as refused:
        s3.put_object(Bucket="raw-archive", Key="dead/a.json", Body=b"{}")
    assert refused.value.response["ResponseMetadata"]["HTTPStatusCode"] == 403


def test_patched_tls_only_bucket_policy_lets_https_requests_through(patched: Emulator) -> None:
    s3 = _bucket(patched, "patched-archive")
    s3.put_object(Bucket="patched-archive", Key="dead/a.json", Body=b"{}", IfNoneMatch="*")
    assert s3.get_object(Bucket="patched-archive", Key="dead/a.json")["Body"].read() == b"{}"
    # The rest of the policy still holds.
    with pytest.raises(ClientError) as refused:
        s3.put_object(Bucket="patched-archive", Key="denied.json", Body=b"{}")
    assert refused.value.response["ResponseMetadata"]["HTTPStatusCode"] == 403


@pytest.mark.parametrize(
    ("condition", "applies"),
    [
        ({"Bool": {"aws:SecureTransport": "false"}}, False),
        ({"Bool": {"aws:SecureTransport": "true"}}, True),
        ({"NumericLessThan": {"s3:TlsVersion": "1.2"}}, False),
        ({"NumericLessThan": {"s3:TlsVersion": ["1.4"]}}, True),
        ({"StringEquals": {"aws:SourceVpce": "vpce-1"}}, None),  # not the transport: moto judges it
        ({"Bool": {"aws:SecureTransport": "false"}, "StringLike": {"aws:userid": "x"}}, None),
    ],
)
def test_transport_statements_are_judged_as_for_https(
    condition: dict[str, Any], applies: bool | None
) -> None:
    assert transport_statement_applies({"Effect": "Deny", "Condition": condition}) is applies
