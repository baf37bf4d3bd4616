"""Where did every self-healing delivery end? (pure)

A published SNS message is delivered to each function subscribed to its topic; each (message,
function) pair is accounted for from what the emulator shows after the run:

- the runtime's record of the asynchronous invocations it ran (function, the SNS MessageId the event
  carried, ok or the error): how many attempts each delivery took;
- the retry-exhausted queue: ``ExhaustedRecord`` bodies ``{outcome, reason, detail: {payload,
  meta}}`` whose ``meta.retry_id`` is the SNS MessageId and ``meta.function_name`` the function (read,
  with the enrichment's last-resort form, by ``serverless_retry.terminal.read_terminal``);
- the redrive function's log lines (``event redriven`` with ``retry_id``, ``next_attempt``,
  ``delay_seconds``): the backoff each retry waited;
- every dead-letter queue of the pattern (failure queue DLQ, rule targets' DLQ, redrive DLQ,
  schedules' DLQ): anything there is a delivery that did not end where the design says;
- the archive (modules/archive), where the archiver moves what arrives in those queues: each record
  holds the message verbatim, read as its queue's message would be (place ``archive (<queue>)``).

A delivery is *processed* when its function's last invocation succeeded (exactly once expected);
*exhausted* / *non-retryable* / ... when the retry-exhausted queue holds its record; *dlq:<queue>*
when a dead-letter queue does; *unaccounted* when none of these; *conflict* when more than one.
"""

from __future__ import annotations

import itertools
import json
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from serverless_retry.archive.record import ArchiveRecord
from serverless_retry.terminal import read_terminal

from serverless_retry_tools.local.demos.accounting import json_records

__all__ = [
    "Delivery",
    "Expectation",
    "Final",
    "Invocation",
    "Published",
    "Redrive",
    "SelfHealingAccounting",
    "account",
    "parse_archived",
    "parse_dead_letter",
    "parse_exhausted",
    "parse_redrive_logs",
]

_WHOLE_SECOND = 1  # tolerance: at() expressions and record timestamps are whole seconds


@dataclass(frozen=True)
class Expectation:
    """What the example should do with each message of a topic in one subscribed function."""

    function: str
    outcome: str  # processed | exhausted | non-retryable | ...
    attempts: int
    error_type: str = ""  # the error the exhausted record must name ("" = any)


@dataclass(frozen=True)
class Published:
    message_id: str
    topic: str  # a label for the table (e.g. "one")
    key: str  # the business key (order id)
    expectations: tuple[Expectation, ...]


@dataclass(frozen=True)
class Invocation:
    function: str
    message_id: str
    ok: bool
    error: str
    logical_ms: int


@dataclass(frozen=True)
class Final:
    """A record in the retry-exhausted queue or a dead-letter queue."""

    place: str  # exhausted-queue | failure-dlq | rules-dlq | redrive-dlq | schedule-dlq
    message_id: str  # the SNS MessageId it stands for ("" when it names none)
    function: str  # "" when it names none
    outcome: str
    attempt: int = 0
    error_type: str = ""
    reason: str = ""


@dataclass(frozen=True)
class Redrive:
    retry_id: str
    next_attempt: int
    delay_seconds: int
    action: str


@dataclass(frozen=True)
class Delivery:
    message: Published
    expected: Expectation
    outcome: str
    attempts: int
    delays: tuple[int, ...]  # the backoff the redrive chose before each retry (logical s)
    error_type: str
    evidence: str
    problems: tuple[str, ...] = ()
    waited: tuple[int, ...] = ()  # logical seconds from each attempt's end to the next one's end

    @property
    def as_expected(self) -> bool:
        return not self.problems


@dataclass
class SelfHealingAccounting:
    deliveries: list[Delivery]
    unknown_finals: list[Final] = field(default_factory=list)

    @property
    def totals(self) -> Counter[str]:
        return Counter(d.outcome for d in self.deliveries)

    @property
    def unexpected(self) -> list[Delivery]:
        return [d for d in self.deliveries if not d.as_expected]

    @property
    def ok(self) -> bool:
        t = self.totals
        return not self.unexpected and not self.unknown_finals and not t["unaccounted"] and not t["conflict"]


# --- parsing what the emulator holds ----------------------------------------------------------------


def parse_exhausted(body: str, attributes: Mapping[str, Any] | None = None) -> Final:
    """A message of the retry-exhausted queue (an ExhaustedRecord, or the enrichment's last resort: the
    raw destination record with a compact attribute); anything else is reported unreadable."""
    view = read_terminal(body, attributes or {})
    if view.outcome == "unknown":
        return Final("exhausted-queue", "", "", "unreadable", reason=body[:200])
    meta: Mapping[str, Any] = view.detail["meta"] if view.detail is not None else {}
    function = meta.get("function_name") if view.detail is not None else view.source.rsplit(":", 1)[-1]
    return Final(
        "exhausted-queue",
        view.id,
        str(function or ""),
        view.outcome,
        attempt=view.attempt,
        error_type=view.error_type,
        reason=view.reason,
    )


def _sns_message_id(event: Any) -> str:
    if isinstance(event, dict):
        records = event.get("Records")
        if isinstance(records, list) and records and isinstance(records[0], dict):
            return str((records[0].get("Sns") or {}).get("MessageId") or "")
        if isinstance(event.get("payload"), dict | list):  # a direct-invoke wrapper
            return _sns_message_id(event["payload"])
    return ""


