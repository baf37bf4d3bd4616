"""Reading and validating settings from the environment: one place for every function we ship.

The consumer (``config``) and the self-healing functions (``selfheal.config``) read the same kinds of
values: queue URLs and ARNs, the schedule group and role, a queue's maximum message size, a retry
policy, the local emulator's logical clock. Each reader here raises ``ConfigError(variable, problem)``
with one wording, whichever function reads it, so a cold start names the variable to fix the same way
everywhere. Pure: no AWS; ``env`` is any mapping (``os.environ`` in Lambda).

Floor: below ``config`` and ``selfheal.config`` (it knows clocks, errors and the policy, nothing more).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from serverless_retry.clock import Clock, SystemClock
from serverless_retry.errors import ConfigError, PolicyError
from serverless_retry.regex import LazyPattern

if TYPE_CHECKING:
    from serverless_retry.policy import RetryPolicy

__all__ = [
    "DEFAULT_MAX_MESSAGE_BYTES",
    "ENV_CLOCK_EPOCH",
    "ENV_CLOCK_SCALE",
    "ENV_DLQ_ARN",
    "ENV_EXHAUSTED_MAX_MESSAGE_BYTES",
    "ENV_EXHAUSTED_QUEUE_URL",
    "ENV_POLICY",
    "ENV_SCHEDULER_ROLE_ARN",
    "ENV_SCHEDULE_GROUP",
    "MAX_MESSAGE_BYTES",
    "MIN_MESSAGE_BYTES",
    "archive_location",
    "clock",
    "message_bytes",
    "optional",
    "policy",
    "queue_url",
    "required",
    "role_arn",
    "schedule_dlq_arn",
    "schedule_group",
    "sqs_arn",
]

ENV_CLOCK_SCALE = "SERVERLESS_RETRY_CLOCK_SCALE"
ENV_CLOCK_EPOCH = "SERVERLESS_RETRY_CLOCK_EPOCH"
# Read by the consumer and the self-healing functions alike (each module re-exports the ones it reads).
ENV_POLICY = "SERVERLESS_RETRY_POLICY"  # self-healing: the module-wide default policy
ENV_EXHAUSTED_QUEUE_URL = "SERVERLESS_RETRY_EXHAUSTED_QUEUE_URL"
ENV_EXHAUSTED_MAX_MESSAGE_BYTES = "SERVERLESS_RETRY_EXHAUSTED_MAX_MESSAGE_BYTES"
ENV_SCHEDULE_GROUP = "SERVERLESS_RETRY_SCHEDULE_GROUP"
ENV_SCHEDULER_ROLE_ARN = "SERVERLESS_RETRY_SCHEDULER_ROLE_ARN"
ENV_DLQ_ARN = "SERVERLESS_RETRY_DLQ_ARN"  # dead-letter queue of every retry schedule (a standard queue)
# The archive's bucket and key prefix: the archiver writes there, the consumer its claim-check payloads.
ENV_ARCHIVE_BUCKET = "SERVERLESS_RETRY_ARCHIVE_BUCKET"
ENV_ARCHIVE_PREFIX = "SERVERLESS_RETRY_ARCHIVE_PREFIX"
DEFAULT_ARCHIVE_PREFIX = "serverless-retry/"

DEFAULT_MAX_MESSAGE_BYTES = 262_144
# SQS accepts 1 KiB .. 1 MiB as a queue's MaximumMessageSize.
MIN_MESSAGE_BYTES = 1_024
MAX_MESSAGE_BYTES = 1_048_576

# SQS queue names: up to 80 characters of A-Z a-z 0-9 - _, a FIFO queue's ending in ".fifo" (counted).
_QUEUE_NAME = r"(?=[A-Za-z0-9_.-]{1,80}$)[A-Za-z0-9_-]+(?:\.fifo)?"
_QUEUE_NAME_RE = re.compile(rf"^{_QUEUE_NAME}$")
_SQS_ARN = re.compile(rf"^arn:aws[a-z-]*:sqs:[a-z0-9-]+:\d{{12}}:{_QUEUE_NAME}$")
_ROLE_ARN = re.compile(r"^arn:aws[a-z-]*:iam::\d{12}:role/[\w+=,.@/-]{1,512}$")
_SCHEDULE_GROUP = re.compile(r"^[0-9A-Za-z_.-]{1,64}$")
# General purpose bucket names: 3-63 lowercase letters, digits, dots and hyphens, a letter or digit at
# each end (S3's bucket naming rules).
# (compiled on first use: a function without an archive never reads one)
_BUCKET = LazyPattern(r"^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$")


def required(env: Mapping[str, str], name: str) -> str:
    value = env.get(name, "").strip()
    if not value:
        raise ConfigError(name, "required but not set")
    return value


def optional(env: Mapping[str, str], name: str) -> str | None:
    value = env.get(name, "").strip()
    return value or None


def _standard_only(name: str, value: str) -> None:
    raise ConfigError(name, f"must be a standard SQS queue, not a FIFO queue, got {value!r}")


def queue_url(env: Mapping[str, str], name: str, *, fifo: bool = True) -> str:
    """A required SQS queue URL; ``fifo=False`` refuses a FIFO queue."""
    value = required(env, name)
    parts = urlsplit(value)
    path = parts.path.strip("/").split("/")
    # http is allowed for the local emulator on 127.0.0.1.
    if (
        parts.scheme not in ("https", "http")
        or not parts.netloc
        or len(path) != 2
        or not path[0].isdigit()
        or not _QUEUE_NAME_RE.match(path[1])
    ):
        raise ConfigError(name, f"must be an SQS queue URL (https://<host>/<account>/<name>), got {value!r}")
    if not fifo and value.endswith(".fifo"):
        _standard_only(name, value)
    return value


def sqs_arn(env: Mapping[str, str], name: str) -> str:
    """A required SQS queue ARN (standard or FIFO)."""
    value = required(env, name)
    if not _SQS_ARN.match(value):
        raise ConfigError(
            name, f"must be an SQS queue ARN (arn:aws:sqs:<region>:<account>:<name>), got {value!r}"
        )
    return value


def schedule_dlq_arn(env: Mapping[str, str], name: str) -> str:
    """The dead-letter queue of retry schedules: a standard queue (the Scheduler takes no FIFO DLQ)."""
    value = sqs_arn(env, name)
    if value.endswith(".fifo"):
        raise ConfigError(
            name,
            "must be a standard SQS queue: it is the dead-letter target of retry schedules, and EventBridge "
            "Scheduler takes no FIFO queue there (for a FIFO source, name a standard <name>-schedule-dlq)",
        )
    return value


def schedule_group(value: str, name: str) -> str:
    if not _SCHEDULE_GROUP.match(value):
        raise ConfigError(name, "must be 1-64 characters of 0-9 A-Z a-z - _ .")
    return value


def role_arn(value: str, name: str) -> str:
    if not _ROLE_ARN.match(value):
        raise ConfigError(name, "must be an IAM role ARN (arn:aws:iam::<account>:role/<name>)")
    return value


def message_bytes(env: Mapping[str, str], name: str, default: int) -> int:
    """A queue's MaximumMessageSize in bytes; ``default`` when unset."""
    raw = optional(env, name)
    if raw is None:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ConfigError(name, f"must be an integer, got {raw!r}") from None
    if not MIN_MESSAGE_BYTES <= value <= MAX_MESSAGE_BYTES:
        raise ConfigError(name, f"must be between {MIN_MESSAGE_BYTES} and {MAX_MESSAGE_BYTES}, got {value}")
    return value


