"""Wire types and constants of pattern 2 (self-healing async Lambdas): the contract that the
Terraform module (``modules/self-healing``) and the local runtime are built against.

docs/self-healing-contract.md says the same in prose; a test checks the two agree on every name.
"""

from __future__ import annotations

from typing import Any, Literal, NotRequired, Required, TypedDict

from serverless_retry.environment import (
    ENV_DLQ_ARN,
    ENV_EXHAUSTED_MAX_MESSAGE_BYTES,
    ENV_EXHAUSTED_QUEUE_URL,
    ENV_POLICY,
    ENV_SCHEDULE_GROUP,
    ENV_SCHEDULER_ROLE_ARN,
)

__all__ = [
    "ALWAYS_EXHAUSTED_ERROR_TYPES",
    "ASYNC_INVOKE_MAX_BYTES",
    "BUS_DETAIL_TYPE",
    "BUS_SOURCE",
    "ENV_DLQ_ARN",
    "ENV_EXHAUSTED_MAX_MESSAGE_BYTES",
    "ENV_EXHAUSTED_QUEUE_URL",
    "ENV_FAILURE_QUEUE_URL",
    "ENV_POLICY",
    "ENV_REDRIVE_TO",
    "ENV_SCHEDULER_ROLE_ARN",
    "ENV_SCHEDULE_GROUP",
    "ENV_SOURCES",
    "ERROR_INVALID_RECORD",
    "ERROR_MISSING_TYPE",
    "RETRY_STATE_KEY",
    "S3_RECORD_PREFIX",
    "BusEvent",
    "DestinationRecord",
    "ExhaustedOutcome",
    "ExhaustedRecord",
    "FailureDetail",
    "FailureMeta",
    "PayloadRef",
    "PipeRecord",
    "RedriveTo",
    "RetryState",
    "SnsMessageAttribute",
    "SourceConfig",
    "SourceType",
]

# --- the bus -----------------------------------------------------------------------------------------
# The pipe's target parameters (EventBridgeEventBusParameters) set these on every event it puts.
BUS_SOURCE = "serverless-retry.self-healing"
BUS_DETAIL_TYPE = "serverless-retry failure"

# --- error types that never retry --------------------------------------------------------------------
# The enrichment writes these itself; the module adds them to every do-not-retry list, so the rules
# send them to the retry-exhausted queue whatever the user configured.
ERROR_INVALID_RECORD = "InvalidFailureRecord"  # the failure queue held something we cannot read
ERROR_MISSING_TYPE = "MissingErrorType"  # the record names no error type (e.g. EventAgeExceeded, a crash)
ALWAYS_EXHAUSTED_ERROR_TYPES: tuple[str, ...] = (ERROR_INVALID_RECORD, ERROR_MISSING_TYPE)

# Lambda's async Invoke takes 1 MB (1,048,576 bytes) since October 2025 (256 KB before): a payload the
# redrive read back from S3 (``PayloadRef``) may be that large.
ASYNC_INVOKE_MAX_BYTES = 1_048_576

# --- failure records in S3 ---------------------------------------------------------------------------
# A source whose on-failure destination is an S3 bucket: Lambda writes each invocation record as one
# JSON object under this fixed prefix (aws/lambda/async/<function-name>/YYYY/MM/DD/YYYY-MM-DDTHH.MM.SS-
# <uuid>), and the bucket's ObjectCreated notification puts a small S3 event on the failure queue.
S3_RECORD_PREFIX = "aws/lambda/async/"

# --- retry state (metadata only, never inside the business payload) ----------------------------------
# SNS: a message attribute of this name; EventBridge: a top-level key of this name outside "detail";
# a raw direct invoke: {"serverless_retry": <state>, "payload": <original event>}. The name is reserved.
RETRY_STATE_KEY = "serverless_retry"

# --- environment -------------------------------------------------------------------------------------
# Shared with the consumer, declared in serverless_retry.environment: ENV_EXHAUSTED_QUEUE_URL and
# ENV_EXHAUSTED_MAX_MESSAGE_BYTES (enrichment + redrive), ENV_POLICY (redrive: the module-wide default
# policy), ENV_SCHEDULE_GROUP, ENV_SCHEDULER_ROLE_ARN, ENV_DLQ_ARN (redrive: dead-letter queue of every
# schedule, a standard queue). The self-healing functions' own:
ENV_FAILURE_QUEUE_URL = "SERVERLESS_RETRY_FAILURE_QUEUE_URL"  # enrichment (defers batch overflow to it)
ENV_SOURCES = "SERVERLESS_RETRY_SOURCES"  # redrive
ENV_REDRIVE_TO = "SERVERLESS_RETRY_REDRIVE_TO"  # redrive: "function" (default) | "topic"

SourceType = Literal["sns", "eventbridge", "direct", "unknown"]
RedriveTo = Literal["function", "topic"]
ExhaustedOutcome = Literal[
    "exhausted",  # retry budget spent (rule: retry_count >= limit; or the policy's own budget / max age)
    "non-retryable",  # error type in the do-not-retry list, MissingErrorType, or a policy rule retry=false
    "unknown-source",  # the failed function is not one of the module's sources
    "invalid-failure-record",  # ERROR_INVALID_RECORD: the raw record is kept as the payload
    "too-large-for-bus",  # the event would not fit a PutEvents entry: sent here by the enrichment
    "too-large-to-retry",  # the redrive could not carry it (async invoke / SNS publish size limits)
]


