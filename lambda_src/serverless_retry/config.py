"""Consumer settings, read from the environment the Terraform module sets, validated at cold start.

Every problem raises ``ConfigError(variable, problem)`` so the function's first log line names the
variable to fix.
"""

from __future__ import annotations

import importlib
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal, cast, get_args

from serverless_retry import environment
from serverless_retry.clock import Clock, SystemClock
from serverless_retry.environment import (
    DEFAULT_MAX_MESSAGE_BYTES,
    ENV_CLOCK_EPOCH,
    ENV_CLOCK_SCALE,
    ENV_DLQ_ARN,
    ENV_EXHAUSTED_MAX_MESSAGE_BYTES,
    ENV_EXHAUSTED_QUEUE_URL,
    ENV_POLICY,
    ENV_SCHEDULE_GROUP,
    ENV_SCHEDULER_ROLE_ARN,
    optional,
    required,
)
from serverless_retry.errors import ConfigError
from serverless_retry.message import Processor
from serverless_retry.policy import SQS_MAX_DELAY_SECONDS, RetryPolicy
from serverless_retry.regex import LazyPattern

if TYPE_CHECKING:
    from serverless_retry.payload_pointer import PayloadTarget

__all__ = [
    "DEFAULT_MAX_MESSAGE_BYTES",
    "DEFAULT_RETENTION_SECONDS",
    "ENV_CLAIMS_TABLE",
    "ENV_CLOCK_EPOCH",
    "ENV_CLOCK_SCALE",
    "ENV_DLQ_ARN",
    "ENV_EXHAUSTED_MAX_MESSAGE_BYTES",
    "ENV_EXHAUSTED_QUEUE_URL",
    "ENV_FIFO_ORDER",
    "ENV_IDEMPOTENCY_TABLE",
    "ENV_MAX_MESSAGE_BYTES",
    "ENV_POLICY",
    "ENV_PROCESSOR",
    "ENV_QUEUE_ARN",
    "ENV_QUEUE_RETENTION_SECONDS",
    "ENV_QUEUE_URL",
    "ENV_SCHEDULER_ROLE_ARN",
    "ENV_SCHEDULE_GROUP",
    "ENV_VISIBILITY_TIMEOUT_SECONDS",
    "FIFO_ORDERS",
    "ConsumerSettings",
    "FifoOrder",
    "QueueTargets",
    "load_processor",
    "needs_scheduler",
]

# The consumer's own; the names it shares with the self-healing functions are environment's.
ENV_PROCESSOR = "SERVERLESS_RETRY_PROCESSOR"
ENV_QUEUE_URL = "SERVERLESS_RETRY_QUEUE_URL"
ENV_QUEUE_ARN = "SERVERLESS_RETRY_QUEUE_ARN"
ENV_MAX_MESSAGE_BYTES = "SERVERLESS_RETRY_MAX_MESSAGE_BYTES"
ENV_IDEMPOTENCY_TABLE = "SERVERLESS_RETRY_IDEMPOTENCY_TABLE"
ENV_CLAIMS_TABLE = "SERVERLESS_RETRY_CLAIMS_TABLE"
ENV_VISIBILITY_TIMEOUT_SECONDS = "SERVERLESS_RETRY_VISIBILITY_TIMEOUT_SECONDS"
ENV_FIFO_ORDER = "SERVERLESS_RETRY_FIFO_ORDER"
ENV_QUEUE_RETENTION_SECONDS = "SERVERLESS_RETRY_QUEUE_RETENTION_SECONDS"

FifoOrder = Literal["ordered", "unordered"]
FIFO_ORDERS: tuple[FifoOrder, ...] = get_args(FifoOrder)
# SQS's MessageRetentionPeriod: 60 s .. 14 days, 4 days when not set.
DEFAULT_RETENTION_SECONDS = 345_600
_MIN_RETENTION_SECONDS = 60
_MAX_RETENTION_SECONDS = 1_209_600
_MAX_VISIBILITY_TIMEOUT_SECONDS = 43_200

