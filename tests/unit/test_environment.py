"""The one reader of settings from the environment: the consumer and the self-healing functions name a
bad variable in the same words (pure)."""

from __future__ import annotations

from typing import Any

import pytest
from serverless_retry import environment
from serverless_retry.clock import ScaledClock, SystemClock
from serverless_retry.config import ConsumerSettings
from serverless_retry.errors import ConfigError
from serverless_retry.selfheal.config import EnrichmentSettings, RedriveSettings

URL = "https://sqs.us-east-1.amazonaws.com/123456789012"
ARN = "arn:aws:sqs:us-east-1:123456789012"

CONSUMER = {
    "SERVERLESS_RETRY_PROCESSOR": "json:loads",
    # Delays within SQS's 900 s: no Scheduler settings needed.
    "SERVERLESS_RETRY_POLICY": '{"max_attempts": 3, "backoff": {"max_seconds": 600}}',
    "SERVERLESS_RETRY_QUEUE_URL": f"{URL}/orders",
    "SERVERLESS_RETRY_QUEUE_ARN": f"{ARN}:orders",
    "SERVERLESS_RETRY_EXHAUSTED_QUEUE_URL": f"{URL}/orders-exhausted",
    "SERVERLESS_RETRY_DLQ_ARN": f"{ARN}:orders-dlq",
}
ENRICHMENT = {
    "SERVERLESS_RETRY_EXHAUSTED_QUEUE_URL": f"{URL}/heal-exhausted",
    "SERVERLESS_RETRY_FAILURE_QUEUE_URL": f"{URL}/heal-failures",
}
REDRIVE = {
    "SERVERLESS_RETRY_SOURCES": '{"orders-fn": {"function_arn": '
    '"arn:aws:lambda:us-east-1:123456789012:function:orders-fn"}}',
    "SERVERLESS_RETRY_POLICY": '{"max_attempts": 3}',
    "SERVERLESS_RETRY_EXHAUSTED_QUEUE_URL": f"{URL}/heal-exhausted",
    "SERVERLESS_RETRY_SCHEDULE_GROUP": "heal",
    "SERVERLESS_RETRY_SCHEDULER_ROLE_ARN": "arn:aws:iam::123456789012:role/heal-scheduler",
    "SERVERLESS_RETRY_DLQ_ARN": f"{ARN}:heal-schedule-dlq",
}
READERS: dict[str, tuple[Any, dict[str, str]]] = {
    "consumer": (ConsumerSettings.from_env, CONSUMER),
    "enrichment": (EnrichmentSettings.from_env, ENRICHMENT),
    "redrive": (RedriveSettings.from_env, REDRIVE),
}

