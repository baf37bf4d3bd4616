"""serverless-retry: Sidekiq/Celery-style retries for AWS queue consumers."""

from serverless_retry.errors import HttpError, NonRetryableError, RetryableError

__all__ = ["HttpError", "NonRetryableError", "RetryableError"]
__version__ = "0.1.0"
