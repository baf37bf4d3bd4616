"""Capacity planning: what a steady stream of messages failing like a simulated one asks of each AWS
API, against the account's default quotas, what it costs a month, and what takes over at a quota.

The load per message comes from the same rows as the cost lines (``simulate``'s attempts), at
``rate`` messages per second failing like that one:

- SQS: every attempt is a delivery (ReceiveMessage and DeleteMessageBatch shared by a batch; native
  and visibility retries leave the message in the queue, so no delete); an ``sqs-delay`` retry, each
  ``sqs-hops`` hop and the final copy are SendMessageBatch entries; a ``scheduler`` retry is one
  SendMessage made by the schedule; a ``visibility`` retry a ChangeMessageVisibilityBatch entry.
- Scheduler: one CreateSchedule and one invocation per ``scheduler`` retry; each schedule exists
  until it fires (deleted after completion), so by Little's law rate x its wait schedules exist.
- DynamoDB (the claims table, not for native retry): per failed attempt one conditional PutItem
  (the claim) and one write marking it done, 1 write request unit each (items under 1 KB).
- Lambda: each record takes ``duration_ms``: rate x attempts x duration concurrent executions.

Default quotas (us-east-1, the AWS quota pages, read 2026-11-30; the Service Quotas console shows an
account's own): EventBridge Scheduler "CreateSchedule request rate" 5,000 per second, "Number of
schedules" 10,000,000, "Invocations throttle limit" 1,000 per second; SQS FIFO 300 API calls per
second per action (standard queues: nearly unlimited); DynamoDB on-demand "table-level write
throughput" 40,000 write request units per second; Lambda "Concurrent executions" 1,000.

Over a quota: CreateSchedule answers ThrottlingException or ServiceQuotaExceededException, which the
consumer takes for "not now" and sends the retry by ``sqs-hops`` instead (SQS delay hops of at most
900 s); Scheduler invocations over their limit are delayed, not lost; the others throttle, and the
records go back to the queue to be tried again.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from serverless_retry_tools.attempt_rows import AttemptRow
from serverless_retry_tools.cost import HOP_SECONDS, CostModel, serverless_retry_cost

__all__ = ["DYNAMODB_WRITE_PRICE", "QUOTAS", "SECONDS_PER_MONTH", "ApiLoad", "Capacity", "capacity"]

SECONDS_PER_MONTH = 30 * 86_400
DYNAMODB_WRITE_PRICE = 0.625 / 1e6  # on-demand, per write request unit, us-east-1 (read 2026-11-30)

# name -> (default quota, unit); None: no fixed quota.
QUOTAS: dict[str, tuple[float | None, str]] = {
    "Scheduler CreateSchedule": (5_000, "calls/s"),
    "Scheduler schedules in existence": (10_000_000, "schedules"),
    "Scheduler invocations": (1_000, "invocations/s"),
    "SQS ReceiveMessage": (None, "calls/s"),
    "SQS SendMessage": (None, "calls/s"),
    "SQS SendMessageBatch": (None, "calls/s"),
    "SQS DeleteMessageBatch": (None, "calls/s"),
    "SQS ChangeMessageVisibilityBatch": (None, "calls/s"),
    "DynamoDB writes (claims table)": (40_000, "WRU/s"),
    "Lambda concurrent executions": (1_000, "executions"),
}
SQS_FIFO_CALLS_PER_SECOND = 300

OVER = {
    "Scheduler CreateSchedule": "the consumer sends the excess retries by sqs-hops instead",
    "Scheduler schedules in existence": "new schedules are refused: those retries go by sqs-hops",
    "Scheduler invocations": "Scheduler delays the excess invocations (retries arrive late, none lost)",
    "DynamoDB writes (claims table)": "claims throttle: records go back to the queue and are tried again",
    "Lambda concurrent executions": "Lambda throttles: messages wait longer in the queue",
    "SQS": "throttled calls are tried again, then records go back to the queue",
}


@dataclass(frozen=True)
class ApiLoad:
    api: str
    value: float  # calls (or units, or a standing count) at the given rate
    quota: float | None
    unit: str

    @property
    def over(self) -> bool:
        return self.quota is not None and self.value > self.quota

    @property
    def share(self) -> float | None:
        return None if self.quota is None else self.value / self.quota


@dataclass(frozen=True)
class Capacity:
    rate: float
    loads: tuple[ApiLoad, ...]
    monthly_dollars: float
    takeover: tuple[str, ...]  # what happens at each quota passed
    hops_share: float  # of the scheduler retries, the share that goes by sqs-hops at this rate

    def load(self, api: str) -> ApiLoad:
        return next(load for load in self.loads if load.api == api)


def _per_message(rows: Sequence[AttemptRow], model: CostModel, *, claims: bool) -> dict[str, float]:
    batch = model.batch_size
    calls = dict.fromkeys(QUOTAS, 0.0)
    calls["SQS ReceiveMessage"] = len(rows) / batch
    for row in rows:
        transport = row.transport or "sqs-delay"
        stays = transport in ("native", "visibility")  # the message itself waits in the queue
        if not stays:
            calls["SQS DeleteMessageBatch"] += 1 / batch
        if not row.retried:
            if row.action != "dead-letter" or transport != "native":  # SQS moves a native one itself
                calls["SQS SendMessageBatch"] += 1 / batch  # the final copy
            continue
        if transport == "scheduler":
            calls["Scheduler CreateSchedule"] += 1
            calls["Scheduler invocations"] += 1
            calls["SQS SendMessage"] += 1
            calls["Scheduler schedules in existence"] += row.delay_seconds  # x rate: Little's law
        elif transport == "sqs-hops":
            calls["SQS SendMessageBatch"] += (row.hops or math.ceil(row.delay_seconds / HOP_SECONDS)) / batch
        elif transport == "visibility":
            calls["SQS ChangeMessageVisibilityBatch"] += 1 / batch
        elif transport == "sqs-delay":
            calls["SQS SendMessageBatch"] += 1 / batch
    if claims and not any(r.transport == "native" for r in rows):
        calls["DynamoDB writes (claims table)"] = 2.0 * len(rows)
    calls["Lambda concurrent executions"] = len(rows) * model.duration_ms / 1000
    return calls


def capacity(rows: Sequence[AttemptRow], model: CostModel, rate: float, *, claims: bool = True) -> Capacity:
    """The load of ``rate`` messages per second failing like ``rows`` (see the module docstring)."""
    per = _per_message(rows, model, claims=claims)
    loads: list[ApiLoad] = []
    for api, (default, unit) in QUOTAS.items():
        quota = SQS_FIFO_CALLS_PER_SECOND if api.startswith("SQS") and model.fifo else default
        loads.append(ApiLoad(api, per[api] * rate, quota, unit))
    takeover = [f"{load.api}: {OVER.get(load.api, OVER['SQS'])}" for load in loads if load.over]
    # The retries the Scheduler cannot take at this rate wait in SQS delay hops instead.
    create = next(load for load in loads if load.api == "Scheduler CreateSchedule")
    standing = next(load for load in loads if load.api == "Scheduler schedules in existence")
    taken = 1.0
    for load in (create, standing):
        if load.quota is not None and load.value > load.quota:
            taken = min(taken, load.quota / load.value)
    hops_share = 1.0 - taken
    per_message = serverless_retry_cost(rows, model).dollars(model)["total"] / 1e6
    if hops_share:
        per_message += _hops_instead(rows, model, hops_share)
    per_message += per["DynamoDB writes (claims table)"] * DYNAMODB_WRITE_PRICE
    return Capacity(
        rate=rate,
        loads=tuple(loads),
        monthly_dollars=per_message * rate * SECONDS_PER_MONTH,
        takeover=tuple(takeover),
        hops_share=hops_share,
    )


def _hops_instead(rows: Sequence[AttemptRow], model: CostModel, share: float) -> float:
    """Dollars per message added when ``share`` of the scheduler retries go by sqs-hops instead."""
    moved = [
        AttemptRow(r.attempt, r.action, r.delay_seconds, "sqs-hops", r.at_seconds, 0, r.reason)
        if r.retried and r.transport == "scheduler"
        else r
        for r in rows
    ]
    before = serverless_retry_cost(rows, model).dollars(model)["total"]
    after = serverless_retry_cost(moved, model).dollars(model)["total"]
    return share * (after - before) / 1e6


def render_capacity(result: Capacity) -> list[str]:
    """Plain lines for simulate's output."""
    out = [f"at {result.rate:,.6g} messages/s failing like this (default quotas, us-east-1):"]
    width = max(len(load.api) for load in result.loads)
    for load in result.loads:
        if load.value == 0:
            continue
        quota = "no fixed quota" if load.quota is None else f"quota {load.quota:,.0f} {load.unit}"
        share = "" if load.share is None else f" ({load.share:.0%})"
        flag = "  OVER" if load.over else ""
        out.append(f"  {load.api:<{width}}  {load.value:>14,.1f} {load.unit:<13} {quota}{share}{flag}")
    out.append(f"  monthly cost (30 days): ${result.monthly_dollars:,.2f}")
    for line in result.takeover:
        out.append(f"  over quota: {line}")
    if result.hops_share:
        out.append(f"  {result.hops_share:.0%} of the scheduler retries go by sqs-hops at this rate")
    return out
