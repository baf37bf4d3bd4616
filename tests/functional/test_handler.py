"""The Lambda entry point: built once at cold start from the environment; a bad configuration fails
the init with a message that names the variable to fix."""

from __future__ import annotations

import importlib
import json
import sys
from collections.abc import Iterator
from types import ModuleType

import pytest
from serverless_retry.clock import ScaledClock, SystemClock
from serverless_retry.config import ConsumerSettings
from serverless_retry.consumer import consumer_from_env
from serverless_retry.errors import ConfigError
from serverless_retry.testing import lambda_context, sqs_event

from . import processors
from .conftest import ROLE_ARN, Stack

HANDLER = "serverless_retry.handlers.consumer"
URL = "https://sqs.us-east-1.amazonaws.com/123456789012"
ARN = "arn:aws:sqs:us-east-1:123456789012"
POLICY = {"max_attempts": 3, "backoff": {"strategy": "fixed", "base_seconds": 30, "max_seconds": 7200}}
BASE_ENV = {
    "SERVERLESS_RETRY_PROCESSOR": "tests.functional.processors:record",
    "SERVERLESS_RETRY_POLICY": json.dumps(POLICY),
    "SERVERLESS_RETRY_QUEUE_URL": f"{URL}/orders",
    "SERVERLESS_RETRY_QUEUE_ARN": f"{ARN}:orders",
    "SERVERLESS_RETRY_EXHAUSTED_QUEUE_URL": f"{URL}/orders-exhausted",
    "SERVERLESS_RETRY_DLQ_ARN": f"{ARN}:orders-dlq",
    "SERVERLESS_RETRY_SCHEDULE_GROUP": "orders-retries",
    "SERVERLESS_RETRY_SCHEDULER_ROLE_ARN": ROLE_ARN,
}


def with_env(**changes: str | None) -> dict[str, str]:
    env = dict(BASE_ENV)
    for name, value in changes.items():
        key = f"SERVERLESS_RETRY_{name}"
        if value is None:
            env.pop(key, None)
        else:
            env[key] = value
    return env


BAD = [
    ("PROCESSOR", None, "required but not set"),
    ("PROCESSOR", "orders.process", "must be 'module:function'"),
    ("PROCESSOR", "tests.functional.no_such_module:handle", "cannot import module"),
    ("PROCESSOR", "tests.functional.processors:missing", "no attribute 'missing'"),
    ("PROCESSOR", "tests.functional.processors:NOT_CALLABLE", "is not callable"),
    ("POLICY", None, "required but not set"),
    ("POLICY", "{not json", "not valid JSON"),
    ("POLICY", '{"max_attempts": 0}', "max_attempts"),
    ("POLICY", '{"backoff": {"jitter": "lots"}}', "backoff.jitter"),
    ("POLICY", '{"max_atempts": 3}', "max_atempts"),
    ("QUEUE_URL", None, "required but not set"),
    ("QUEUE_URL", "orders", "must be an SQS queue URL"),
    ("QUEUE_URL", f"{URL}/payments", "names queue 'payments'"),
    ("QUEUE_ARN", "arn:aws:sns:us-east-1:123456789012:orders", "must be an SQS queue ARN"),
    ("EXHAUSTED_QUEUE_URL", None, "required but not set"),
    ("EXHAUSTED_QUEUE_URL", "ftp://example.com/1/x", "must be an SQS queue URL"),
    ("DLQ_ARN", None, "required but not set"),
    ("DLQ_ARN", "orders-dlq", "must be an SQS queue ARN"),
    ("SCHEDULE_GROUP", None, "required: the retry policy can delay longer than SQS's 900 s"),
    ("SCHEDULE_GROUP", "bad group!", "must be 1-64 characters"),
    ("SCHEDULER_ROLE_ARN", None, "required"),
    ("SCHEDULER_ROLE_ARN", "arn:aws:iam::123456789012:user/bob", "must be an IAM role ARN"),
    ("MAX_MESSAGE_BYTES", "lots", "must be an integer"),
    ("MAX_MESSAGE_BYTES", "100", "must be between 1024 and 1048576"),
    ("CLOCK_SCALE", "60", "SERVERLESS_RETRY_CLOCK_EPOCH: required when SERVERLESS_RETRY_CLOCK_SCALE is set"),
    ("CLOCK_EPOCH", "1700000000", "SERVERLESS_RETRY_CLOCK_SCALE: required when"),
    ("IDEMPOTENCY_TABLE", "x", "not a DynamoDB table name"),
    ("DLQ_ARN", f"{ARN}:orders-dlq.fifo", "must be a standard SQS queue"),
    ("FIFO_ORDER", "sorted", "must be one of ordered, unordered"),
    ("QUEUE_RETENTION_SECONDS", "four days", "must be an integer"),
    ("QUEUE_RETENTION_SECONDS", "30", "MessageRetentionPeriod, 60-1209600 seconds"),
]


