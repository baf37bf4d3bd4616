"""Exceptions a processor raises to steer the retry decision, and the library's own errors."""

from __future__ import annotations

from datetime import datetime

RetryAfter = float | int | str | datetime | None


class ServerlessRetryError(Exception):
    """Base class of the errors serverless-retry itself raises."""


class PolicyError(ServerlessRetryError, ValueError):
    """An invalid retry policy. ``field`` is the dotted path of the bad field (e.g. ``rules[1].backoff``)."""

    def __init__(self, field: str, problem: str) -> None:
        self.field = field
        self.problem = problem
        super().__init__(f"retry policy field '{field}': {problem}")


class KeyUnavailable(ServerlessRetryError):
    """The envelope signing key could not be read (the claims table did not answer): see signing."""


class ConfigError(ServerlessRetryError, ValueError):
    """An invalid configuration; ``variable`` names the environment variable at fault."""

    def __init__(self, variable: str, problem: str) -> None:
        self.variable = variable
        self.problem = problem
        super().__init__(f"{variable}: {problem}")


class RetryableError(Exception):
    """The processor asks for a retry. ``retry_after`` (seconds, HTTP date or datetime) is a server hint
    that rules with ``honor_retry_after`` use."""

    def __init__(self, message: str = "", *, retry_after: RetryAfter = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class NonRetryableError(Exception):
    """The processor says another attempt cannot succeed: the message goes straight to the
    retry-exhausted queue with outcome ``non-retryable``, whatever the rules say."""


class HttpError(Exception):
    """A failed HTTP call; rules match it by ``status`` and may honour ``retry_after``."""

    def __init__(self, status: int, message: str = "", *, retry_after: RetryAfter = None) -> None:
        super().__init__(message or f"HTTP {status}")
        self.status = status
        self.status_code = status
        self.retry_after = retry_after


class EventShapeError(ServerlessRetryError, ValueError):
    """The consumer was invoked with something that is not an SQS event (an SNS notification, an API
    Gateway request, an EventBridge event...). Raised, never answered with success: the sender's own
    retries and failure destinations then keep the event instead of it being dropped."""


class UnhandledRecordError(ServerlessRetryError):
    """A record without a messageId could not be kept in the retry-exhausted queue, and batchItemFailures
    cannot name it: the invocation fails, which returns it (and only records handed back anyway)."""