def policy(value: object, name: str, where: str = "") -> RetryPolicy:
    """A retry policy given as JSON text or as an already decoded object; ``where`` prefixes the
    problem when the policy sits inside a larger variable (e.g. ``sources['orders-fn'].policy: ``)."""
    from serverless_retry.policy import RetryPolicy  # only the functions that read a policy load it

    try:
        if isinstance(value, str):
            return RetryPolicy.from_json(value)
        return RetryPolicy.from_dict(value)  # type: ignore[arg-type]
    except PolicyError as exc:
        raise ConfigError(name, f"{where}{exc}") from exc


def clock(env: Mapping[str, str]) -> Clock:
    """The system clock, or under the local emulator the logical clock both variables describe."""
    scale_raw = optional(env, ENV_CLOCK_SCALE)
    epoch_raw = optional(env, ENV_CLOCK_EPOCH)
    if scale_raw is None:
        if epoch_raw is not None:
            raise ConfigError(ENV_CLOCK_SCALE, f"required when {ENV_CLOCK_EPOCH} is set")
        return SystemClock()
    if epoch_raw is None:
        raise ConfigError(ENV_CLOCK_EPOCH, f"required when {ENV_CLOCK_SCALE} is set")
    scale = _finite(ENV_CLOCK_SCALE, scale_raw)
    if scale <= 0:
        raise ConfigError(ENV_CLOCK_SCALE, f"must be > 0, got {scale_raw!r}")
    from serverless_retry.scaled_clock import ScaledClock  # the local emulator's only: not on AWS

    return ScaledClock(epoch=_finite(ENV_CLOCK_EPOCH, epoch_raw), scale=scale)


def _finite(name: str, raw: str) -> float:
    try:
        value = float(raw)
    except ValueError:
        raise ConfigError(name, f"must be a number, got {raw!r}") from None
    if not math.isfinite(value):
        raise ConfigError(name, f"must be a finite number, got {raw!r}")
    return value


def archive_location(env: Mapping[str, str]) -> tuple[str, str] | None:
    """(bucket, prefix) of the archive, or None when ``SERVERLESS_RETRY_ARCHIVE_BUCKET`` is not set."""
    bucket = optional(env, ENV_ARCHIVE_BUCKET)
    if bucket is None:
        return None
    if not _BUCKET.match(bucket) or ".." in bucket:
        raise ConfigError(
            ENV_ARCHIVE_BUCKET, f"must be an S3 bucket name (3-63 of a-z 0-9 . -), got {bucket!r}"
        )
    prefix = env.get(ENV_ARCHIVE_PREFIX, DEFAULT_ARCHIVE_PREFIX).strip()
    if prefix.startswith("/") or (prefix and not prefix.endswith("/")) or len(prefix) > 200:
        raise ConfigError(
            ENV_ARCHIVE_PREFIX,
            f"must be empty or end in '/', without a leading '/' (at most 200), got {prefix!r}",
        )
    return bucket, prefix
