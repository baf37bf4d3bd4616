"""Self-healing async Lambdas (pattern 2): failure records in, bus events out, redrives with backoff.

The flow (docs/self-healing-contract.md is the full contract):

1. A source function (triggered by SNS, an EventBridge rule, or a direct async invoke) fails; its
   on-failure destination puts a Lambda destination record on the failure queue.
2. A Pipe hands batches of those SQS records to the **enrichment** (``enrichment.py``): one bus event
   per record, ``detail = {"payload": <the event as it first arrived>, "meta": FailureMeta}``, every
   meta field always present with a fixed type, so the bus rules are exhaustive and disjoint. It never
   raises on a bad record (``InvalidFailureRecord``); an event too large for the bus goes straight to
   the retry-exhausted queue.
3. A retry rule per source (error type not in the do-not-retry list, ``retry_count`` under the
   source's limit) invokes the **redrive** (``redrive.py``); every other event goes to the
   retry-exhausted queue as an ``ExhaustedRecord``.
4. The redrive asks the source's retry policy for the delay and re-delivers the original event to
   the function that failed (an async invoke now, or a one-time Scheduler schedule later), or
   re-publishes it to the topic. Retry state rides as metadata (``state.py``), never in the payload.
5. In the user's function, ``@self_healing`` (``decorator.py``) takes the state off again and passes
   the event exactly as it first arrived plus a ``RetryContext``.

Floor: above ``delivery`` (it reuses the Scheduler conventions and the policy), beside ``consumer``;
only ``handlers`` import it. Pure modules here (types, records, state, enrichment planning, redrive
planning) import no boto3.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from serverless_retry.selfheal.state import InvalidRetryState, attach, read
from serverless_retry.selfheal.types import (
    ALWAYS_EXHAUSTED_ERROR_TYPES,
    BUS_DETAIL_TYPE,
    BUS_SOURCE,
    ERROR_INVALID_RECORD,
    ERROR_MISSING_TYPE,
    RETRY_STATE_KEY,
    BusEvent,
    DestinationRecord,
    ExhaustedOutcome,
    ExhaustedRecord,
    FailureDetail,
    FailureMeta,
    PipeRecord,
    RedriveTo,
    RetryState,
    SourceConfig,
    SourceType,
)

if TYPE_CHECKING:
    from serverless_retry.selfheal.decorator import read_retry_state, self_healing

__all__ = [
    "ALWAYS_EXHAUSTED_ERROR_TYPES",
    "BUS_DETAIL_TYPE",
    "BUS_SOURCE",
    "ERROR_INVALID_RECORD",
    "ERROR_MISSING_TYPE",
    "RETRY_STATE_KEY",
    "BusEvent",
    "DestinationRecord",
    "ExhaustedOutcome",
    "ExhaustedRecord",
    "FailureDetail",
    "FailureMeta",
    "InvalidRetryState",
    "PipeRecord",
    "RedriveTo",
    "RetryState",
    "SourceConfig",
    "SourceType",
    "attach",
    "read",
    "read_retry_state",
    "self_healing",
]


def __getattr__(name: str) -> object:
    # The decorator runs in the user's functions, not in the pattern's own (enrichment, redrive): it
    # is imported on first use, so their cold start does not pay for it.
    if name in ("read_retry_state", "self_healing"):
        from serverless_retry.selfheal import decorator

        return getattr(decorator, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
