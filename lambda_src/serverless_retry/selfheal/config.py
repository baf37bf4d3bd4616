"""Settings of the enrichment and redrive functions, read from the environment the module sets and
validated at cold start: every problem is a ``ConfigError`` naming the variable to fix."""

from __future__ import annotations

import json
import math
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import cast
from urllib.parse import urlsplit

from serverless_retry.clock import Clock, ScaledClock, SystemClock
from serverless_retry.errors import ConfigError, PolicyError
from serverless_retry.policy import RetryPolicy
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

__all__ = ["EnrichmentSettings", "RedriveSettings", "Source"]

ENV_CLOCK_SCALE = "SERVERLESS_RETRY_CLOCK_SCALE"
ENV_CLOCK_EPOCH = "SERVERLESS_RETRY_CLOCK_EPOCH"
DEFAULT_MAX_MESSAGE_BYTES = 262_144
_MIN_MESSAGE_BYTES, _MAX_MESSAGE_BYTES = 1_024, 1_048_576
_SQS_ARN = re.compile(r"^arn:aws[a-z-]*:sqs:[a-z0-9-]+:\d{12}:[A-Za-z0-9_-]{1,80}$")  # standard queues only
_SNS_ARN = re.compile(r"^arn:aws[a-z-]*:sns:[a-z0-9-]+:\d{12}:[A-Za-z0-9_-]{1,256}$")  # standard topics only
_ROLE_ARN = re.compile(r"^arn:aws[a-z-]*:iam::\d{12}:role/[\w+=,.@/-]{1,512}$")
_SCHEDULE_GROUP = re.compile(r"^[0-9A-Za-z_.-]{1,64}$")
_QUEUE_NAME = re.compile(r"^[A-Za-z0-9_-]{1,80}$")
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
            exhausted_queue_url=_queue_url(env, ENV_EXHAUSTED_QUEUE_URL),
            failure_queue_url=_queue_url(env, ENV_FAILURE_QUEUE_URL),
            exhausted_max_bytes=_max_bytes(env),
            clock=_clock(env),
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
        default_policy = _policy(_required(env, ENV_POLICY), ENV_POLICY)
        redrive_to = env.get(ENV_REDRIVE_TO, "").strip() or "function"
        if redrive_to not in ("function", "topic"):
            raise ConfigError(ENV_REDRIVE_TO, f"must be function or topic, got {redrive_to!r}")
        sources = _sources(_required(env, ENV_SOURCES), default_policy)
        if redrive_to == "topic" and not any(s.topic_arn for s in sources.values()):
            raise ConfigError(ENV_REDRIVE_TO, f"is topic, but no source in {ENV_SOURCES} has a topic_arn")
        group = _required(env, ENV_SCHEDULE_GROUP)
        if not _SCHEDULE_GROUP.match(group):
            raise ConfigError(ENV_SCHEDULE_GROUP, "must be 1-64 characters of 0-9 A-Z a-z - _ .")
        role = _required(env, ENV_SCHEDULER_ROLE_ARN)
        if not _ROLE_ARN.match(role):
            raise ConfigError(
                ENV_SCHEDULER_ROLE_ARN, "must be an IAM role ARN (arn:aws:iam::<account>:role/<name>)"
            )
        dlq = _required(env, ENV_DLQ_ARN)
        if not _SQS_ARN.match(dlq):
            raise ConfigError(
                ENV_DLQ_ARN,
                f"must be the ARN of a standard SQS queue (the Scheduler takes no FIFO DLQ), got {dlq!r}",
            )
        return cls(
            sources=sources,
            redrive_to=cast(RedriveTo, redrive_to),
            exhausted_queue_url=_queue_url(env, ENV_EXHAUSTED_QUEUE_URL),
            schedule_group=group,
            scheduler_role_arn=role,
            dlq_arn=dlq,
            exhausted_max_bytes=_max_bytes(env),
            clock=_clock(env),
        )


def _required(env: Mapping[str, str], name: str) -> str:
    value = env.get(name, "").strip()
    if not value:
        raise ConfigError(name, "required but not set")
    return value


def _policy(value: object, variable: str, path: str = "") -> RetryPolicy:
    try:
        policy = RetryPolicy.from_json(value) if isinstance(value, str) else RetryPolicy.from_dict(value)  # type: ignore[arg-type]
    except PolicyError as exc:
        raise ConfigError(variable, f"{path}{exc}") from exc
    if policy.transport not in _TRANSPORTS:
        raise ConfigError(
            variable,
            f"{path}retry policy field 'transport': must be auto or scheduler for self-healing "
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


def _queue_url(env: Mapping[str, str], name: str) -> str:
    value = _required(env, name)
    parts = urlsplit(value)
    path = parts.path.strip("/").split("/")
    if (
        parts.scheme not in ("https", "http")  # http: the local emulator on 127.0.0.1
        or not parts.netloc
        or len(path) != 2
        or not path[0].isdigit()
        or not _QUEUE_NAME.match(path[1])
    ):
        raise ConfigError(
            name, f"must be the URL of a standard SQS queue (https://<host>/<account>/<name>), got {value!r}"
        )
    return value


def _max_bytes(env: Mapping[str, str]) -> int:
    raw = env.get(ENV_EXHAUSTED_MAX_MESSAGE_BYTES, "").strip()
    if not raw:
        return DEFAULT_MAX_MESSAGE_BYTES
    try:
        value = int(raw)
    except ValueError:
        raise ConfigError(ENV_EXHAUSTED_MAX_MESSAGE_BYTES, f"must be an integer, got {raw!r}") from None
    if not _MIN_MESSAGE_BYTES <= value <= _MAX_MESSAGE_BYTES:
        raise ConfigError(
            ENV_EXHAUSTED_MAX_MESSAGE_BYTES,
            f"must be between {_MIN_MESSAGE_BYTES} and {_MAX_MESSAGE_BYTES}, got {value}",
        )
    return value


def _clock(env: Mapping[str, str]) -> Clock:
    scale_raw = env.get(ENV_CLOCK_SCALE, "").strip()
    epoch_raw = env.get(ENV_CLOCK_EPOCH, "").strip()
    if not scale_raw and not epoch_raw:
        return SystemClock()
    if not scale_raw or not epoch_raw:
        missing = ENV_CLOCK_SCALE if not scale_raw else ENV_CLOCK_EPOCH
        raise ConfigError(missing, f"{ENV_CLOCK_SCALE} and {ENV_CLOCK_EPOCH} go together")
    values: dict[str, float] = {}
    for name, raw in ((ENV_CLOCK_SCALE, scale_raw), (ENV_CLOCK_EPOCH, epoch_raw)):
        try:
            values[name] = float(raw)
        except ValueError:
            raise ConfigError(name, f"must be a number, got {raw!r}") from None
        if not math.isfinite(values[name]):
            raise ConfigError(name, f"must be a finite number, got {raw!r}")
    if values[ENV_CLOCK_SCALE] <= 0:
        raise ConfigError(ENV_CLOCK_SCALE, f"must be > 0, got {scale_raw!r}")
    return ScaledClock(epoch=values[ENV_CLOCK_EPOCH], scale=values[ENV_CLOCK_SCALE])