# --- input: what Lambda writes to the failure queue (on-failure destination record) ------------------
class RequestContext(TypedDict, total=False):
    requestId: str
    functionArn: str  # qualified: arn:aws:lambda:<region>:<account>:function:<name>:$LATEST
    condition: str  # RetriesExhausted | EventAgeExceeded | ...
    approximateInvokeCount: int


class ResponseContext(TypedDict, total=False):
    statusCode: int
    executedVersion: str
    functionError: str  # Unhandled | Handled


class ErrorPayload(TypedDict, total=False):
    errorType: str
    errorMessage: str
    stackTrace: list[str]
    requestId: str


class DestinationRecord(TypedDict, total=False):
    version: str  # "1.0"
    timestamp: str  # 2026-11-30T10:00:00.000Z
    requestContext: RequestContext
    requestPayload: Any  # the event the function was invoked with (incl. our retry state)
    responseContext: ResponseContext  # absent when the event expired before any invocation
    responsePayload: ErrorPayload | Any  # absent (or null) when the event expired unrun


class PipeRecord(TypedDict, total=False):
    """One SQS record of a pipe batch (the enrichment's input is a JSON array of these)."""

    messageId: str
    receiptHandle: str
    body: str  # a DestinationRecord as JSON
    attributes: dict[str, str]
    messageAttributes: dict[str, Any]
    md5OfBody: str
    eventSource: str  # aws:sqs
    eventSourceARN: str
    awsRegion: str


# --- retry state -------------------------------------------------------------------------------------
class RetryState(TypedDict):
    """Travels with a redriven event as metadata. ``attempt`` is the delivery it rides on (>= 2)."""

    v: int  # 1
    id: str  # the retry id: stable across attempts (SNS MessageId / EventBridge id / first requestId)
    attempt: int
    first_failed_at: str  # ISO-8601 UTC, whole seconds: 2026-11-30T10:00:00Z
    previous_delay_seconds: int  # the delay that preceded this attempt


class SnsMessageAttribute(TypedDict):
    """A message attribute as Lambda's SNS event carries it."""

    Type: str  # String | String.Array | Number | Binary
    Value: str  # Binary: base64 text


# --- output of the enrichment: the `detail` of one bus event -----------------------------------------
class FailureMeta(TypedDict):
    """Every field is always present with the stated type, so the bus rules can be exhaustive."""

    v: int  # 1
    source_type: SourceType
    source: str  # topic ARN (sns) | the event's "source" (eventbridge) | function ARN (direct) | ""
    function_arn: str  # unqualified; "unknown" when the record names none
    function_name: str  # what the rules match on; "unknown" when the record names none
    function_qualifier: str  # "$LATEST", a version or an alias; "" when unqualified
    condition: str  # requestContext.condition; "" when missing
    error_type: str  # never empty: errorType, or ERROR_MISSING_TYPE / ERROR_INVALID_RECORD
    error_message: str  # cut to 512 characters; "" when none
    stack_trace: list[str]  # the last frames; [] when none or trimmed away
    response: Any  # responsePayload without errorType/errorMessage/stackTrace; null when none/trimmed
    retry_count: int  # redrives so far: 0 on a first failure (attempt - 1)
    attempt: int  # the attempt that failed: 1 = the first delivery
    invoke_count: int  # approximateInvokeCount: Lambda's own tries within this attempt
    retry_id: str  # stable across attempts
    request_id: str  # this invocation's request id
    first_failed_at: str  # ISO-8601 UTC of the first failure's record (carried by the retry state)
    failed_at: str  # ISO-8601 UTC of this failure's record
    previous_delay_seconds: int  # the delay before this attempt (0 on a first failure)
    failure_message_id: str  # the failure queue's SQS message id
    trimmed: list[str]  # what the size guard cut: "stack_trace", "response"
    problem: str  # why ERROR_INVALID_RECORD; "" otherwise


class PayloadRef(TypedDict):
    """Where a failure record Lambda wrote to S3 is: the redrive reads the payload back through it."""

    bucket: str
    key: str
    size: int  # the object's bytes
    sha256: str  # hex digest of the object's bytes, as the enrichment read them


class FailureDetail(TypedDict):
    payload: Any  # the event exactly as it first arrived; for ERROR_INVALID_RECORD the raw SQS body;
    # null when payload_ref carries it (too large for a bus event)
    meta: FailureMeta
    payload_ref: NotRequired[PayloadRef]  # the record was read from S3: where (always set for those)


# The EventBridge event a retry rule hands the redrive function ("detail-type" is no identifier).
BusEvent = TypedDict(
    "BusEvent",
    {
        "version": str,
        "id": str,
        "detail-type": str,
        "source": str,
        "account": str,
        "time": str,
        "region": str,
        "resources": list[str],
        "detail": Required[FailureDetail],
    },
    total=False,
)


class ExhaustedRecord(TypedDict):
    """A message body in the retry-exhausted queue (rule InputTransformer, redrive and enrichment alike)."""

    outcome: ExhaustedOutcome
    reason: str
    detail: FailureDetail


# --- redrive configuration (SERVERLESS_RETRY_SOURCES values, keyed by function name) -----------------
class SourceConfig(TypedDict):
    function_arn: str  # unqualified ARN of the source function (the schedule target)
    topic_arn: NotRequired[str]  # the topic to re-publish to when redrive_to = "topic"
    policy: NotRequired[dict[str, Any]]  # this source's retry policy; absent = SERVERLESS_RETRY_POLICY
