"""Where did every message end? (pure)

The evidence is what a user could look at on AWS, read back from the emulator after the run:
- the retry-exhausted queue: terminal messages in any form the consumer writes (read by
  ``serverless_retry.terminal.read_terminal``, the one reader of them) whose ``id`` is the first SQS
  message id, with outcome, attempt and history;
- the source queue's DLQ: messages whose message id (an original) or envelope id (a retry copy)
  names the sent message;
- the archive (modules/archive), where the archiver moves both on arrival: one record per message
  (read by ``serverless_retry.archive.store``), whose ``retry_id`` is that same id; a message found
  there is *archived* with the outcome it had in its queue;
- the function's CloudWatch Logs: the example processor's ``order accepted`` record for each
  success (with the envelope ``id`` and ``attempt``), the consumer's ``retries planned`` records
  (attempt and transport of each retry of a batch) and its EMF lines (the ``Processed`` count).

A message is *processed* when its processor logged a success. If a processor logs no per-message
success (the records are filtered by log level, say), processed messages are counted from the
consumer's EMF ``Processed`` metric instead: each message not found in any other final place counts
as processed only while that metric covers it, and the report says which evidence it used.
Anything left over is *unaccounted*; a message in two final places is a *conflict*.
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from serverless_retry.archive.record import ArchiveRecord
from serverless_retry.consumer import RETRIES_PLANNED
from serverless_retry.retry_log import retry_log_entries
from serverless_retry.terminal import read_terminal

__all__ = [
    "Accounting",
    "LogEvidence",
    "MessageFate",
    "SentMessage",
    "account",
    "json_records",
    "parse_archived",
    "parse_final",
    "parse_log_lines",
    "retry_entries",
]

SUCCESS_MESSAGE = "order accepted"
RETRY_MESSAGE_PREFIX = "processing failed; retry"  # one line per retry (earlier versions)


@dataclass(frozen=True)
class SentMessage:
    message_id: str
    label: str
    order_id: str
    expected: str = ""


@dataclass
class LogEvidence:
    successes: dict[str, list[int]] = field(default_factory=lambda: defaultdict(list))  # id -> attempts
    retries: dict[str, dict[int, str]] = field(
        default_factory=lambda: defaultdict(dict)
    )  # id -> attempt -> transport
    emf_processed: int = 0
    emf: Counter[str] = field(default_factory=Counter)
    lines: int = 0


def json_records(lines: Iterable[str]) -> Iterator[dict[str, Any]]:
    """The JSON objects among log lines (Powertools records, EMF lines); any other line is skipped."""
    for line in lines:
        text = line.strip()
        if not text.startswith("{"):
            continue
        try:
            record = json.loads(text)
        except ValueError:
            continue
        if isinstance(record, dict):
            yield record


def retry_entries(record: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The retry decisions of one consumer log record, one per retried message: from a batch's
    ``retries`` groups (the line the consumer writes, ``serverless_retry.consumer.retrying_consumer.RETRIES_PLANNED``;
    ``retry_log_entries`` reads it), from a list of one entry per message (0.2.0's line), or the
    record itself (one line per retry, as earlier versions wrote)."""
    retries = record.get("retries")
    if isinstance(retries, list):
        grouped: list[Mapping[str, Any]] = list(retry_log_entries(record))
        flat = [e for e in retries if isinstance(e, Mapping) and not isinstance(e.get("delays"), Mapping)]
        return grouped + flat
    return [record]


def parse_log_lines(lines: Iterable[str]) -> LogEvidence:
    """Read the function's log lines (JSON ones; others are skipped)."""
    evidence = LogEvidence()
    lines = list(lines)
    evidence.lines = len(lines)
    for record in json_records(lines):
        aws = record.get("_aws")
        if isinstance(aws, dict):
            for directive in aws.get("CloudWatchMetrics") or []:
                for metric in directive.get("Metrics") or []:
                    name = metric.get("Name")
                    value = record.get(name)
                    # A value is a number or, as Powertools writes it, a list of numbers.
                    values = value if isinstance(value, list) else [value]
                    if isinstance(name, str):
                        evidence.emf[name] += int(sum(v for v in values if isinstance(v, int | float)))
            if record.get("message") != RETRIES_PLANNED:  # a batch's metrics line may carry its retries
                continue
        message = record.get("message")
        if message == SUCCESS_MESSAGE and isinstance(record.get("id"), str):
            attempt = record.get("attempt")
            evidence.successes[record["id"]].append(attempt if isinstance(attempt, int) else 0)
        elif isinstance(message, str) and (
            message == RETRIES_PLANNED or message.startswith(RETRY_MESSAGE_PREFIX)
        ):
            for entry in retry_entries(record):
                retry_id, attempt = entry.get("retry_id"), entry.get("attempt")
                if isinstance(retry_id, str) and isinstance(attempt, int):
                    evidence.retries[retry_id][attempt] = str(entry.get("transport", "?"))
    evidence.emf_processed = evidence.emf.get("Processed", 0)
    return evidence


@dataclass(frozen=True)
class FinalRecord:
    """One message found in the retry-exhausted queue, the DLQ, or the archive."""

    place: str  # "exhausted", "dlq" or "archive"
    id: str  # the sent message id it stands for
    outcome: str
    attempt: int
    transports: tuple[str, ...]
    reason: str = ""
    archived_from: str = ""  # with place "archive": the queue the archiver took it from