_DOTTED = r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*"
_PROCESSOR = re.compile(rf"^(?P<module>{_DOTTED}):(?P<attr>{_DOTTED})$")
_TABLE_NAME = LazyPattern(r"^[A-Za-z0-9_.-]{3,255}$")  # compiled on first use: only with a table


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
    # FIFO sources only: "ordered" retries a failed message in place and holds back the rest of its
    # group; "unordered" sends the retry out of its group (through the Scheduler).
    fifo_order: FifoOrder = "ordered"
    retention_seconds: int = DEFAULT_RETENTION_SECONDS  # the source queue's MessageRetentionPeriod
    # The source queue's VisibilityTimeout: how long a claim protects its owner (claims.lease_seconds).
    # None: read once from the queue when a claim first needs it.
    visibility_timeout_seconds: int | None = None
    # The archive's bucket and prefix: a final envelope too large for the retry-exhausted queue goes
    # there whole, behind a pointer that keeps its reason (payload_pointer). None: framed instead.
    payload_target: PayloadTarget | None = None

    def __post_init__(self) -> None:
        if not self.exhausted_max_message_bytes:
            object.__setattr__(self, "exhausted_max_message_bytes", self.max_message_bytes)
        if self.dlq_arn.endswith(".fifo"):
            # EventBridge Scheduler takes only a standard queue as a schedule's dead-letter target.
            raise ValueError(
                f"dlq_arn must be a standard queue (schedules dead-letter there), got {self.dlq_arn}"
            )
        if self.fifo_order not in FIFO_ORDERS:
            raise ValueError(f"fifo_order must be one of {', '.join(FIFO_ORDERS)}, got {self.fifo_order!r}")
        if not _MIN_RETENTION_SECONDS <= self.retention_seconds <= _MAX_RETENTION_SECONDS:
            raise ValueError(f"retention_seconds must be 60..1209600, got {self.retention_seconds}")

    @property
    def source_is_fifo(self) -> bool:
        return self.queue_arn.endswith(".fifo")

    @property
    def in_place(self) -> bool:
        """Retries keep the very message (visibility timeout), attempts counted by SQS receives."""
        return self.source_is_fifo and self.fifo_order == "ordered"

    @property
    def exhausted_is_fifo(self) -> bool:
        return self.exhausted_queue_url.endswith(".fifo")


@dataclass(frozen=True)
class ConsumerSettings:
    """Everything the consumer is built from: read and validated from the environment by ``from_env``."""

    processor: str  # "module:function"; import it with load_processor()
    policy: RetryPolicy
    targets: QueueTargets
    clock: Clock = field(default_factory=SystemClock)
    idempotency_table: str | None = None  # Powertools idempotency of the processor (opt-in)
    claims_table: str | None = None  # one retry chain per message (the module's default)

    @classmethod
    def from_env(
        cls, environ: Mapping[str, str] | None = None, *, processor_required: bool = True
    ) -> ConsumerSettings:
        """``processor_required=False``: the caller passes its processor itself (``RetryingProcessor``),
        so ``SERVERLESS_RETRY_PROCESSOR`` may be unset (``processor`` is then "")."""
        env = os.environ if environ is None else environ
        processor = required(env, ENV_PROCESSOR) if processor_required else optional(env, ENV_PROCESSOR) or ""
        if processor and not _PROCESSOR.match(processor):
            raise ConfigError(ENV_PROCESSOR, f"must be 'module:function', got {processor!r}")
        policy = environment.policy(required(env, ENV_POLICY), ENV_POLICY)

        queue_arn = environment.sqs_arn(env, ENV_QUEUE_ARN)
        queue_url = environment.queue_url(env, ENV_QUEUE_URL)
        arn_name = queue_arn.rsplit(":", 1)[1]
        if queue_url.rsplit("/", 1)[1] != arn_name:
            raise ConfigError(
                ENV_QUEUE_URL,
                f"names queue {queue_url.rsplit('/', 1)[1]!r} but {ENV_QUEUE_ARN} is {arn_name!r}",
            )
        exhausted_url = environment.queue_url(env, ENV_EXHAUSTED_QUEUE_URL)
        dlq_arn = environment.schedule_dlq_arn(env, ENV_DLQ_ARN)
        fifo_order = _fifo_order(env)
        if (
            queue_arn.endswith(".fifo")
            and fifo_order == "ordered"
            and policy.transport not in ("auto", "visibility")
        ):
            raise ConfigError(
                ENV_POLICY,
                f"transport {policy.transport!r} sends a retry out of its message group, but "
                f"{ENV_FIFO_ORDER} is 'ordered' (retries stay in place): use transport 'auto' or "
                "'visibility', or set fifo_order to 'unordered'",
            )

        group = optional(env, ENV_SCHEDULE_GROUP)
        role = optional(env, ENV_SCHEDULER_ROLE_ARN)
        max_bytes = environment.message_bytes(env, ENV_MAX_MESSAGE_BYTES, DEFAULT_MAX_MESSAGE_BYTES)
        targets = QueueTargets(
            queue_url=queue_url,
            queue_arn=queue_arn,
            exhausted_queue_url=exhausted_url,
            dlq_arn=dlq_arn,
            schedule_group=None if group is None else environment.schedule_group(group, ENV_SCHEDULE_GROUP),
            scheduler_role_arn=None if role is None else environment.role_arn(role, ENV_SCHEDULER_ROLE_ARN),
            max_message_bytes=max_bytes,
            exhausted_max_message_bytes=environment.message_bytes(
                env, ENV_EXHAUSTED_MAX_MESSAGE_BYTES, max_bytes
            ),
            fifo_order=fifo_order,
            retention_seconds=_retention(env),
            visibility_timeout_seconds=_visibility_timeout(env),
            payload_target=_payload_target(env),
        )
        if targets.exhausted_max_message_bytes < targets.max_message_bytes:
            raise ConfigError(
                ENV_EXHAUSTED_MAX_MESSAGE_BYTES,
                f"must be at least {ENV_MAX_MESSAGE_BYTES} ({targets.max_message_bytes}): the "
                f"retry-exhausted queue takes the source's messages plus their outcome and reason, "
                f"got {targets.exhausted_max_message_bytes}",
            )
        if needs_scheduler(policy, fifo=targets.source_is_fifo, fifo_order=targets.fifo_order):
            why = (
                "the queue is FIFO (no per-message delay), so retries go through EventBridge Scheduler"
                if targets.source_is_fifo
                else "the retry policy can delay longer than SQS's 900 s, so retries need EventBridge Scheduler"
            )
            if targets.schedule_group is None:
                raise ConfigError(ENV_SCHEDULE_GROUP, f"required: {why}")
            if targets.scheduler_role_arn is None:
                raise ConfigError(ENV_SCHEDULER_ROLE_ARN, f"required: {why}")

        table = _table(env, ENV_IDEMPOTENCY_TABLE)
        return cls(
            processor=processor,
            policy=policy,
            targets=targets,
            clock=environment.clock(env),
            idempotency_table=table,
            # Before 0.2.0 the claims lived in the idempotency table: a deployment that sets only that
            # one keeps its single chain per message.
            claims_table=_table(env, ENV_CLAIMS_TABLE) or table,
        )

    def load_processor(self) -> Processor:
        return load_processor(self.processor)


