"""What a policy costs per million messages that fail with the same error, next to the two ways a
user would otherwise wait: sleeping inside the Lambda, or a Step Functions Wait state.

Prices: us-east-1, on-demand, read on 2026-11-30 from the AWS pricing pages (aws.amazon.com/sqs/pricing,
/eventbridge/pricing, /lambda/pricing, /step-functions/pricing). Free tiers are left out: these are
the marginal costs of one more million messages. Check the pages before you rely on a figure.

| item | price | notes |
|---|---|---|
| SQS standard queue request | $0.40 per million | each 64 KB chunk of a request's payload is billed as one request; FIFO $0.50 |
| EventBridge Scheduler invocation | $1.00 per million | after 14 million free a month; payload billed in 64 KB chunks as for event buses |
| Lambda request | $0.20 per million | |
| Lambda duration | $0.0000166667 per GB-second (x86_64), $0.0000133334 (arm64) | first tier (6 / 7.5 billion GB-s a month) |
| Step Functions Standard state transition | $0.025 per 1,000 | a Task's retries count as transitions too |

The model, per message (``n`` attempts, batches of ``batch_size`` records, ``c`` = 64 KB chunks):
- serverless-retry (or native retry, transport ``native``: deliveries only, no delete, no copy; SQS's
  own move to the DLQ is not a billed request): every attempt is a delivery by the event source mapping (ReceiveMessage and
  DeleteMessage shared by the batch, one invocation shared by the batch, ``duration_ms`` of compute);
  each retry adds its transport's calls: ``sqs-delay`` one batched SendMessageBatch; ``scheduler``
  one schedule invocation plus the SendMessage it makes (CreateSchedule is not billed); ``visibility``
  one batched ChangeMessageVisibilityBatch and no delete; ``sqs-hops`` one batched send per 900 s hop,
  and per extra hop an early arrival handled without the processor (receive, invocation of
  ``hop_ms``, send, delete). A final outcome adds one batched send to the retry-exhausted queue.
- sleeping in the Lambda: one delivery, then every wait is billed compute, record after record;
  impossible when the waits exceed Lambda's 900 s timeout (shown, with the cost it would have).
- Step Functions: per message one execution of Task (invoke) + Choice per attempt, Wait per retry,
  one final state; one Lambda invocation per attempt. Starting the execution (e.g. an EventBridge
  Pipe from SQS) is left out: it only adds to that column.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

from serverless_retry_tools.attempt_rows import AttemptRow, total_wait

__all__ = [
    "LAMBDA_MAX_SECONDS",
    "PRICES",
    "PRICES_READ_ON",
    "CostLine",
    "CostModel",
    "Prices",
    "compare",
    "render",
]

PRICES_READ_ON = "2026-11-30"
LAMBDA_MAX_SECONDS = 900
HOP_SECONDS = 900  # SQS's longest DelaySeconds
CHUNK_KB = 64


@dataclass(frozen=True)
class Prices:
    """US dollars per unit, us-east-1."""

    sqs_request: float = 0.40 / 1e6
    sqs_fifo_request: float = 0.50 / 1e6
    scheduler_invocation: float = 1.00 / 1e6
    lambda_request: float = 0.20 / 1e6
    lambda_gb_second_x86: float = 0.0000166667
    lambda_gb_second_arm: float = 0.0000133334
    sfn_transition: float = 0.025 / 1000


PRICES = Prices()


@dataclass(frozen=True)
class CostModel:
    message_kb: float = 1.0  # the message as it travels (the envelope, on a retry)
    batch_size: int = 10  # the event source mapping's batch (modules/scheduled-retry default 10)
    memory_mb: int = 256  # modules/scheduled-retry default
    duration_ms: float = 100.0  # the processor's time per attempt
    hop_ms: float = 20.0  # handling an early sqs-hops arrival (no processor call)
    architecture: str = "arm64"  # modules/scheduled-retry default
    fifo: bool = False
    prices: Prices = field(default_factory=Prices)

    def __post_init__(self) -> None:
        if self.message_kb <= 0 or self.batch_size < 1 or self.memory_mb < 128 or self.duration_ms < 0:
            raise ValueError(
                "message_kb > 0, batch_size >= 1, memory_mb >= 128 and duration_ms >= 0 are required"
            )
        if self.architecture not in ("arm64", "x86_64"):
            raise ValueError(f"architecture must be arm64 or x86_64, got {self.architecture!r}")

    # -- unit costs, per message ------------------------------------------------------------------

    def chunks(self, kb: float) -> int:
        return max(1, math.ceil(kb / CHUNK_KB))

    def sqs_single(self) -> float:
        """Requests billed for one message sent or received alone."""
        return float(self.chunks(self.message_kb))

    def sqs_batched(self) -> float:
        """This message's share of the requests billed for a full batch call."""
        return self.chunks(self.message_kb * self.batch_size) / self.batch_size

    @property
    def gb(self) -> float:
        return self.memory_mb / 1024

    @property
    def sqs_price(self) -> float:
        return self.prices.sqs_fifo_request if self.fifo else self.prices.sqs_request

    @property
    def gb_second_price(self) -> float:
        return (
            self.prices.lambda_gb_second_arm
            if self.architecture == "arm64"
            else self.prices.lambda_gb_second_x86
        )


