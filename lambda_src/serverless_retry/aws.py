"""boto3 clients, created on first use and injectable for tests.

Clients are built with the default session and endpoint resolution, so the standard
``AWS_ENDPOINT_URL`` (or ``AWS_ENDPOINT_URL_SQS`` ...) variable points them at the local emulator.

boto3 itself is imported with the first client, not with this module: a consumer whose records all
succeed never calls AWS (the event source mapping deletes them), and importing boto3 costs more
than everything else its cold start imports.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from botocore.config import Config
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_lambda import LambdaClient
    from mypy_boto3_scheduler import EventBridgeSchedulerClient
    from mypy_boto3_sns import SNSClient
    from mypy_boto3_sqs import SQSClient

__all__ = ["BOTO_CONFIG", "AwsClients", "boto_config", "client"]

BOTO_CONFIG: Config  # = boto_config(), built on first read (module __getattr__ below)


@functools.cache
def boto_config() -> Config:
    """The configuration of every client we build (also readable as ``BOTO_CONFIG``).

    Standard retry mode retries throttling and transient errors with backoff; 3 attempts and short
    timeouts keep a stuck call well inside a Lambda's time budget (a call that still fails puts its
    record in batchItemFailures, so the queue retries it: nothing is lost by giving up early)."""
    from botocore.config import Config

    return Config(
        retries={"mode": "standard", "max_attempts": 3},
        connect_timeout=5,
        read_timeout=10,
        user_agent_extra="serverless-retry",
    )


def client(service: str, config: Config | None = None) -> Any:
    """A boto3 client of the default session, boto3 imported now if it was not yet."""
    import boto3

    return boto3.client(service, config=config or boto_config())  # type: ignore[call-overload]


def __getattr__(name: str) -> Config:
    if name == "BOTO_CONFIG":  # built (and botocore imported) on first read
        return boto_config()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


class AwsClients:
    """Lazily created clients. Pass factories (or ready clients via :meth:`of`) to inject fakes."""

    def __init__(
        self,
        *,
        sqs_factory: Callable[[], SQSClient] | None = None,
        scheduler_factory: Callable[[], EventBridgeSchedulerClient] | None = None,
        dynamodb_factory: Callable[[], DynamoDBClient] | None = None,
        config: Config | None = None,
        sns_factory: Callable[[], SNSClient] | None = None,
        lambda_factory: Callable[[], LambdaClient] | None = None,
        s3_factory: Callable[[], Any] | None = None,
    ) -> None:
        self._config = config
        self._sqs_factory = sqs_factory or self._default("sqs")
        self._scheduler_factory = scheduler_factory or self._default("scheduler")
        self._sns_factory = sns_factory or self._default("sns")
        self._lambda_factory = lambda_factory or self._default("lambda")
        self._dynamodb_factory = dynamodb_factory or self._default("dynamodb")
        self._s3_factory = s3_factory or self._default("s3")
        self._sqs: SQSClient | None = None
        self._scheduler: EventBridgeSchedulerClient | None = None
        self._sns: SNSClient | None = None
        self._lambda: LambdaClient | None = None
        self._dynamodb: DynamoDBClient | None = None
        self._s3: Any = None

    @classmethod
    def of(
        cls,
        *,
        sqs: SQSClient | None = None,
        scheduler: EventBridgeSchedulerClient | None = None,
        sns: SNSClient | None = None,
        lambda_: LambdaClient | None = None,
        dynamodb: DynamoDBClient | None = None,
        s3: Any = None,
    ) -> AwsClients:
        """Clients already built (e.g. inside a moto ``mock_aws`` context or with a Stubber)."""
        return cls(
            sqs_factory=(lambda: sqs) if sqs is not None else None,
            scheduler_factory=(lambda: scheduler) if scheduler is not None else None,
            sns_factory=(lambda: sns) if sns is not None else None,
            lambda_factory=(lambda: lambda_) if lambda_ is not None else None,
            dynamodb_factory=(lambda: dynamodb) if dynamodb is not None else None,
            s3_factory=(lambda: s3) if s3 is not None else None,
        )

    def _default(self, service: str) -> Callable[[], Any]:
        return lambda: client(service, self._config)

    @property
    def sqs(self) -> SQSClient:
        if self._sqs is None:
            self._sqs = self._sqs_factory()
        return self._sqs

    @property
    def scheduler(self) -> EventBridgeSchedulerClient:
        if self._scheduler is None:
            self._scheduler = self._scheduler_factory()
        return self._scheduler

    @property
    def sns(self) -> SNSClient:
        if self._sns is None:
            self._sns = self._sns_factory()
        return self._sns

    @property
    def lambda_(self) -> LambdaClient:
        """The Lambda client (``lambda`` is a Python keyword)."""
        if self._lambda is None:
            self._lambda = self._lambda_factory()
        return self._lambda

    @property
    def dynamodb(self) -> DynamoDBClient:
        if self._dynamodb is None:
            self._dynamodb = self._dynamodb_factory()
        return self._dynamodb

    @property
    def s3(self) -> Any:
        """The S3 client (claim-check payloads of the retry-exhausted queue)."""
        if self._s3 is None:
            self._s3 = self._s3_factory()
        return self._s3
