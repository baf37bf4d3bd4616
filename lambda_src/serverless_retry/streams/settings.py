"""The stream consumer's settings: pattern 1's (``ConsumerSettings``, the same variables, the retry
queue as SERVERLESS_RETRY_QUEUE_URL/_ARN) plus ``SERVERLESS_RETRY_STREAM_ORDERING``. Pure."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Literal, get_args

from serverless_retry.config import ENV_QUEUE_URL, ConsumerSettings
from serverless_retry.environment import optional
from serverless_retry.errors import ConfigError

__all__ = ["ENV_STREAM_ORDERING", "STREAM_ORDERINGS", "StreamOrdering", "stream_ordering", "stream_settings"]

ENV_STREAM_ORDERING = "SERVERLESS_RETRY_STREAM_ORDERING"
# unordered: a failed record is handed to the retry queue and the shard goes on (it runs later, out of
# order); blocking: Lambda's own behaviour, the shard waits at the first failed record.
StreamOrdering = Literal["unordered", "blocking"]
STREAM_ORDERINGS: tuple[StreamOrdering, ...] = get_args(StreamOrdering)


def stream_ordering(environ: Mapping[str, str] | None = None) -> StreamOrdering:
    env = os.environ if environ is None else environ
    raw = optional(env, ENV_STREAM_ORDERING) or "unordered"
    for ordering in STREAM_ORDERINGS:
        if raw == ordering:
            return ordering
    raise ConfigError(ENV_STREAM_ORDERING, f"must be one of {', '.join(STREAM_ORDERINGS)}, got {raw!r}")


def stream_settings(environ: Mapping[str, str] | None = None) -> tuple[ConsumerSettings, StreamOrdering]:
    """Both settings, validated; ``ConfigError`` names the variable at fault."""
    ordering = stream_ordering(environ)
    settings = ConsumerSettings.from_env(environ)
    if settings.targets.source_is_fifo:
        raise ConfigError(
            ENV_QUEUE_URL,
            "the stream consumer's retry queue must be a standard queue: a stream record's retry waits "
            "by SQS delay or schedule, out of the shard's order (a FIFO group would not keep it anyway)",
        )
    return settings, ordering