@dataclass
class CostLine:
    """Usage per message of one way of waiting, and its price per million messages."""

    name: str
    sqs_requests: float = 0.0
    scheduler_invocations: float = 0.0
    lambda_requests: float = 0.0
    lambda_gb_seconds: float = 0.0
    sfn_transitions: float = 0.0
    possible: bool = True
    note: str = ""

    def dollars(self, model: CostModel) -> dict[str, float]:
        """US dollars per million messages, by item and in total."""
        million = 1e6
        items = {
            "SQS requests": self.sqs_requests * model.sqs_price * million,
            "Scheduler invocations": self.scheduler_invocations * model.prices.scheduler_invocation * million,
            "Lambda requests": self.lambda_requests * model.prices.lambda_request * million,
            "Lambda GB-seconds": self.lambda_gb_seconds * model.gb_second_price * million,
            "Step Functions transitions": self.sfn_transitions * model.prices.sfn_transition * million,
        }
        items["total"] = sum(items.values())
        return items


def _delivery(line: CostLine, model: CostModel, *, delete: bool = True) -> None:
    line.sqs_requests += model.sqs_batched() * (2 if delete else 1)  # receive (+ delete)
    line.lambda_requests += 1 / model.batch_size
    line.lambda_gb_seconds += model.gb * model.duration_ms / 1000


def serverless_retry_cost(rows: Sequence[AttemptRow], model: CostModel) -> CostLine:
    line = CostLine("serverless-retry")
    for row in rows:
        # A visibility retry leaves the message in the queue: no delete until it is done. Native retry
        # never deletes a failing message: it reappears, and SQS itself moves it to the DLQ.
        native = row.transport == "native"
        _delivery(line, model, delete=not (row.retried and row.transport == "visibility") and not native)
        if not row.retried:
            if not native:
                line.sqs_requests += model.sqs_batched()  # the final copy to the retry-exhausted queue
            continue
        transport = row.transport or "sqs-delay"
        if transport == "native":
            continue  # the visibility timeout runs out by itself: no call at all
        if transport == "scheduler":
            line.scheduler_invocations += model.chunks(model.message_kb)
            line.sqs_requests += model.sqs_single()  # the schedule's SendMessage
        elif transport == "visibility":
            line.sqs_requests += model.sqs_batched()  # ChangeMessageVisibilityBatch
        elif transport == "sqs-hops":
            hops = row.hops or max(1, math.ceil(row.delay_seconds / HOP_SECONDS))
            line.sqs_requests += model.sqs_batched() * hops  # one send per hop
            early = hops - 1  # arrivals before the due time: re-delayed, processor not called
            line.sqs_requests += model.sqs_batched() * 2 * early  # their receive and delete
            line.lambda_requests += early / model.batch_size
            line.lambda_gb_seconds += early * model.gb * model.hop_ms / 1000
        else:  # sqs-delay
            line.sqs_requests += model.sqs_batched()
    return line


def sleeping_cost(rows: Sequence[AttemptRow], model: CostModel) -> CostLine:
    line = CostLine("sleep in Lambda")
    _delivery(line, model)  # one delivery, and the first attempt's compute
    wait = total_wait(rows)
    later_attempts = max(0, len(rows) - 1)
    line.lambda_gb_seconds += model.gb * (later_attempts * model.duration_ms / 1000 + wait)
    if rows and not rows[-1].retried:
        line.sqs_requests += model.sqs_batched()
    busy = wait + len(rows) * model.duration_ms / 1000
    if busy > LAMBDA_MAX_SECONDS:
        line.possible = False
        line.note = f"not possible: {busy:,.0f} s of waiting exceeds Lambda's {LAMBDA_MAX_SECONDS} s timeout"
    return line


def step_functions_cost(rows: Sequence[AttemptRow], model: CostModel) -> CostLine:
    line = CostLine("Step Functions Wait")
    retries = sum(1 for r in rows if r.retried)
    line.sfn_transitions = 2 * len(rows) + retries + 1  # Task + Choice per attempt, Wait per retry, end
    line.lambda_requests = float(len(rows))
    line.lambda_gb_seconds = len(rows) * model.gb * model.duration_ms / 1000
    line.sqs_requests = model.sqs_batched() * 2  # the message is picked up from SQS once
    if rows and not rows[-1].retried:
        line.sqs_requests += model.sqs_batched()
    return line


def compare(rows: Sequence[AttemptRow], model: CostModel | None = None) -> list[CostLine]:
    model = model or CostModel()
    return [serverless_retry_cost(rows, model), sleeping_cost(rows, model), step_functions_cost(rows, model)]


def hop_cost(model: CostModel) -> float:
    """Dollars per million extra sqs-hops hops: receive, a short invocation, send, delete."""
    line = CostLine("hop", sqs_requests=model.sqs_batched() * 3, lambda_requests=1 / model.batch_size)
    line.lambda_gb_seconds = model.gb * model.hop_ms / 1000
    return line.dollars(model)["total"]


def render(rows: Sequence[AttemptRow], model: CostModel | None = None) -> list[str]:
    """The cost lines for simulate's output, plain text."""
    model = model or CostModel()
    lines = compare(rows, model)
    table = [line.dollars(model) for line in lines]
    names = [line.name for line in lines]
    width = max(len(n) for n in names) + 2
    out = [
        f"cost per million messages failing like this (us-east-1 prices read {PRICES_READ_ON}; "
        f"{model.message_kb:g} KB, batch {model.batch_size}, {model.memory_mb} MB {model.architecture}, "
        f"{model.duration_ms:g} ms per attempt; free tiers left out):",
        "  " + "item".ljust(28) + "".join(n.rjust(width) for n in names),
    ]
    for item in table[0]:
        if item != "total" and all(t[item] == 0 for t in table):
            continue
        values = "".join(f"${t[item]:,.2f}".rjust(width) for t in table)
        out.append("  " + item.ljust(28) + values)
    for line in lines:
        if line.note:
            out.append(f"  {line.name}: {line.note}")
    if any(r.transport == "sqs-hops" for r in rows):
        out.append(
            f"  sqs-hops: ${hop_cost(model):,.2f} per million extra hops (a hop waits at most {HOP_SECONDS} s)"
        )
    return out
