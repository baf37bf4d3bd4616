"""Where did every record of the stream demo end? (pure)

The same workload is put on two streams: one consumed ``unordered`` (a failed record is handed to the
retry queue and its shard goes on), one ``blocking`` (Lambda's own behaviour: the shard retries from
the failed record). Each record ends in exactly one of three places, read back from the emulator:

- ``exhausted``: the retry-exhausted queue holds its copy (the copy's body is the stream record as
  Lambda sent it, so its shard and sequence number name it) with the outcome and reason;
- ``on-failure``: an on-failure destination record (Lambda's invocation record: shard and the first
  and last sequence numbers of a discarded batch) covers it;
- ``processed``: the stream mapping's checkpoints say the function succeeded with it, and it was not
  handed to the retry queue (the consumer's ``retries planned`` log names each hand-off by its chain
  id).

A record in none is *unaccounted*, in more than one a *conflict*.
"""

from __future__ import annotations

import json
import statistics
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from serverless_retry.streams.reader import chain_id
from serverless_retry.terminal import TerminalView, read_terminal

__all__ = [
    "FailureRecord",
    "ModeAccounting",
    "PutRecord",
    "RecordFate",
    "WorkRecord",
    "account_mode",
    "build_records",
    "parse_failure_record",
    "percentile",
]

KINDS = ("ok", "poison", "invalid")


@dataclass(frozen=True)
class WorkRecord:
    """One record of the workload: the same on both streams."""

    index: int
    kind: str  # ok | poison | invalid (the example processor's kinds)
    order_id: str

    @property
    def data(self) -> bytes:
        return json.dumps({"order_id": self.order_id, "kind": self.kind}).encode()

    @property
    def partition_key(self) -> str:
        return self.order_id


