"""The environment a local function runs with: its own variables, Lambda's reserved ones, the
emulator's credentials, and nothing from the calling process (pure)."""

from __future__ import annotations

import pytest
from serverless_retry_tools.local.runtime.functions import FunctionConfig, lambda_environment

GET_FUNCTION = {
    "Configuration": {
        "FunctionName": "orders",
        "FunctionArn": "arn:aws:lambda:us-east-1:123456789012:function:orders",
        "Handler": "serverless_retry.handlers.consumer.handler",
        "Runtime": "python3.12",
        "Timeout": 3,
        "MemorySize": 256,
        "Version": "$LATEST",
        "CodeSha256": "abc=",
        "Environment": {"Variables": {"SERVERLESS_RETRY_PROCESSOR": "m:f", "AWS_REGION": "xx-fake-1"}},
        "LoggingConfig": {"LogFormat": "JSON", "ApplicationLogLevel": "DEBUG", "LogGroup": "/custom/orders"},
    },
    "Code": {"Location": "http://127.0.0.1:1/code"},
}


def test_config_reads_get_function() -> None:
    config = FunctionConfig.from_get_function(GET_FUNCTION)
    assert (config.name, config.timeout, config.memory, config.log_group, config.log_format) == (
        "orders",
        3,
        256,
        "/custom/orders",
        "JSON",
    )
    assert config.code_location == "http://127.0.0.1:1/code"


def test_defaults_when_optional_fields_are_missing() -> None:
    config = FunctionConfig.from_get_function(
        {"Configuration": {"FunctionName": "f", "FunctionArn": "arn:f", "Handler": "a.b"}}
    )
    assert (config.timeout, config.memory, config.log_group, config.log_format, config.environment) == (
        3,
        128,
        "/aws/lambda/f",
        "Text",
        (),
    )


def test_environment_is_built_from_scratch(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_PROFILE", "production")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "real-secret")
    config = FunctionConfig.from_get_function(GET_FUNCTION)
    env = lambda_environment(
        config,
        task_root="/tmp/task",
        log_stream="2026/11/30/[$LATEST]x",
        region="us-east-1",
        extra={"AWS_ENDPOINT_URL": "http://127.0.0.1:5000", "AWS_SECRET_ACCESS_KEY": "testing"},
    )
    assert "AWS_PROFILE" not in env
    assert env["AWS_SECRET_ACCESS_KEY"] == "testing"
    assert env["SERVERLESS_RETRY_PROCESSOR"] == "m:f"
    # Reserved variables win over the function's own, as on Lambda.
    assert env["AWS_REGION"] == "us-east-1"
    assert env["_HANDLER"] == "serverless_retry.handlers.consumer.handler"
    assert env["LAMBDA_TASK_ROOT"] == "/tmp/task"
    assert env["AWS_LAMBDA_FUNCTION_MEMORY_SIZE"] == "256"
    assert env["AWS_LAMBDA_LOG_GROUP_NAME"] == "/custom/orders"
    assert (env["AWS_LAMBDA_LOG_FORMAT"], env["AWS_LAMBDA_LOG_LEVEL"]) == ("JSON", "DEBUG")
    assert env["AWS_ENDPOINT_URL"] == "http://127.0.0.1:5000"


def test_text_logging_sets_no_level() -> None:
    plain = {**GET_FUNCTION, "Configuration": {**GET_FUNCTION["Configuration"], "LoggingConfig": {}}}
    env = lambda_environment(
        FunctionConfig.from_get_function(plain), task_root="/t", log_stream="s", region="us-east-1", extra={}
    )
    assert "AWS_LAMBDA_LOG_FORMAT" not in env
    assert "AWS_LAMBDA_LOG_LEVEL" not in env
