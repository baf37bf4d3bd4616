"""SERVERLESS_RETRY_STREAM_ORDERING and the retry queue the stream consumer accepts."""

from __future__ import annotations

import json

import pytest
from serverless_retry.errors import ConfigError
from serverless_retry.streams.settings import ENV_STREAM_ORDERING, stream_ordering, stream_settings

ACCOUNT_QUEUE = "https://sqs.us-east-1.amazonaws.com/123456789012/orders-stream-retries"


def environment(**overrides: str) -> dict[str, str]:
    env = {
        "SERVERLESS_RETRY_PROCESSOR": "json:loads",
        "SERVERLESS_RETRY_POLICY": json.dumps({"max_attempts": 3, "backoff": {"max_seconds": 600}}),
        "SERVERLESS_RETRY_QUEUE_URL": ACCOUNT_QUEUE,
        "SERVERLESS_RETRY_QUEUE_ARN": "arn:aws:sqs:us-east-1:123456789012:orders-stream-retries",
        "SERVERLESS_RETRY_EXHAUSTED_QUEUE_URL": f"{ACCOUNT_QUEUE}-exhausted",
        "SERVERLESS_RETRY_DLQ_ARN": "arn:aws:sqs:us-east-1:123456789012:orders-stream-retries-dlq",
    }
    env.update(overrides)
    return env


def test_unordered_is_the_default_and_blocking_is_accepted() -> None:
    assert stream_ordering({}) == "unordered"
    assert stream_ordering({ENV_STREAM_ORDERING: "blocking"}) == "blocking"
    settings, ordering = stream_settings(environment(SERVERLESS_RETRY_STREAM_ORDERING="blocking"))
    assert ordering == "blocking"
    assert settings.targets.queue_url == ACCOUNT_QUEUE


@pytest.mark.parametrize("value", ["ordered", "BLOCKING", "park"])
def test_a_bad_ordering_names_the_variable(value: str) -> None:
    with pytest.raises(ConfigError) as raised:
        stream_settings(environment(SERVERLESS_RETRY_STREAM_ORDERING=value))
    assert raised.value.variable == ENV_STREAM_ORDERING
    assert "unordered, blocking" in str(raised.value)


def test_a_fifo_retry_queue_is_refused_naming_the_queue_url() -> None:
    env = environment(
        SERVERLESS_RETRY_QUEUE_URL=f"{ACCOUNT_QUEUE}.fifo",
        SERVERLESS_RETRY_QUEUE_ARN="arn:aws:sqs:us-east-1:123456789012:orders-stream-retries.fifo",
        SERVERLESS_RETRY_EXHAUSTED_QUEUE_URL=f"{ACCOUNT_QUEUE}-exhausted.fifo",
        SERVERLESS_RETRY_SCHEDULE_GROUP="g",
        SERVERLESS_RETRY_SCHEDULER_ROLE_ARN="arn:aws:iam::123456789012:role/r",
        SERVERLESS_RETRY_FIFO_ORDER="unordered",
    )
    with pytest.raises(ConfigError) as raised:
        stream_settings(env)
    assert raised.value.variable == "SERVERLESS_RETRY_QUEUE_URL"