ALL, SCHEDULING = ("consumer", "enrichment", "redrive"), ("consumer", "redrive")
# (variable, bad value, the functions that read it, the one message all of them give)
SHARED = [
    ("SERVERLESS_RETRY_CLOCK_SCALE", "100", ALL, "SERVERLESS_RETRY_CLOCK_EPOCH: required when SERVERLESS_RETRY_CLOCK_SCALE is set"),
    ("SERVERLESS_RETRY_CLOCK_EPOCH", "1700000000", ALL, "SERVERLESS_RETRY_CLOCK_SCALE: required when SERVERLESS_RETRY_CLOCK_EPOCH is set"),
    ("SERVERLESS_RETRY_EXHAUSTED_QUEUE_URL", "heal-exhausted", ALL, "SERVERLESS_RETRY_EXHAUSTED_QUEUE_URL: must be an SQS queue URL (https://<host>/<account>/<name>), got 'heal-exhausted'"),
    ("SERVERLESS_RETRY_EXHAUSTED_MAX_MESSAGE_BYTES", "big", ALL, "SERVERLESS_RETRY_EXHAUSTED_MAX_MESSAGE_BYTES: must be an integer, got 'big'"),
    ("SERVERLESS_RETRY_EXHAUSTED_MAX_MESSAGE_BYTES", "512", ALL, "SERVERLESS_RETRY_EXHAUSTED_MAX_MESSAGE_BYTES: must be between 1024 and 1048576, got 512"),
    ("SERVERLESS_RETRY_POLICY", '{"max_attempts": 0}', SCHEDULING, "SERVERLESS_RETRY_POLICY: retry policy field 'max_attempts'"),
    ("SERVERLESS_RETRY_DLQ_ARN", f"{ARN}:dlq.fifo", SCHEDULING, "SERVERLESS_RETRY_DLQ_ARN: must be a standard SQS queue: it is the dead-letter target of retry schedules"),
    ("SERVERLESS_RETRY_DLQ_ARN", "dlq", SCHEDULING, "SERVERLESS_RETRY_DLQ_ARN: must be an SQS queue ARN (arn:aws:sqs:<region>:<account>:<name>), got 'dlq'"),
    ("SERVERLESS_RETRY_SCHEDULE_GROUP", "bad group!", SCHEDULING, "SERVERLESS_RETRY_SCHEDULE_GROUP: must be 1-64 characters of 0-9 A-Z a-z - _ ."),
    ("SERVERLESS_RETRY_SCHEDULER_ROLE_ARN", "heal-role", SCHEDULING, "SERVERLESS_RETRY_SCHEDULER_ROLE_ARN: must be an IAM role ARN (arn:aws:iam::<account>:role/<name>)"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("variable", "value", "readers", "message"), SHARED, ids=[f"{v}={x}" for v, x, _, _ in SHARED]
)
def test_every_function_reading_a_variable_words_its_problem_alike(
    variable: str, value: str, readers: tuple[str, ...], message: str
) -> None:
    for name in readers:
        read, env = READERS[name]
        with pytest.raises(ConfigError) as caught:
            read({**env, variable: value})
        assert str(caught.value).startswith(message), name
        assert caught.value.variable == message.split(":", 1)[0], name


@pytest.mark.parametrize(
    ("name", "ok"),
    [
        ("a" * 80, True),  # a standard queue name may use all 80 characters
        ("a" * 81, False),
        ("a" * 75 + ".fifo", True),  # ".fifo" counts towards the 80
        ("a" * 76 + ".fifo", False),
        ("orders.v2", False),
        ("orders-fifo", True),
    ],
)
def test_queue_names_follow_sqs_rules(name: str, ok: bool) -> None:
    env = {"URL": f"{URL}/{name}", "ARN": f"{ARN}:{name}"}
    for read, variable in ((environment.queue_url, "URL"), (environment.sqs_arn, "ARN")):
        if ok:
            assert read(env, variable) == env[variable]
        else:
            with pytest.raises(ConfigError, match=f"^{variable}: must be an SQS queue"):
                read(env, variable)


def test_a_standard_only_queue_refuses_fifo() -> None:
    env = {"Q": f"{URL}/heal.fifo"}
    assert environment.queue_url(env, "Q") == env["Q"]
    with pytest.raises(ConfigError, match=r"^Q: must be a standard SQS queue, not a FIFO queue"):
        environment.queue_url(env, "Q", fifo=False)
    with pytest.raises(ConfigError, match=r"^SERVERLESS_RETRY_FAILURE_QUEUE_URL: must be a standard"):
        EnrichmentSettings.from_env({**ENRICHMENT, "SERVERLESS_RETRY_FAILURE_QUEUE_URL": env["Q"]})


def test_clock_and_sizes_default_and_scale() -> None:
    assert isinstance(environment.clock({}), SystemClock)
    scaled = environment.clock({environment.ENV_CLOCK_SCALE: "60", environment.ENV_CLOCK_EPOCH: "1700000000"})
    assert scaled == ScaledClock(epoch=1_700_000_000, scale=60)
    for bad, problem in (("0", "must be > 0"), ("inf", "must be a finite number"), ("x", "must be a number")):
        with pytest.raises(ConfigError, match=problem):
            environment.clock({environment.ENV_CLOCK_SCALE: bad, environment.ENV_CLOCK_EPOCH: "1"})
    assert environment.message_bytes({}, "M", 4096) == 4096
    assert environment.message_bytes({"M": " 2048 "}, "M", 4096) == 2048


def test_a_policy_inside_a_larger_variable_says_where() -> None:
    with pytest.raises(ConfigError) as caught:
        environment.policy({"max_attempts": 0}, "SOURCES", "sources['a'].policy: ")
    assert str(caught.value).startswith("SOURCES: sources['a'].policy: retry policy field 'max_attempts'")
    assert environment.policy('{"max_attempts": 2}', "P").max_attempts == 2