def _payload_target(env: Mapping[str, str]) -> PayloadTarget | None:
    location = environment.archive_location(env)
    if location is None:
        return None
    from serverless_retry.payload_pointer import PayloadTarget

    return PayloadTarget(*location)


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


def needs_scheduler(policy: RetryPolicy, *, fifo: bool, fifo_order: FifoOrder = "unordered") -> bool:
    """Whether any decision of this policy can pick the Scheduler transport. (When the Scheduler
    refuses a call, the consumer falls back to SQS delay hops; that fallback needs no Scheduler.)"""
    if fifo and fifo_order == "ordered":
        return False  # every retry stays in place (visibility timeout)
    if policy.transport in ("sqs-hops", "visibility"):
        return False
    if policy.transport == "sqs-delay":
        # Forced SQS delays are clamped to 900 s, but a FIFO queue has no per-message delay at all.
        return fifo
    if policy.transport == "scheduler" or fifo:
        return True
    # auto: every delay (Retry-After included) is capped by the backoff in force.
    caps = [policy.backoff.max_seconds] + [r.backoff.max_seconds for r in policy.rules if r.backoff]
    return max(caps) > SQS_MAX_DELAY_SECONDS


def _fifo_order(env: Mapping[str, str]) -> FifoOrder:
    raw = optional(env, ENV_FIFO_ORDER) or "ordered"
    if raw not in FIFO_ORDERS:
        raise ConfigError(ENV_FIFO_ORDER, f"must be one of {', '.join(FIFO_ORDERS)}, got {raw!r}")
    return raw


def _table(env: Mapping[str, str], name: str) -> str | None:
    table = optional(env, name)
    if table is not None and not _TABLE_NAME.match(table):
        raise ConfigError(name, f"not a DynamoDB table name: {table!r}")
    return table


def _visibility_timeout(env: Mapping[str, str]) -> int | None:
    raw = optional(env, ENV_VISIBILITY_TIMEOUT_SECONDS)
    if raw is None:
        return None
    try:
        value = int(raw)
    except ValueError:
        raise ConfigError(ENV_VISIBILITY_TIMEOUT_SECONDS, f"must be an integer, got {raw!r}") from None
    if not 0 <= value <= _MAX_VISIBILITY_TIMEOUT_SECONDS:
        raise ConfigError(
            ENV_VISIBILITY_TIMEOUT_SECONDS,
            f"must be the source queue's VisibilityTimeout, 0-{_MAX_VISIBILITY_TIMEOUT_SECONDS} seconds, "
            f"got {value}",
        )
    return value


def _retention(env: Mapping[str, str]) -> int:
    raw = optional(env, ENV_QUEUE_RETENTION_SECONDS)
    if raw is None:
        return DEFAULT_RETENTION_SECONDS
    try:
        value = int(raw)
    except ValueError:
        raise ConfigError(ENV_QUEUE_RETENTION_SECONDS, f"must be an integer, got {raw!r}") from None
    if not _MIN_RETENTION_SECONDS <= value <= _MAX_RETENTION_SECONDS:
        raise ConfigError(
            ENV_QUEUE_RETENTION_SECONDS,
            f"must be the source queue's MessageRetentionPeriod, {_MIN_RETENTION_SECONDS}-"
            f"{_MAX_RETENTION_SECONDS} seconds, got {value}",
        )
    return value
