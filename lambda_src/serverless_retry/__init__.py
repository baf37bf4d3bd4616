"""serverless-retry: Sidekiq/Celery-style retries for AWS queue consumers.

The public API. Importing the package imports no boto3 client and touches no AWS: the Lambda entry
point is ``serverless_retry.handlers.consumer.handler``, which builds the consumer from its
environment at cold start; ``process_retrying_response`` and ``@retrying_consumer`` (through a
``RetryingProcessor``) run the same consumer around a record handler given in code. Self-healing
async Lambdas (pattern 2): ``self_healing`` wraps a function's handler;
``serverless_retry.handlers.enrichment`` and ``.redrive`` are the pattern's own functions.

The names below are imported on first use (PEP 562): a Lambda handler imports this package first, and
each handler must import only the modules it runs (the consumer never runs the self-healing code, nor
the self-healing functions the consumer). tests/unit/test_handler_imports.py checks what each pulls in.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from serverless_retry.aws import AwsClients
    from serverless_retry.backoff import Backoff
    from serverless_retry.batch import RetryingProcessor, process_retrying_response, retrying_consumer
    from serverless_retry.clock import Clock, FrozenClock, ScaledClock, SystemClock
    from serverless_retry.config import ConsumerSettings, QueueTargets
    from serverless_retry.consumer.retrying_consumer import (
        BatchResponse,
        BatchResult,
        IdempotentProcessor,
        RetryingConsumer,
        consumer_from_env,
        idempotent_processor,
    )
    from serverless_retry.envelope import RetryContext
    from serverless_retry.errors import (
        ConfigError,
        HttpError,
        NonRetryableError,
        PolicyError,
        RetryableError,
    )
    from serverless_retry.message import Exhausted, ExhaustedHook, Message, Processor
    from serverless_retry.policy import Decision, RetryPolicy, Rule
    from serverless_retry.selfheal.decorator import read_retry_state, self_healing
    from serverless_retry.selfheal.state import InvalidRetryState

__all__ = [
    "AwsClients",
    "Backoff",
    "BatchResponse",
    "BatchResult",
    "Clock",
    "ConfigError",
    "ConsumerSettings",
    "Decision",
    "Exhausted",
    "ExhaustedHook",
    "FrozenClock",
    "HttpError",
    "IdempotentProcessor",
    "InvalidRetryState",
    "Message",
    "NonRetryableError",
    "PolicyError",
    "Processor",
    "QueueTargets",
    "RetryContext",
    "RetryPolicy",
    "RetryableError",
    "RetryingConsumer",
    "RetryingProcessor",
    "Rule",
    "ScaledClock",
    "SystemClock",
    "consumer_from_env",
    "idempotent_processor",
    "process_retrying_response",
    "read_retry_state",
    "retrying_consumer",
    "self_healing",
]
__version__ = "0.2.0"

# Where each public name lives (the module is imported when the name is first read).
_HOMES = {
    "AwsClients": "aws",
    "Backoff": "backoff",
    "Clock": "clock",
    "FrozenClock": "clock",
    "ScaledClock": "clock",
    "SystemClock": "clock",
    "ConsumerSettings": "config",
    "QueueTargets": "config",
    "BatchResponse": "consumer.retrying_consumer",
    "BatchResult": "consumer.retrying_consumer",
    "IdempotentProcessor": "consumer.retrying_consumer",
    "RetryingConsumer": "consumer.retrying_consumer",
    "consumer_from_env": "consumer.retrying_consumer",
    "idempotent_processor": "consumer.retrying_consumer",
    "RetryContext": "envelope",
    "ConfigError": "errors",
    "HttpError": "errors",
    "NonRetryableError": "errors",
    "PolicyError": "errors",
    "RetryableError": "errors",
    "Message": "message",
    "Processor": "message",
    "Exhausted": "message",
    "ExhaustedHook": "message",
    "RetryingProcessor": "batch",
    "process_retrying_response": "batch",
    "retrying_consumer": "batch",
    "Decision": "policy",
    "RetryPolicy": "policy",
    "Rule": "policy",
    "read_retry_state": "selfheal.decorator",
    "self_healing": "selfheal.decorator",
    "InvalidRetryState": "selfheal.state",
}


def __getattr__(name: str) -> object:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from importlib import import_module

    value = getattr(import_module(f"{__name__}.{home}"), name)
    globals()[name] = value  # later reads find it directly
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
