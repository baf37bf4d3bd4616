"""serverless-retry: Sidekiq/Celery-style retries for AWS queue consumers.

The public API. Importing the package imports no boto3 client and touches no AWS: the Lambda entry
point is ``serverless_retry.handlers.consumer.handler``, which builds the consumer from its
environment at cold start; ``process_retrying_response`` and ``@retrying_consumer`` (through a
``RetryingProcessor``) run the same consumer around a record handler given in code. Self-healing
async Lambdas (pattern 2): ``self_healing`` wraps a function's handler;
``serverless_retry.handlers.enrichment`` and ``.redrive`` are the pattern's own functions.
"""

from serverless_retry.aws import AwsClients
from serverless_retry.backoff import Backoff
from serverless_retry.batch import RetryingProcessor, process_retrying_response, retrying_consumer
from serverless_retry.clock import Clock, FrozenClock, ScaledClock, SystemClock
from serverless_retry.config import ConsumerSettings, QueueTargets
from serverless_retry.consumer import (
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