@pytest.mark.parametrize(("name", "value", "expected"), BAD, ids=[f"{n}={v}" for n, v, _ in BAD])
def test_bad_configuration_names_the_variable(name: str, value: str | None, expected: str) -> None:
    with pytest.raises(ConfigError) as caught:
        consumer_from_env(with_env(**{name: value}))
    message = str(caught.value)
    assert expected in message
    variable = (
        expected.split(":", maxsplit=1)[0]
        if expected.startswith("SERVERLESS_RETRY_")
        else f"SERVERLESS_RETRY_{name}"
    )
    assert caught.value.variable == variable
    assert message.startswith(f"{variable}: ")


def test_scaled_clock_needs_a_positive_scale() -> None:
    with pytest.raises(ConfigError, match="SERVERLESS_RETRY_CLOCK_SCALE: must be > 0"):
        ConsumerSettings.from_env(with_env(CLOCK_SCALE="0", CLOCK_EPOCH="1700000000"))
    settings = ConsumerSettings.from_env(with_env(CLOCK_SCALE="60", CLOCK_EPOCH="1700000000"))
    assert settings.clock == ScaledClock(epoch=1_700_000_000, scale=60)
    assert isinstance(ConsumerSettings.from_env(BASE_ENV).clock, SystemClock)


def test_scheduler_is_optional_when_no_delay_can_exceed_sqs_limit() -> None:
    short = json.dumps({"backoff": {"base_seconds": 10, "max_seconds": 900}})
    settings = ConsumerSettings.from_env(with_env(POLICY=short, SCHEDULE_GROUP=None, SCHEDULER_ROLE_ARN=None))
    assert settings.targets.schedule_group is None
    forced = json.dumps({"transport": "sqs-delay", "backoff": {"max_seconds": 86400}})
    ConsumerSettings.from_env(with_env(POLICY=forced, SCHEDULE_GROUP=None, SCHEDULER_ROLE_ARN=None))
    visibility = json.dumps({"transport": "visibility", "backoff": {"max_seconds": 40000}})
    ConsumerSettings.from_env(with_env(POLICY=visibility, SCHEDULE_GROUP=None, SCHEDULER_ROLE_ARN=None))


def test_a_rule_with_a_long_backoff_needs_the_scheduler() -> None:
    policy = json.dumps(
        {"backoff": {"max_seconds": 600}, "rules": [{"errors": ["Slow"], "backoff": {"max_seconds": 3600}}]}
    )
    with pytest.raises(ConfigError, match="SERVERLESS_RETRY_SCHEDULE_GROUP: required"):
        ConsumerSettings.from_env(with_env(POLICY=policy, SCHEDULE_GROUP=None))


def test_an_unordered_fifo_queue_needs_the_scheduler() -> None:
    short = json.dumps({"backoff": {"max_seconds": 60}})
    env = with_env(
        POLICY=short,
        QUEUE_URL=f"{URL}/orders.fifo",
        QUEUE_ARN=f"{ARN}:orders.fifo",
        SCHEDULE_GROUP=None,
        FIFO_ORDER="unordered",
    )
    with pytest.raises(ConfigError, match="SERVERLESS_RETRY_SCHEDULE_GROUP: required: the queue is FIFO"):
        ConsumerSettings.from_env(env)


