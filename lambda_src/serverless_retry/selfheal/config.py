"""Settings of the enrichment and redrive functions, read from the environment the module sets and
validated at cold start: every problem is a ``ConfigError`` naming the variable to fix."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, cast

from serverless_retry import environment
from serverless_retry.clock import Clock, SystemClock
from serverless_retry.environment import DEFAULT_MAX_MESSAGE_BYTES, optional, required
from serverless_retry.errors import ConfigError
from serverless_retry.selfheal.state import unqualified_function_arn
from serverless_retry.selfheal.types import (
    ENV_DLQ_ARN,
    ENV_EXHAUSTED_MAX_MESSAGE_BYTES,
    ENV_EXHAUSTED_QUEUE_URL,
    ENV_FAILURE_QUEUE_URL,
    ENV_POLICY,
    ENV_REDRIVE_TO,
    ENV_SCHEDULE_GROUP,
    ENV_SCHEDULER_ROLE_ARN,
    ENV_SOURCES,
    RedriveTo,
)

if TYPE_CHECKING:  # the policy is parsed (environment.policy imports it) by the redrive's settings only
    from serverless_retry.policy import RetryPolicy

__all__ = ["EnrichmentSettings", "RedriveSettings", "Source"]

_SNS_ARN = re.compile(r"^arn:aws[a-z-]*:sns:[a-z0-9-]+:\d{12}:[A-Za-z0-9_-]{1,256}$")  # standard topics only
_SOURCE_KEYS = ("function_arn", "topic_arn", "policy")
# Self-healing delays go through the Scheduler (or nowhere, for 0): SQS transports make no sense here.
_TRANSPORTS = ("auto", "scheduler")


@dataclass(frozen=True)
class Source:
    function_name: str
    function_arn: str  # unqualified
    policy: RetryPolicy
    topic_arn: str | None = None

    @property
    def max_retries(self) -> int:
        """The rule's limit for this source: the largest budget any retryable rule can grant, minus 1."""
        budgets = [self.policy.max_attempts] + [
            r.max_attempts for r in self.policy.rules if r.retry and r.max_attempts is not None
        ]
        return max(budgets) - 1


@dataclass(frozen=True)
class EnrichmentSettings:
    exhausted_queue_url: str
    failure_queue_url: str
    exhausted_max_bytes: int = DEFAULT_MAX_MESSAGE_BYTES
    clock: Clock = field(default_factory=SystemClock)

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> EnrichmentSettings:
        env = os.environ if environ is None else environ
        return cls(
            exhausted_queue_url=environment.queue_url(env, ENV_EXHAUSTED_QUEUE_URL, fifo=False),
            failure_queue_url=environment.queue_url(env, ENV_FAILURE_QUEUE_URL, fifo=False),
            exhausted_max_bytes=_exhausted_bytes(env),
            clock=environment.clock(env),
        )


@dataclass(frozen=True)
class RedriveSettings:
    sources: Mapping[str, Source]  # by function name
    redrive_to: RedriveTo
    exhausted_queue_url: str
    schedule_group: str
    scheduler_role_arn: str
    dlq_arn: str
    exhausted_max_bytes: int = DEFAULT_MAX_MESSAGE_BYTES
    clock: Clock = field(default_factory=SystemClock)

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> RedriveSettings:
        env = os.environ if environ is None else environ
        default_policy = _policy(required(env, ENV_POLICY), ENV_POLICY)
        redrive_to = optional(env, ENV_REDRIVE_TO) or "function"
        if redrive_to not in ("function", "topic"):
            raise ConfigError(ENV_REDRIVE_TO, f"must be function or topic, got {redrive_to!r}")
        sources = _sources(required(env, ENV_SOURCES), default_policy)
        if redrive_to == "topic" and not any(s.topic_arn for s in sources.values()):
            raise ConfigError(ENV_REDRIVE_TO, f"is topic, but no source in {ENV_SOURCES} has a topic_arn")
        return cls(
            sources=sources,
            redrive_to=cast(RedriveTo, redrive_to),
            exhausted_queue_url=environment.queue_url(env, ENV_EXHAUSTED_QUEUE_URL, fifo=False),
            schedule_group=environment.schedule_group(required(env, ENV_SCHEDULE_GROUP), ENV_SCHEDULE_GROUP),
            scheduler_role_arn=environment.role_arn(
                required(env, ENV_SCHEDULER_ROLE_ARN), ENV_SCHEDULER_ROLE_ARN
            ),
            dlq_arn=environment.schedule_dlq_arn(env, ENV_DLQ_ARN),
            exhausted_max_bytes=_exhausted_bytes(env),
            clock=environment.clock(env),
        )


def _policy(value: object, variable: str, where: str = "") -> RetryPolicy:
    policy = environment.policy(value, variable, where)
    if policy.transport not in _TRANSPORTS:
        raise ConfigError(
            variable,
            f"{where}retry policy field 'transport': must be auto or scheduler for self-healing "
            f"(delays go through EventBridge Scheduler), got {policy.transport!r}",
        )
    return policy


def _sources(text: str, default: RetryPolicy) -> dict[str, Source]:
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise ConfigError(ENV_SOURCES, f"not valid JSON: {exc}") from None
    if not isinstance(data, dict) or not data:
        raise ConfigError(ENV_SOURCES, "must be a non-empty JSON object keyed by function name")
    out: dict[str, Source] = {}
    for name, raw in data.items():
        where = f"sources[{name!r}]"
        if not isinstance(raw, dict):
            raise ConfigError(ENV_SOURCES, f"{where}: must be an object")
        unknown = sorted(set(raw) - set(_SOURCE_KEYS))
        if unknown:
            raise ConfigError(
                ENV_SOURCES, f"{where}: unknown field(s) {unknown} (known: {', '.join(_SOURCE_KEYS)})"
            )
        parsed = unqualified_function_arn(raw.get("function_arn", ""))
        if parsed is None or parsed[2]:
            raise ConfigError(
                ENV_SOURCES, f"{where}.function_arn: must be an unqualified Lambda function ARN"
            )
        if parsed[1] != name:
            raise ConfigError(ENV_SOURCES, f"{where}.function_arn names function {parsed[1]!r}, not {name!r}")
        topic = raw.get("topic_arn")
        if topic is not None and (not isinstance(topic, str) or not _SNS_ARN.match(topic)):
            raise ConfigError(
                ENV_SOURCES, f"{where}.topic_arn: must be a standard SNS topic ARN, got {topic!r}"
            )
        policy = (
            default if raw.get("policy") is None else _policy(raw["policy"], ENV_SOURCES, f"{where}.policy: ")
        )
        out[name] = Source(name, parsed[0], policy, topic)
    return out


def _exhausted_bytes(env: Mapping[str, str]) -> int:
    return environment.message_bytes(env, ENV_EXHAUSTED_MAX_MESSAGE_BYTES, DEFAULT_MAX_MESSAGE_BYTES)
