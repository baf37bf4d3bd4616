"""Consumer settings, read from the environment the Terraform module sets, validated at cold start.

Every problem raises ``ConfigError(variable, problem)`` so the function's first log line names the
variable to fix.
"""

from __future__ import annotations

import importlib
import math
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import cast
from urllib.parse import urlsplit

from serverless_retry.clock import Clock, ScaledClock, SystemClock
from serverless_retry.errors import ConfigError, PolicyError
from serverless_retry.message import Processor
from serverless_retry.policy import SQS_MAX_DELAY_SECONDS, RetryPolicy

__all__ = [
    "DEFAULT_MAX_MESSAGE_BYTES",
    "ENV_CLOCK_EPOCH",
    "ENV_CLOCK_SCALE",
    "ENV_DLQ_ARN",
    "ENV_EXHAUSTED_MAX_MESSAGE_BYTES",
    "ENV_EXHAUSTED_QUEUE_URL",
    "ENV_IDEMPOTENCY_TABLE",
    "ENV_MAX_MESSAGE_BYTES",
    "ENV_POLICY",
    "ENV_PROCESSOR",
    "ENV_QUEUE_ARN",
    "ENV_QUEUE_URL",
    "ENV_SCHEDULER_ROLE_ARN",
    "ENV_SCHEDULE_GROUP",
    "ConsumerSettings",
    "QueueTargets",
    "load_processor",
    "needs_scheduler",
]

ENV_PROCESSOR = "SERVERLESS_RETRY_PROCESSOR"
ENV_POLICY = "SERVERLESS_RETRY_POLICY"
ENV_QUEUE_URL = "SERVERLESS_RETRY_QUEUE_URL"
ENV_QUEUE_ARN = "SERVERLESS_RETRY_QUEUE_ARN"
ENV_EXHAUSTED_QUEUE_URL = "SERVERLESS_RETRY_EXHAUSTED_QUEUE_URL"
ENV_DLQ_ARN = "SERVERLESS_RETRY_DLQ_ARN"
ENV_SCHEDULE_GROUP = "SERVERLESS_RETRY_SCHEDULE_GROUP"
ENV_SCHEDULER_ROLE_ARN = "SERVERLESS_RETRY_SCHEDULER_ROLE_ARN"
ENV_MAX_MESSAGE_BYTES = "SERVERLESS_RETRY_MAX_MESSAGE_BYTES"
ENV_EXHAUSTED_MAX_MESSAGE_BYTES = "SERVERLESS_RETRY_EXHAUSTED_MAX_MESSAGE_BYTES"
ENV_CLOCK_SCALE = "SERVERLESS_RETRY_CLOCK_SCALE"
ENV_CLOCK_EPOCH = "SERVERLESS_RETRY_CLOCK_EPOCH"
ENV_IDEMPOTENCY_TABLE = "SERVERLESS_RETRY_IDEMPOTENCY_TABLE"

DEFAULT_MAX_MESSAGE_BYTES = 262_144
# SQS accepts 1 KiB .. 1 MiB as a queue's MaximumMessageSize.
_MIN_MESSAGE_BYTES = 1_024
_MAX_MESSAGE_BYTES = 1_048_576

_SQS_ARN = re.compile(
    r"^arn:aws[a-z-]*:sqs:(?P<region>[a-z0-9-]+):(?P<account>\d{12}):(?P<name>[A-Za-z0-9_-]{1,75}(?:\.fifo)?)$"
)
_ROLE_ARN = re.compile(r"^arn:aws[a-z-]*:iam::\d{12}:role/[\w+=,.@/-]{1,512}$")
_QUEUE_NAME = re.compile(r"^[A-Za-z0-9_-]{1,75}(?:\.fifo)?$")
_SCHEDULE_GROUP = re.compile(r"^[0-9A-Za-z_.-]{1,64}$")
_DOTTED = r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*"
_PROCESSOR = re.compile(rf"^(?P<module>{_DOTTED}):(?P<attr>{_DOTTED})$")
_TABLE_NAME = re.compile(r"^[A-Za-z0-9_.-]{3,255}$")


