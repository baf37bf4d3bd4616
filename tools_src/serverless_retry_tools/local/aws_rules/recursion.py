"""Lambda's recursive loop detection, as pure functions: which chain of requests an invocation belongs
to, and whether Lambda would stop it.

What AWS documents (Lambda developer guide, "Use Lambda recursive loop detection to prevent infinite
loops"; API reference, "PutFunctionRecursionConfig"; AWS Compute Blog, "Detecting and stopping
recursive loops in AWS Lambda functions"):

- Lambda tracks a chain of requests in the X-Ray trace header (its ``Lineage`` field), which it sets
  for each invocation (``_X_AMZN_TRACE_ID``) and which a supported AWS SDK adds to every call the
  function makes (botocore: ``add_recursion_detection_header``, the ``X-Amzn-Trace-Id`` header). SQS
  keeps it with the message (the ``AWSTraceHeader`` system attribute) and Lambda's SQS poller reads
  it back, so a function that sends to the queue that invokes it stays in one chain.
- The services that carry it are Lambda, SQS, SNS and S3. A loop through any other service
  (EventBridge, EventBridge Scheduler, Pipes, DynamoDB) is not detected: those start a new chain.
- A function invoked more than 16 times in one chain has its next invocation stopped, unless its
  recursion config (PutFunctionRecursionConfig) is ``Allow``; the default is ``Terminate``. Lambda
  emits the ``RecursiveInvocationsDropped`` metric (namespace ``AWS/Lambda``). For an SQS event
  source mapping the invocation fails (RecursiveInvocationException): the message stays in the
  queue, comes back after its visibility timeout, and once its maxReceiveCount is exceeded SQS moves
  it to the queue's dead-letter queue (without one, it stays until its retention period ends).

The ``Lineage`` field here holds ``<function key>:<count>`` entries joined by ``|``: for each function
of the chain, how many times it has been invoked in it. AWS does not document the field's format;
only its effect (the count, per function, in one chain) matters to the runtime.
"""

from __future__ import annotations

import hashlib
import secrets
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar
from urllib.parse import unquote

__all__ = [
    "DROPPED_METRIC",
    "LAMBDA_NAMESPACE",
    "MAX_CHAIN_INVOCATIONS",
    "STOPPED_MESSAGE",
    "TRACE_DIR_VARIABLE",
    "Chain",
    "function_key",
    "invocation_chain",
    "split_stopped",
]

# "If your function is invoked more than 16 times in the same chain of requests, then Lambda
# automatically stops the next function invocation in that request chain."
MAX_CHAIN_INVOCATIONS = 16
LAMBDA_NAMESPACE = "AWS/Lambda"
# The directory where the runtime leaves each invocation's trace header, named by its request id,
# for the worker to set as _X_AMZN_TRACE_ID (worker.py repeats the name: it imports nothing of ours).
TRACE_DIR_VARIABLE = "SERVERLESS_RETRY_LOCAL_TRACE_DIR"
DROPPED_METRIC = "RecursiveInvocationsDropped"
# The documented meaning of Lambda's RecursiveInvocationException (botocore's service model), the
# error an SQS poller gets for a stopped invocation.
STOPPED_MESSAGE = (
    "Lambda has detected your function being invoked in a recursive loop with other Amazon Web "
    "Services resources and stopped your function's invocation."
)
M = TypeVar("M", bound=Mapping[str, Any])


def function_key(function_arn: str) -> str:
    """The function's entry in a chain's Lineage: a short digest of its unqualified ARN, so every
    version and alias of one function counts in one place."""
    unqualified = ":".join(function_arn.split(":")[:7])
    return hashlib.sha256(unqualified.encode()).hexdigest()[:8]


@dataclass(frozen=True)
class Chain:
    """One chain of requests: its X-Ray root and, per function key, its invocations so far."""

    root: str
    lineage: Mapping[str, int]

    @classmethod
    def parse(cls, header: str | None) -> Chain | None:
        """The chain an X-Ray trace header names; None for no header or one without a Root."""
        if not header:
            return None
        fields: dict[str, str] = {}
        for part in unquote(header).split(";"):
            key, sep, value = part.strip().partition("=")
            if sep:
                fields[key] = value
        if not fields.get("Root"):
            return None
        lineage: dict[str, int] = {}
        for entry in fields.get("Lineage", "").split("|"):
            key, sep, count = entry.rpartition(":")
            if sep and key and count.isdigit():
                lineage[key] = max(lineage.get(key, 0), int(count))
        return cls(fields["Root"], lineage)

    def count(self, key: str) -> int:
        return int(self.lineage.get(key, 0))

    def header(self) -> str:
        """As Lambda sets ``_X_AMZN_TRACE_ID``: Root, a fresh Parent, not sampled, the Lineage."""
        lineage = "|".join(f"{key}:{count}" for key, count in sorted(self.lineage.items()))
        text = f"Root={self.root};Parent={secrets.token_hex(8)};Sampled=0"
        return f"{text};Lineage={lineage}" if lineage else text


def _new_root(now: float) -> str:
    return f"1-{int(now):08x}-{secrets.token_hex(12)}"


def invocation_chain(headers: Iterable[str | None], function_arn: str, *, now: float) -> Chain:
    """The chain an invocation of ``function_arn`` continues, counting this invocation: the chains
    of the records it runs merged (per function, the largest count; the first record's root), or a
    new chain when none carries one. ``now`` (Unix seconds) dates a new root."""
    chains = [c for c in (Chain.parse(h) for h in headers) if c is not None]
    lineage: dict[str, int] = {}
    for chain in chains:
        for key, count in chain.lineage.items():
            lineage[key] = max(lineage.get(key, 0), count)
    key = function_key(function_arn)
    lineage[key] = lineage.get(key, 0) + 1
    return Chain(chains[0].root if chains else _new_root(now), lineage)


def split_stopped(messages: Sequence[M], function_arn: str, *, allowed: bool) -> tuple[list[M], list[M]]:
    """``messages`` (ReceiveMessage results, with system attributes) as (to invoke, stopped): a
    message whose chain has already invoked the function 16 times is stopped, unless the function's
    recursion config is Allow. Only its own invocation stops: other records of the batch run."""
    if allowed:
        return list(messages), []
    key = function_key(function_arn)
    run: list[M] = []
    stopped: list[M] = []
    for message in messages:
        chain = Chain.parse((message.get("Attributes") or {}).get("AWSTraceHeader"))
        if chain is not None and chain.count(key) >= MAX_CHAIN_INVOCATIONS:
            stopped.append(message)
        else:
            run.append(message)
    return run, stopped
