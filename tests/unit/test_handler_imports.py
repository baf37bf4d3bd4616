"""Each Lambda handler imports only what it runs: the package's modules a fresh interpreter has loaded
after importing the handler (as the Lambda runtime does at cold start), and no boto3 (its clients
are made on first use). benchmarks/handler_imports.py measures what these imports cost."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ACCOUNT = "123456789012"
QUEUES = f"https://sqs.us-east-1.amazonaws.com/{ACCOUNT}"
EXHAUSTED = f"{QUEUES}/orders-exhausted"
POLICY = json.dumps({"max_attempts": 4, "backoff": {"strategy": "exponential", "base_seconds": 10}})
SCHEDULER = {
    "SERVERLESS_RETRY_SCHEDULE_GROUP": "orders-retries",
    "SERVERLESS_RETRY_SCHEDULER_ROLE_ARN": f"arn:aws:iam::{ACCOUNT}:role/orders-scheduler",
    "SERVERLESS_RETRY_DLQ_ARN": f"arn:aws:sqs:us-east-1:{ACCOUNT}:orders-schedule-dlq",
}
EXHAUSTED_ARN = f"arn:aws:sqs:us-east-1:{ACCOUNT}:orders-exhausted"
# Every handler: the core every one of them runs (settings, envelope, errors, the clock).
COMMON = {
    "serverless_retry",
    "serverless_retry.aws",
    "serverless_retry.backoff",
    "serverless_retry.clock",
    "serverless_retry.envelope",
    "serverless_retry.environment",
    "serverless_retry.errors",
    "serverless_retry.handlers",
    "serverless_retry.regex",  # LazyPattern: the envelope's own patterns, compiled on first use
}
# The handlers that decide retries: the policy (RE2 for its message_regex rules comes with regex).
POLICY_MODULES = {"serverless_retry.policy"}
SELF_HEALING = {
    "serverless_retry.observability",  # the namespace and service defaults of the metrics
    "serverless_retry.selfheal",
    "serverless_retry.selfheal.config",
    "serverless_retry.selfheal.function",
    "serverless_retry.selfheal.metrics",
    "serverless_retry.selfheal.state",
    "serverless_retry.selfheal.types",
}
CASES = {
    "consumer": (
        {
            "SERVERLESS_RETRY_PROCESSOR": "orders_processor:process",
            "SERVERLESS_RETRY_POLICY": POLICY,
            "SERVERLESS_RETRY_QUEUE_URL": f"{QUEUES}/orders",
            "SERVERLESS_RETRY_QUEUE_ARN": f"arn:aws:sqs:us-east-1:{ACCOUNT}:orders",
            "SERVERLESS_RETRY_EXHAUSTED_QUEUE_URL": EXHAUSTED,
            **SCHEDULER,
        },
        COMMON
        | POLICY_MODULES
        | {
            "serverless_retry.async_processor",  # wraps the processor (asyncio is imported only for an async one)
            "serverless_retry.config",
            "serverless_retry.consumer",  # the package of the consumer's modules (its __init__ imports none)
            "serverless_retry.consumer.batch_response",
            "serverless_retry.consumer.batch_state",
            "serverless_retry.consumer.retrying_consumer",
            "serverless_retry.consumer.final_copies",
            "serverless_retry.consumer.delivery",
            "serverless_retry.consumer.idempotency",
            "serverless_retry.handlers.consumer",
            "serverless_retry.message",
            "serverless_retry.observability",
            "serverless_retry.planning",
            "serverless_retry.consumer.record_gate",
            "serverless_retry.consumer.record_reader",
            "serverless_retry.consumer.unhandled_records",
            "serverless_retry.consumer.retry_copies",
            # (terminal, the final message's code, is imported by the first record that ends)
            "serverless_retry.consumer.verdicts",
        },
    ),
    # The stream consumer: the scheduled-retry consumer it hands retries to, and the streams package.
    "stream": (
        {
            "SERVERLESS_RETRY_PROCESSOR": "orders_processor:process",
            "SERVERLESS_RETRY_POLICY": POLICY,
            "SERVERLESS_RETRY_QUEUE_URL": f"{QUEUES}/orders",
            "SERVERLESS_RETRY_QUEUE_ARN": f"arn:aws:sqs:us-east-1:{ACCOUNT}:orders",
            "SERVERLESS_RETRY_EXHAUSTED_QUEUE_URL": EXHAUSTED,
            **SCHEDULER,
        },
        COMMON
        | POLICY_MODULES
        | {
            "serverless_retry.async_processor",
            "serverless_retry.consumer",
            "serverless_retry.consumer.batch_response",
            "serverless_retry.consumer.batch_state",
            "serverless_retry.config",
            "serverless_retry.consumer.retrying_consumer",
            "serverless_retry.consumer.delivery",
            "serverless_retry.consumer.final_copies",
            "serverless_retry.handlers.stream",
            "serverless_retry.consumer.idempotency",
            "serverless_retry.message",
            "serverless_retry.observability",
            "serverless_retry.planning",
            "serverless_retry.consumer.record_gate",
            "serverless_retry.consumer.record_reader",
            "serverless_retry.consumer.unhandled_records",
            "serverless_retry.consumer.retry_copies",
            "serverless_retry.streams",
            "serverless_retry.streams.adapter",
            "serverless_retry.streams.consumer",
            "serverless_retry.streams.dynamodb_json",
            "serverless_retry.streams.handoff",
            "serverless_retry.streams.reader",
            "serverless_retry.streams.records",
            "serverless_retry.streams.settings",
            "serverless_retry.streams.stream_message",
            "serverless_retry.consumer.verdicts",
        },
    ),
    # The archiver: terminal forms, claim-check payloads (a pointer is read through), the S3 store.
    "archive": (
        {
            "SERVERLESS_RETRY_ARCHIVE_BUCKET": "orders-archive",
            "SERVERLESS_RETRY_ARCHIVE_SOURCES": json.dumps(
                {
                    EXHAUSTED_ARN: {
                        "place": "exhausted",
                        "source_queue_arn": f"arn:aws:sqs:us-east-1:{ACCOUNT}:orders",
                        "deployment": "orders",
                    }
                }
            ),
        },
        COMMON
        | {
            "serverless_retry.archive",
            "serverless_retry.archive.archiver",
            "serverless_retry.archive.metrics",
            "serverless_retry.archive.record",
            "serverless_retry.archive.settings",
            "serverless_retry.archive.store",
            "serverless_retry.handlers.archive",
            "serverless_retry.observability",
            "serverless_retry.payload_pointer",
            "serverless_retry.payload_store",
            "serverless_retry.terminal",
        },
    ),
    "enrichment": (
        {
            "SERVERLESS_RETRY_EXHAUSTED_QUEUE_URL": EXHAUSTED,
            "SERVERLESS_RETRY_FAILURE_QUEUE_URL": f"{QUEUES}/orders-failures",
        },
        COMMON
        | SELF_HEALING
        | {
            "serverless_retry.handlers.enrichment",
            "serverless_retry.selfheal.enrichment",
            "serverless_retry.selfheal.records",
            "serverless_retry.selfheal.stored",  # tells an S3 notification from a record, per record
        },
    ),
    "redrive": (
        {
            "SERVERLESS_RETRY_SOURCES": json.dumps(
                {"orders-fn": {"function_arn": f"arn:aws:lambda:us-east-1:{ACCOUNT}:function:orders-fn"}}
            ),
            "SERVERLESS_RETRY_POLICY": POLICY,
            "SERVERLESS_RETRY_EXHAUSTED_QUEUE_URL": EXHAUSTED,
            **SCHEDULER,
        },
        COMMON
        | POLICY_MODULES
        | SELF_HEALING
        | {
            "serverless_retry.handlers.redrive",
            "serverless_retry.selfheal.redrive",
            "serverless_retry.selfheal.stored",  # a payload too large for the bus is read back from S3
        },
    ),
    "redrive_queue": (
        {
            "SERVERLESS_RETRY_REDRIVE_FROM_QUEUE_URLS": EXHAUSTED,
            "SERVERLESS_RETRY_REDRIVE_TO_QUEUE_URL": f"{QUEUES}/orders",
        },
        COMMON
        | {
            "serverless_retry.handlers.redrive_queue",
            "serverless_retry.redrive",  # the package of the redrive's modules (its __init__ imports none)
            "serverless_retry.redrive.native",
            "serverless_retry.redrive.queue",
            "serverless_retry.redrive.options",
            "serverless_retry.selfheal",  # a queue may hold the pattern's records: read, never re-invoked here
            "serverless_retry.selfheal.records",
            "serverless_retry.selfheal.reinvoke",
            "serverless_retry.selfheal.state",
            "serverless_retry.selfheal.types",
            "serverless_retry.terminal",
        },
    ),
}
PROBE = """
import importlib, json, sys
importlib.import_module(sys.argv[1])
print(json.dumps({
    "ours": sorted(m for m in sys.modules if m.split(".")[0] == "serverless_retry"),
    "boto3": "boto3" in sys.modules,
}))
"""


@pytest.mark.parametrize("handler", sorted(CASES))
def test_a_handler_imports_only_what_it_runs(handler: str, tmp_path: Path) -> None:
    environ, expected = CASES[handler]
    (tmp_path / "orders_processor.py").write_text("def process(message):\n    message.body\n")
    env = {"PATH": "/usr/bin:/bin", "AWS_DEFAULT_REGION": "us-east-1", "PYTHONPATH": str(tmp_path), **environ}
    result = subprocess.run(
        [sys.executable, "-c", PROBE, f"serverless_retry.handlers.{handler}"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    loaded = json.loads(result.stdout)
    assert set(loaded["ours"]) == expected, (
        f"imported but not expected: {sorted(set(loaded['ours']) - expected)}; "
        f"expected but not imported: {sorted(expected - set(loaded['ours']))}"
    )
    assert loaded["boto3"] is False, "boto3 is imported with the first client, not at cold start"


def test_the_consumer_imports_no_botocore_errors_and_no_self_healing_code(tmp_path: Path) -> None:
    """What the consumer's cold start must leave out: the self-healing pattern, the claims table's
    code (no table configured), and botocore's exceptions (imported when an error is classified)."""
    environ, _ = CASES["consumer"]
    (tmp_path / "orders_processor.py").write_text("def process(message):\n    message.body\n")
    env = {"PATH": "/usr/bin:/bin", "AWS_DEFAULT_REGION": "us-east-1", "PYTHONPATH": str(tmp_path), **environ}
    code = (
        "import sys, serverless_retry.handlers.consumer\n"
        "print(sorted(m for m in sys.modules if m.startswith(('botocore.exceptions', 'serverless_retry.selfheal',"
        " 'serverless_retry.consumer.claims'))))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60, check=False
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"