def test_an_ordered_fifo_queue_retries_in_place_without_the_scheduler() -> None:
    short = json.dumps({"backoff": {"max_seconds": 60}})
    fifo = {"QUEUE_URL": f"{URL}/orders.fifo", "QUEUE_ARN": f"{ARN}:orders.fifo"}
    settings = ConsumerSettings.from_env(
        with_env(POLICY=short, SCHEDULE_GROUP=None, SCHEDULER_ROLE_ARN=None, **fifo)
    )
    assert settings.targets.fifo_order == "ordered"  # the default
    assert settings.targets.in_place
    # A transport that takes the retry out of its group contradicts "ordered": refused, with the fix.
    for transport in ("scheduler", "sqs-delay", "sqs-hops"):
        policy = json.dumps({"transport": transport})
        with pytest.raises(
            ConfigError, match=r"^SERVERLESS_RETRY_POLICY: transport .* fifo_order to 'unordered'"
        ):
            ConsumerSettings.from_env(with_env(POLICY=policy, **fifo))
        ConsumerSettings.from_env(with_env(POLICY=policy, FIFO_ORDER="unordered", **fifo))


def test_sqs_hops_needs_no_scheduler_and_retention_is_read() -> None:
    hops = json.dumps({"transport": "sqs-hops", "backoff": {"max_seconds": 86400}})
    settings = ConsumerSettings.from_env(
        with_env(POLICY=hops, SCHEDULE_GROUP=None, SCHEDULER_ROLE_ARN=None, QUEUE_RETENTION_SECONDS="1209600")
    )
    assert settings.targets.retention_seconds == 1_209_600
    assert ConsumerSettings.from_env(BASE_ENV).targets.retention_seconds == 345_600  # SQS's default


def test_processor_may_be_a_dotted_attribute() -> None:
    settings = ConsumerSettings.from_env(with_env(PROCESSOR="tests.functional.processors:Handlers.record"))
    assert settings.load_processor() is processors.Handlers.record


@pytest.fixture
def fresh_handler(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.delitem(sys.modules, HANDLER, raising=False)
    yield
    sys.modules.pop(HANDLER, None)


def import_handler() -> ModuleType:
    return importlib.import_module(HANDLER)


def test_cold_start_fails_on_bad_configuration(monkeypatch: pytest.MonkeyPatch, fresh_handler: None) -> None:
    for name, value in with_env(POLICY='{"max_attempts": "five"}').items():
        monkeypatch.setenv(name, value)
    with pytest.raises(ConfigError, match=r"^SERVERLESS_RETRY_POLICY: .*max_attempts"):
        import_handler()
    assert HANDLER not in sys.modules


def test_handler_processes_an_event(
    stack: Stack, monkeypatch: pytest.MonkeyPatch, fresh_handler: None, capsys: pytest.CaptureFixture[str]
) -> None:
    env = with_env(
        QUEUE_URL=stack.queue_url,
        QUEUE_ARN=stack.queue_arn,
        EXHAUSTED_QUEUE_URL=stack.exhausted_url,
        DLQ_ARN=stack.dlq_arn,
        SCHEDULE_GROUP=stack.group,
    )
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    processors.SEEN.clear()
    module = import_handler()

    response = module.handler(sqs_event(['{"order": 1}'], queue_arn=stack.queue_arn), lambda_context())

    assert response == {"batchItemFailures": []}
    assert [m.json() for m in processors.SEEN] == [{"order": 1}]
    assert module.consumer.targets.queue_url == stack.queue_url
    out = capsys.readouterr().out
    assert '"Processed":[1.0]' in out


def test_clients_follow_aws_endpoint_url(monkeypatch: pytest.MonkeyPatch) -> None:
    from serverless_retry.aws import BOTO_CONFIG, AwsClients

    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:5999")
    clients = AwsClients()
    assert clients.sqs.meta.endpoint_url == "http://127.0.0.1:5999"
    assert clients.scheduler.meta.endpoint_url == "http://127.0.0.1:5999"
    assert clients.sqs is clients.sqs  # created once
    assert clients.sqs.meta.config.retries == BOTO_CONFIG.retries