@dataclass(frozen=True)
class QueueTargets:
    """Where the consumer sends things: retries, exhausted copies, and the schedules' dead letters."""

    queue_url: str
    queue_arn: str
    exhausted_queue_url: str
    dlq_arn: str
    schedule_group: str | None = None
    scheduler_role_arn: str | None = None
    max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES
    # The retry-exhausted queue's maximum message size; 0 means the same as the source's. It should be
    # at least max_message_bytes + terminal.FRAME_OVERHEAD_BYTES, so every final copy carries its reason.
    exhausted_max_message_bytes: int = 0

    def __post_init__(self) -> None:
        if not self.exhausted_max_message_bytes:
            object.__setattr__(self, "exhausted_max_message_bytes", self.max_message_bytes)

    @property
    def source_is_fifo(self) -> bool:
        return self.queue_arn.endswith(".fifo")

    @property
    def exhausted_is_fifo(self) -> bool:
        return self.exhausted_queue_url.endswith(".fifo")


@dataclass(frozen=True)
class ConsumerSettings:
    processor: str  # "module:function"; import it with load_processor()
    policy: RetryPolicy
    targets: QueueTargets
    clock: Clock = field(default_factory=SystemClock)
    idempotency_table: str | None = None

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> ConsumerSettings:
        env = os.environ if environ is None else environ
        processor = _required(env, ENV_PROCESSOR)
        if not _PROCESSOR.match(processor):
            raise ConfigError(ENV_PROCESSOR, f"must be 'module:function', got {processor!r}")
        policy = _policy(_required(env, ENV_POLICY))

        queue_arn = _sqs_arn(env, ENV_QUEUE_ARN)
        queue_url = _queue_url(env, ENV_QUEUE_URL)
        arn_name = queue_arn.rsplit(":", 1)[1]
        if queue_url.rsplit("/", 1)[1] != arn_name:
            raise ConfigError(
                ENV_QUEUE_URL,
                f"names queue {queue_url.rsplit('/', 1)[1]!r} but {ENV_QUEUE_ARN} is {arn_name!r}",
            )
        exhausted_url = _queue_url(env, ENV_EXHAUSTED_QUEUE_URL)
        dlq_arn = _sqs_arn(env, ENV_DLQ_ARN)

        targets = QueueTargets(
            queue_url=queue_url,
            queue_arn=queue_arn,
            exhausted_queue_url=exhausted_url,
            dlq_arn=dlq_arn,
            schedule_group=_optional(env, ENV_SCHEDULE_GROUP),
            scheduler_role_arn=_optional(env, ENV_SCHEDULER_ROLE_ARN),
            max_message_bytes=_max_bytes(env, ENV_MAX_MESSAGE_BYTES) or DEFAULT_MAX_MESSAGE_BYTES,
            exhausted_max_message_bytes=_max_bytes(env, ENV_EXHAUSTED_MAX_MESSAGE_BYTES),
        )
        if targets.exhausted_max_message_bytes < targets.max_message_bytes:
            raise ConfigError(
                ENV_EXHAUSTED_MAX_MESSAGE_BYTES,
                f"must be at least {ENV_MAX_MESSAGE_BYTES} ({targets.max_message_bytes}): the "
                f"retry-exhausted queue takes the source's messages plus their outcome and reason, "
                f"got {targets.exhausted_max_message_bytes}",
            )
        if targets.schedule_group is not None and not _SCHEDULE_GROUP.match(targets.schedule_group):
            raise ConfigError(ENV_SCHEDULE_GROUP, "must be 1-64 characters of 0-9 A-Z a-z - _ .")
        if targets.scheduler_role_arn is not None and not _ROLE_ARN.match(targets.scheduler_role_arn):
            raise ConfigError(
                ENV_SCHEDULER_ROLE_ARN, "must be an IAM role ARN (arn:aws:iam::<account>:role/<name>)"
            )
        if needs_scheduler(policy, fifo=targets.source_is_fifo):
            why = (
                "the queue is FIFO (no per-message delay), so retries go through EventBridge Scheduler"
                if targets.source_is_fifo
                else "the retry policy can delay longer than SQS's 900 s, so retries need EventBridge Scheduler"
            )
            if targets.schedule_group is None:
                raise ConfigError(ENV_SCHEDULE_GROUP, f"required: {why}")
            if targets.scheduler_role_arn is None:
                raise ConfigError(ENV_SCHEDULER_ROLE_ARN, f"required: {why}")

        table = _optional(env, ENV_IDEMPOTENCY_TABLE)
        if table is not None and not _TABLE_NAME.match(table):
            raise ConfigError(ENV_IDEMPOTENCY_TABLE, f"not a DynamoDB table name: {table!r}")
        return cls(
            processor=processor, policy=policy, targets=targets, clock=_clock(env), idempotency_table=table
        )

    def load_processor(self) -> Processor:
        return load_processor(self.processor)