def parse_dead_letter(place: str, body: str) -> Final:
    """A message in one of the pattern's dead-letter queues: which delivery it stands for."""
    try:
        document = json.loads(body)
    except ValueError:
        return Final(place, "", "", f"dlq:{place}", reason=body[:200])
    message_id, function = "", ""
    if isinstance(document, dict):
        meta = (
            ((document.get("detail") or {}).get("meta")) if isinstance(document.get("detail"), dict) else None
        )
        request = document.get("requestPayload")
        if isinstance(meta, dict):  # a bus event (rule target DLQ)
            message_id, function = str(meta.get("retry_id") or ""), str(meta.get("function_name") or "")
        elif (
            isinstance(request, dict)
            and isinstance((request.get("detail") or {}), dict)
            and "meta" in (request.get("detail") or {})
        ):  # the redrive function's own failure record
            inner = request["detail"]["meta"]
            message_id, function = str(inner.get("retry_id") or ""), str(inner.get("function_name") or "")
        elif request is not None:  # a source function's failure record (failure queue DLQ)
            message_id = _sns_message_id(request)
            arn = str((document.get("requestContext") or {}).get("functionArn") or "")
            function = arn.split(":")[6] if arn.count(":") >= 6 else ""
        else:  # a schedule's Input (the redriven event)
            message_id = _sns_message_id(document)
    return Final(place, message_id, function, f"dlq:{place}")


def parse_archived(record: ArchiveRecord, dlq_places: Mapping[str, str]) -> Final:
    """A record of the archive: its message read as the queue it came from would show it, the place
    ``archive (<queue>)``. ``dlq_places``: each DLQ's name -> its place (``failure-dlq``, ...)."""
    message = record["message"]
    if record["place"] == "selfheal-exhausted":
        final = parse_exhausted(message["body"], message["attributes"])
    else:
        name = record["archive_queue_arn"].rsplit(":", 1)[-1]
        final = parse_dead_letter(dlq_places.get(name, name), message["body"])
    return replace(final, place=f"archive ({final.place})")


def parse_redrive_logs(lines: Iterable[str]) -> list[Redrive]:
    out = []
    for record in json_records(lines):
        if record.get("message") != "event redriven":
            continue
        try:
            out.append(
                Redrive(
                    str(record["retry_id"]),
                    int(record["next_attempt"]),
                    int(record.get("delay_seconds") or 0),
                    str(record.get("action") or ""),
                )
            )
        except (KeyError, TypeError, ValueError):
            continue
    return out


# --- accounting ----------------------------------------------------------------------------------------


def account(
    published: Sequence[Published],
    invocations: Iterable[Invocation],
    finals: Iterable[Final],
    redrives: Iterable[Redrive],
) -> SelfHealingAccounting:
    runs: dict[tuple[str, str], list[Invocation]] = defaultdict(list)
    for invocation in invocations:
        runs[(invocation.message_id, invocation.function)].append(invocation)
    ids = {p.message_id for p in published}
    by_delivery: dict[tuple[str, str], list[Final]] = defaultdict(list)
    by_message: dict[str, list[Final]] = defaultdict(list)
    unknown: list[Final] = []
    for final in finals:
        if final.message_id not in ids:
            unknown.append(final)
        elif final.function:
            by_delivery[(final.message_id, final.function)].append(final)
        else:
            by_message[final.message_id].append(final)
    delays: dict[str, dict[int, int]] = defaultdict(dict)
    for redrive in redrives:
        delays[redrive.retry_id][redrive.next_attempt] = redrive.delay_seconds

    deliveries = []
    for message in published:
        for expected in message.expectations:
            key = (message.message_id, expected.function)
            tries = sorted(runs.get(key, []), key=lambda i: i.logical_ms)
            places = by_delivery.get(key, []) + by_message.get(message.message_id, [])
            successes = sum(1 for i in tries if i.ok)
            failed = any(not i.ok for i in tries)  # only a failing delivery was redriven
            planned = delays.get(message.message_id, {}) if failed else {}
            waits = tuple(planned[a] for a in sorted(planned))
            if len(places) + (1 if successes else 0) > 1:
                outcome, evidence = (
                    "conflict",
                    " + ".join([p.place for p in places] + (["ok run"] if successes else [])),
                )
            elif places:
                outcome, evidence = places[0].outcome, places[0].place
            elif successes:
                outcome, evidence = "processed", "ok run" if successes == 1 else f"{successes} ok runs"
            else:
                outcome, evidence = "unaccounted", "none"
            error_type = (
                places[0].error_type
                if places
                else (tries[-1].error.split(":", 1)[0] if tries and not tries[-1].ok else "")
            )
            problems = []
            if outcome != expected.outcome:
                problems.append(f"expected {expected.outcome}")
            if len(tries) != expected.attempts:
                problems.append(f"expected {expected.attempts} attempt(s)")
            if expected.outcome == "processed" and successes > 1:
                problems.append(f"processed {successes} times")
            if expected.error_type and places and error_type != expected.error_type:
                problems.append(f"expected error {expected.error_type}")
            if places and places[0].attempt and places[0].attempt != len(tries):
                problems.append(f"the record says attempt {places[0].attempt}")
            waited = tuple(round((b.logical_ms - a.logical_ms) / 1000) for a, b in itertools.pairwise(tries))
            # A retry never comes before its backoff (1 s: at() and record timestamps are whole seconds).
            early = [
                n + 2 for n, (w, d) in enumerate(zip(waited, waits, strict=False)) if w < d - _WHOLE_SECOND
            ]
            if early:
                problems.append(f"attempt {early[0]} came before its backoff")
            deliveries.append(
                Delivery(
                    message,
                    expected,
                    outcome,
                    len(tries),
                    waits,
                    error_type,
                    evidence,
                    tuple(problems),
                    waited,
                )
            )
    return SelfHealingAccounting(deliveries, unknown)
