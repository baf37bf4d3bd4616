"""The archiver's environment: good values read, every bad one a ConfigError naming its variable."""

from __future__ import annotations

import json
from typing import Any

import pytest
from serverless_retry.archive.record import ArchiveSource
from serverless_retry.archive.settings import (
    DEFAULT_PREFIX,
    ENV_BUCKET,
    ENV_PREFIX,
    ENV_SOURCES,
    ArchiverSettings,
)
from serverless_retry.errors import ConfigError

EXHAUSTED = "arn:aws:sqs:us-east-1:123456789012:orders-exhausted"
DLQ = "arn:aws:sqs:us-east-1:123456789012:orders-dlq.fifo"
ORDERS = "arn:aws:sqs:us-east-1:123456789012:orders"
SOURCES = {
    EXHAUSTED: {"place": "exhausted", "source_queue_arn": ORDERS, "deployment": "orders"},
    DLQ: {"place": "dlq", "source_queue_arn": None, "deployment": "orders"},
}


def env(**changes: Any) -> dict[str, str]:
    base = {ENV_BUCKET: "orders-archive", ENV_SOURCES: json.dumps(SOURCES)}
    for name, value in changes.items():
        if value is None:
            base.pop(name, None)
        else:
            base[name] = value if isinstance(value, str) else json.dumps(value)
    return base


def test_reads_every_setting() -> None:
    settings = ArchiverSettings.from_env(env(SERVERLESS_RETRY_ARCHIVE_PREFIX="team/a/"))
    assert settings.bucket == "orders-archive"
    assert settings.prefix == "team/a/"
    assert dict(settings.sources) == {
        EXHAUSTED: ArchiveSource(place="exhausted", source_queue_arn=ORDERS, deployment="orders"),
        DLQ: ArchiveSource(place="dlq", source_queue_arn=None, deployment="orders"),
    }
    with pytest.raises(TypeError):
        settings.sources[ORDERS] = settings.sources[EXHAUSTED]  # type: ignore[index]


def test_prefix_default_and_empty() -> None:
    assert ArchiverSettings.from_env(env()).prefix == DEFAULT_PREFIX == "serverless-retry/"
    assert ArchiverSettings.from_env(env(SERVERLESS_RETRY_ARCHIVE_PREFIX="")).prefix == ""


@pytest.mark.parametrize(
    ("changes", "variable", "says"),
    [
        ({ENV_BUCKET: None}, ENV_BUCKET, "required"),
        ({ENV_BUCKET: "Orders_Archive"}, ENV_BUCKET, "S3 bucket name"),
        ({ENV_BUCKET: "a..b"}, ENV_BUCKET, "S3 bucket name"),
        ({ENV_PREFIX: "/abs/"}, ENV_PREFIX, "leading '/'"),
        ({ENV_PREFIX: "no-slash"}, ENV_PREFIX, "end in '/'"),
        ({ENV_PREFIX: "a//b/"}, ENV_PREFIX, "empty segment"),
        ({ENV_PREFIX: "p" * 200 + "/"}, ENV_PREFIX, "at most 200 bytes"),
        ({ENV_PREFIX: "é" * 100 + "/"}, ENV_PREFIX, "at most 200 bytes"),
        ({ENV_SOURCES: None}, ENV_SOURCES, "required"),
        ({ENV_SOURCES: "{"}, ENV_SOURCES, "must be JSON"),
        ({ENV_SOURCES: {}}, ENV_SOURCES, "non-empty JSON object"),
        ({ENV_SOURCES: ["x"]}, ENV_SOURCES, "non-empty JSON object"),
        ({ENV_SOURCES: {"orders-dlq": SOURCES[DLQ]}}, ENV_SOURCES, "must be an SQS queue ARN"),
        ({ENV_SOURCES: {DLQ: "dlq"}}, ENV_SOURCES, "expected an object"),
        ({ENV_SOURCES: {DLQ: {**SOURCES[DLQ], "place": "attic"}}}, ENV_SOURCES, "place must be one of"),
        (
            {ENV_SOURCES: {DLQ: {**SOURCES[DLQ], "source_queue_arn": "orders"}}},
            ENV_SOURCES,
            "source_queue_arn",
        ),
        ({ENV_SOURCES: {DLQ: {**SOURCES[DLQ], "deployment": ""}}}, ENV_SOURCES, "deployment"),
        ({ENV_SOURCES: {DLQ: {**SOURCES[DLQ], "deploy": "x"}}}, ENV_SOURCES, "unknown field(s) deploy"),
    ],
)
def test_bad_values_name_the_variable(changes: dict[str, Any], variable: str, says: str) -> None:
    with pytest.raises(ConfigError) as raised:
        ArchiverSettings.from_env(env(**changes))
    assert raised.value.variable == variable
    assert says in raised.value.problem