def load_processor(spec: str, variable: str = ENV_PROCESSOR) -> Processor:
    """Import ``module:function`` (the attribute may be dotted, e.g. ``pkg.mod:Handler.process``)."""
    match = _PROCESSOR.match(spec)
    if not match:
        raise ConfigError(variable, f"must be 'module:function', got {spec!r}")
    try:
        target: object = importlib.import_module(match["module"])
    except ImportError as exc:
        raise ConfigError(variable, f"cannot import module {match['module']!r}: {exc}") from exc
    for part in match["attr"].split("."):
        try:
            target = getattr(target, part)
        except AttributeError as exc:
            raise ConfigError(variable, f"{spec!r}: no attribute {part!r}") from exc
    if not callable(target):
        raise ConfigError(variable, f"{spec!r} is not callable")
    return cast(Processor, target)


def needs_scheduler(policy: RetryPolicy, *, fifo: bool) -> bool:
    """Whether any decision of this policy can pick the Scheduler transport."""
    if policy.transport in ("sqs-delay", "visibility"):
        # Forced SQS delays are clamped to 900 s, but a FIFO queue has no per-message delay at all.
        return fifo and policy.transport == "sqs-delay"
    if policy.transport == "scheduler" or fifo:
        return True
    # auto: every delay (Retry-After included) is capped by the backoff in force.
    caps = [policy.backoff.max_seconds] + [r.backoff.max_seconds for r in policy.rules if r.backoff]
    return max(caps) > SQS_MAX_DELAY_SECONDS


def _required(env: Mapping[str, str], name: str) -> str:
    value = env.get(name, "").strip()
    if not value:
        raise ConfigError(name, "required but not set")
    return value


def _optional(env: Mapping[str, str], name: str) -> str | None:
    value = env.get(name, "").strip()
    return value or None


def _policy(text: str) -> RetryPolicy:
    try:
        return RetryPolicy.from_json(text)
    except PolicyError as exc:
        raise ConfigError(ENV_POLICY, str(exc)) from exc


def _sqs_arn(env: Mapping[str, str], name: str) -> str:
    value = _required(env, name)
    if not _SQS_ARN.match(value):
        raise ConfigError(
            name, f"must be an SQS queue ARN (arn:aws:sqs:<region>:<account>:<name>), got {value!r}"
        )
    return value


def _queue_url(env: Mapping[str, str], name: str) -> str:
    value = _required(env, name)
    parts = urlsplit(value)
    path = parts.path.strip("/").split("/")
    # http is allowed for the local emulator on 127.0.0.1.
    if (
        parts.scheme not in ("https", "http")
        or not parts.netloc
        or len(path) != 2
        or not path[0].isdigit()
        or not _QUEUE_NAME.match(path[1])
    ):
        raise ConfigError(name, f"must be an SQS queue URL (https://<host>/<account>/<name>), got {value!r}")
    return value


def _max_bytes(env: Mapping[str, str], name: str) -> int:
    """A queue's maximum message size; 0 when unset (QueueTargets fills in the default)."""
    raw = _optional(env, name)
    if raw is None:
        return 0
    try:
        value = int(raw)
    except ValueError:
        raise ConfigError(name, f"must be an integer, got {raw!r}") from None
    if not _MIN_MESSAGE_BYTES <= value <= _MAX_MESSAGE_BYTES:
        raise ConfigError(name, f"must be between {_MIN_MESSAGE_BYTES} and {_MAX_MESSAGE_BYTES}, got {value}")
    return value


def _clock(env: Mapping[str, str]) -> Clock:
    scale_raw = _optional(env, ENV_CLOCK_SCALE)
    epoch_raw = _optional(env, ENV_CLOCK_EPOCH)
    if scale_raw is None:
        if epoch_raw is not None:
            raise ConfigError(ENV_CLOCK_SCALE, f"required when {ENV_CLOCK_EPOCH} is set")
        return SystemClock()
    if epoch_raw is None:
        raise ConfigError(ENV_CLOCK_EPOCH, f"required when {ENV_CLOCK_SCALE} is set")
    scale = _finite(ENV_CLOCK_SCALE, scale_raw)
    if scale <= 0:
        raise ConfigError(ENV_CLOCK_SCALE, f"must be > 0, got {scale_raw!r}")
    return ScaledClock(epoch=_finite(ENV_CLOCK_EPOCH, epoch_raw), scale=scale)


def _finite(name: str, raw: str) -> float:
    try:
        value = float(raw)
    except ValueError:
        raise ConfigError(name, f"must be a number, got {raw!r}") from None
    if not math.isfinite(value):
        raise ConfigError(name, f"must be a finite number, got {raw!r}")
    return value