def parse_final(place: str, message: Mapping[str, Any]) -> FinalRecord:
    """Decode a message received from the exhausted queue or the DLQ (boto3 ReceiveMessage shape)."""
    message_id = str(message.get("MessageId", ""))
    view = read_terminal(
        str(message.get("Body", "")), message.get("MessageAttributes") or {}, message_id=message_id
    )
    attempt = view.attempt
    outcome = view.outcome
    if place == "dlq":
        # An original keeps its message id, a retry copy names the first one; SQS counted the receives.
        outcome = "dlq"
        receive_count = str((message.get("Attributes") or {}).get("ApproximateReceiveCount") or "")
        if not attempt and receive_count.isdigit():
            attempt = int(receive_count)
    return FinalRecord(
        place=place,
        id=view.id,
        outcome=outcome,
        attempt=attempt,
        transports=tuple(str(h.get("transport", "?")) for h in view.history),
        reason=view.reason,
    )


def parse_archived(record: ArchiveRecord) -> FinalRecord:
    """A record of the archive: the message the archiver took from the exhausted queue or the DLQ,
    as its queue would have shown it (the archiver read it with the same ``read_terminal``)."""
    from_dlq = record["place"] == "dlq"
    return FinalRecord(
        place="archive",
        id=record["retry_id"],
        outcome="dlq" if from_dlq else record["outcome"],
        attempt=record["attempt"],
        transports=tuple(str(h.get("transport", "?")) for h in record["history"]),
        reason=record["reason"],
        archived_from=record["place"],
    )


_EVIDENCE = {"exhausted": "exhausted-queue", "dlq": "dlq", "archive": "archive"}


@dataclass(frozen=True)
class MessageFate:
    sent: SentMessage
    outcome: str  # processed | exhausted | non-retryable | invalid-envelope | too-large-to-retry | dlq | unaccounted | conflict
    attempts: int
    transports: tuple[str, ...]
    evidence: str  # processor-log | emf-count | exhausted-queue | dlq | archive | none | several
    deliveries: int = 1  # success records for this id (> 1: at-least-once duplicate)
    note: str = ""


@dataclass
class Accounting:
    fates: list[MessageFate]
    emf_processed: int
    unknown_finals: list[FinalRecord]

    @property
    def totals(self) -> Counter[str]:
        return Counter(f.outcome for f in self.fates)

    @property
    def processed(self) -> int:
        return self.totals["processed"]

    @property
    def dlq(self) -> int:
        return self.totals["dlq"]

    @property
    def archived(self) -> Counter[str]:
        """The messages found in the archive, by the outcome they had in their queue."""
        return Counter(f.outcome for f in self.fates if f.evidence == "archive")

    @property
    def exhausted_by_reason(self) -> dict[str, int]:
        skip = {"processed", "dlq", "unaccounted", "conflict"}
        return {k: v for k, v in sorted(self.totals.items()) if k not in skip}

    @property
    def balanced(self) -> bool:
        """processed + exhausted (by reason) + DLQ == sent, nothing unaccounted or in two places,
        and nothing final that we did not send."""
        t = self.totals
        return (
            t["unaccounted"] == 0
            and t["conflict"] == 0
            and not self.unknown_finals
            and self.processed + sum(self.exhausted_by_reason.values()) + self.dlq == len(self.fates)
        )


def _transports(evidence: LogEvidence, ident: str, final: FinalRecord | None) -> tuple[str, ...]:
    if final is not None and final.transports:
        return final.transports
    retries = evidence.retries.get(ident, {})
    return tuple(retries[a] for a in sorted(retries))


def account(sent: Sequence[SentMessage], finals: Sequence[FinalRecord], evidence: LogEvidence) -> Accounting:
    by_id: dict[str, list[FinalRecord]] = defaultdict(list)
    sent_ids = {s.message_id for s in sent}
    unknown = []
    for record in finals:
        if record.id in sent_ids:
            by_id[record.id].append(record)
        else:
            unknown.append(record)
    fates: list[MessageFate] = []
    pending_count: list[int] = []  # indexes of messages to settle by the EMF count
    for s in sent:
        ident = s.message_id
        places = list(by_id.get(ident, []))
        successes = evidence.successes.get(ident, [])
        if len(places) + (1 if successes else 0) > 1:
            what = [p.place for p in places] + (["processed"] if successes else [])
            fates.append(
                MessageFate(
                    s,
                    "conflict",
                    0,
                    _transports(evidence, ident, None),
                    "several",
                    note="in " + ", ".join(what),
                )
            )
        elif successes:
            fates.append(
                MessageFate(
                    s,
                    "processed",
                    min(successes),
                    _transports(evidence, ident, None),
                    "processor-log",
                    deliveries=len(successes),
                )
            )
        elif places:
            final = places[0]
            fates.append(
                MessageFate(
                    s,
                    final.outcome,
                    final.attempt,
                    _transports(evidence, ident, final),
                    _EVIDENCE.get(final.place, final.place),
                    note=final.reason,
                )
            )
        else:
            pending_count.append(len(fates))
            fates.append(MessageFate(s, "unaccounted", 0, _transports(evidence, ident, None), "none"))
    # Messages with no record anywhere: processed per the consumer's own count, if it covers them.
    logged = sum(len(v) for v in evidence.successes.values())
    uncovered = evidence.emf_processed - logged
    if pending_count and uncovered >= len(pending_count):
        for index in pending_count:
            fate = fates[index]
            retries = evidence.retries.get(fate.sent.message_id, {})
            attempts = max(retries, default=0) + 1
            fates[index] = MessageFate(fate.sent, "processed", attempts, fate.transports, "emf-count")
    return Accounting(fates, evidence.emf_processed, unknown)