def build_records(orders: int, *, poison_at: int = 3) -> list[WorkRecord]:
    """``orders`` ordinary records, one poison record early (index ``poison_at``) and one invalid one
    half way, in the order they are put."""
    kinds = ["ok"] * orders
    kinds.insert(min(poison_at, len(kinds)), "poison")
    kinds.insert(len(kinds) // 2, "invalid")
    return [WorkRecord(i, kind, f"o-{i:04d}") for i, kind in enumerate(kinds)]


@dataclass(frozen=True)
class PutRecord:
    """A workload record as one stream took it: where it went and when (logical Unix seconds)."""

    record: WorkRecord
    shard_id: str
    sequence_number: str
    arrival: float
    stream_arn: str

    @property
    def chain(self) -> str:
        """Its retry id, as the stream consumer names its hand-off (``reader.chain_id``)."""
        return chain_id(self.stream_arn, self.shard_id, self.sequence_number, self.record.partition_key)


@dataclass(frozen=True)
class FailureRecord:
    """An on-failure destination record: the batch Lambda gave up on."""

    shard_id: str
    first: int
    last: int
    size: int
    condition: str
    invoke_count: int

    def covers(self, put: PutRecord) -> bool:
        return put.shard_id == self.shard_id and self.first <= int(put.sequence_number) <= self.last


def parse_failure_record(body: str) -> FailureRecord | None:
    """Lambda's invocation record for a discarded Kinesis batch (None for anything else)."""
    try:
        document = json.loads(body)
        info = document["KinesisBatchInfo"]
        context = document.get("requestContext") or {}
        return FailureRecord(
            str(info["shardId"]),
            int(info["startSequenceNumber"]),
            int(info["endSequenceNumber"]),
            int(info.get("batchSize") or 0),
            str(context.get("condition", "")),
            int(context.get("approximateInvokeCount") or 0),
        )
    except (ValueError, KeyError, TypeError):
        return None


def _position(view: TerminalView) -> tuple[str, str] | None:
    """(shard id, sequence number) of the stream record an exhausted copy carries."""
    try:
        record = json.loads(view.body)
        shard_id = str(record["eventID"]).split(":", 1)[0]
        return shard_id, str(record["kinesis"]["sequenceNumber"])
    except (ValueError, KeyError, TypeError, AttributeError):
        return None


@dataclass
class RecordFate:
    put: PutRecord
    places: list[str] = field(default_factory=list)
    exhausted: TerminalView | None = None
    failure: FailureRecord | None = None
    waited: float | None = None  # logical seconds from arrival to the invocation that succeeded

    @property
    def outcome(self) -> str:
        if not self.places:
            return "unaccounted"
        return self.places[0] if len(self.places) == 1 else "conflict"


@dataclass
class ModeAccounting:
    mode: str
    fates: list[RecordFate]
    unknown: list[str]  # final records that name no record put

    @property
    def totals(self) -> Counter[str]:
        counts: Counter[str] = Counter({"processed": 0, "exhausted": 0, "on-failure": 0})
        counts.update(f.outcome for f in self.fates)
        return counts

    @property
    def balanced(self) -> bool:
        totals = self.totals
        return (
            not self.unknown
            and totals["processed"] + totals["exhausted"] + totals["on-failure"] == len(self.fates)
            and not self.unexpected
        )

    @property
    def unexpected(self) -> list[RecordFate]:
        """Records that ended otherwise than the mode says: ``unordered`` processes every ordinary
        record and exhausts the poison and invalid ones; ``blocking`` sends the poison and invalid
        ones to the on-failure destination, and an ordinary one may go with them (Lambda gives up on
        the rest of the batch the failed record was in)."""
        wanted = {
            "unordered": {"ok": {"processed"}, "poison": {"exhausted"}, "invalid": {"exhausted"}},
            "blocking": {
                "ok": {"processed", "on-failure"},
                "poison": {"on-failure"},
                "invalid": {"on-failure"},
            },
        }[self.mode]
        return [f for f in self.fates if f.outcome not in wanted[f.put.record.kind]]


def account_mode(
    mode: str,
    puts: Sequence[PutRecord],
    *,
    waited: Mapping[str, Mapping[str, float]],  # shard id -> sequence number -> logical seconds
    exhausted: Iterable[Mapping[str, Any]],  # ReceiveMessage messages of the retry-exhausted queue
    failures: Iterable[str],  # bodies of the on-failure destination's messages
    handed_off: set[str],  # chain ids the consumer planned retries for
) -> ModeAccounting:
    fates = {(p.shard_id, p.sequence_number): RecordFate(p) for p in puts}
    unknown: list[str] = []
    for message in exhausted:
        view = read_terminal(
            message["Body"], message.get("MessageAttributes"), message_id=message["MessageId"]
        )
        fate = fates.get(_position(view) or ("", ""))
        if fate is None:
            unknown.append(f"exhausted {view.outcome}: {view.reason[:100]}")
            continue
        fate.places.append("exhausted")
        fate.exhausted = view
    covered: dict[tuple[str, str], FailureRecord] = {}
    named = 0
    for body in failures:
        failure = parse_failure_record(body)
        if failure is None:
            unknown.append(f"on-failure message that is no Kinesis invocation record: {body[:100]}")
            continue
        named += failure.size
        for key, fate in fates.items():
            if failure.covers(fate.put):
                covered[key] = failure
    for key, fate in fates.items():
        seconds = waited.get(fate.put.shard_id, {}).get(fate.put.sequence_number)
        fate.waited = seconds
        if seconds is not None and fate.put.chain not in handed_off and "exhausted" not in fate.places:
            fate.places.append("processed")
        elif key in covered:
            # A discarded batch names its first and last sequence numbers only: with a
            # ParallelizationFactor above 1 the range also spans other lanes' records, processed.
            fate.places.append("on-failure")
            fate.failure = covered[key]
    given_up = sum(1 for f in fates.values() if "on-failure" in f.places)
    if given_up != named:
        unknown.append(f"the on-failure records name {named} records; {given_up} found in their ranges")
    return ModeAccounting(mode, list(fates.values()), unknown)


def percentile(values: Sequence[float], q: float) -> float:
    """The ``q`` quantile (0-1) of ``values``, nearest rank; 0 for none."""
    if not values:
        return 0.0
    if len(values) == 1:
        return float(values[0])
    ordered = sorted(values)
    return float(ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))])


def median(values: Sequence[float]) -> float:
    return float(statistics.median(values)) if values else 0.0
