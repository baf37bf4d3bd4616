"""Which archive objects the filters select: the queue forms' filters (filters.py), on the archive.

Ages are measured from ``terminal_at`` (when the message was given up on, or reached its DLQ): the
time range picks the days to list, and outcome and error type are read from the key. An object is
read only when a filter needs its body: ``--source``, ``--match``, or a time bound that falls inside
the object's day. A record is then judged by :func:`serverless_retry.redrive.queue.matches`, on the
message the archived copy decodes to (:func:`record_message`), so a filter means on the archive what
it means on the queue."""

from __future__ import annotations

import argparse
from collections.abc import Iterator
from dataclasses import dataclass, replace
from datetime import date, datetime, timedelta
from typing import Any

from serverless_retry.archive.record import ArchiveRecord
from serverless_retry.envelope import api_attributes, attributes_from_record, parse_time
from serverless_retry.redrive.options import RedriveOptions
from serverless_retry.redrive.queue import ExhaustedMessage, decode, matches
from serverless_retry.regex import RE2Pattern, compile_re2

from serverless_retry_tools.commands.archive_location import ArchiveKey, ArchiveLocation, key_safe, parse_key
from serverless_retry_tools.commands.archive_objects import ArchiveObjects
from serverless_retry_tools.commands.filters import filter_options

__all__ = ["ArchiveFilters", "add_match_argument", "archive_filters", "listed_keys", "record_message"]


def add_match_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--match",
        metavar="RE2",
        help="--archive: only records whose reason, last error or body matches this RE2 regex",
    )


@dataclass(frozen=True)
class ArchiveFilters:
    options: RedriveOptions  # outcomes, error types, sources, older/newer than: matches() reads them
    now: datetime
    match: RE2Pattern | None = None

    @property
    def earliest(self) -> datetime | None:
        """Objects terminal before this are too old (--newer-than)."""
        newer = self.options.newer_than
        return None if newer is None else self.now - timedelta(seconds=newer)

    @property
    def latest(self) -> datetime:
        """Objects terminal after this are too new (--older-than)."""
        older = self.options.older_than
        return self.now if older is None else self.now - timedelta(seconds=older)

    def _inside(self, day: date) -> bool:
        """Whether every moment of ``day`` is inside the time range (no need to read terminal_at)."""
        earliest = self.earliest
        if earliest is not None and day <= earliest.date():
            return False
        return day < self.latest.date()

    def key_selects(self, key: ArchiveKey) -> bool:
        """False when the key alone rules the object out; True: maybe (see :meth:`needs_body`)."""
        options = self.options
        if options.outcomes and key.outcome not in {key_safe(o) for o in options.outcomes}:
            return False
        if options.error_types and key.error_type not in {key_safe(e) for e in options.error_types}:
            return False
        earliest = self.earliest
        if earliest is not None and key.day < earliest.date():
            return False
        return key.day <= self.latest.date()

    def needs_body(self, key: ArchiveKey) -> bool:
        options = self.options
        timed = options.older_than is not None or options.newer_than is not None
        # An error type cut or changed by key-safety ("a b" and "a-b" share a key part): the record says.
        exact = all(key_safe(e) == e for e in options.error_types)
        return bool(
            options.sources or self.match is not None or (timed and not self._inside(key.day)) or not exact
        )

    def record_selects(self, record: ArchiveRecord, message: ExhaustedMessage) -> bool:
        # --source: where it failed (the envelope's source) or where a redrive sends it (the archiver's).
        places = {message.source, record["source_queue_arn"] or ""}
        if not any(matches(replace(message, source=p), self.options, self.now) for p in places):
            return False
        if self.match is None:
            return True
        texts = (record["reason"], record["error_message"], message.body, message.raw_body)
        return any(self.match.search(t) for t in texts)


def archive_filters(args: argparse.Namespace, location: ArchiveLocation, now: datetime) -> ArchiveFilters:
    match = compile_re2(args.match, "--match") if getattr(args, "match", None) else None
    return ArchiveFilters(filter_options(args, str(location)), now, match)


def listed_keys(objects: ArchiveObjects, filters: ArchiveFilters) -> Iterator[ArchiveKey]:
    """The keys of the time range the key alone does not rule out, in key order: only the range's
    days are listed (one listing a day), narrowed to a single outcome and error type when one is given."""
    earliest = filters.earliest
    options = filters.options
    single_outcome = options.outcomes[0] if len(options.outcomes) == 1 else None
    single_error = options.error_types[0] if len(options.error_types) == 1 else None
    for name in objects.keys(
        first_day=earliest.date() if earliest is not None else None,
        last_day=filters.latest.date(),
        outcome=single_outcome,
        error_type=single_error,
    ):
        key = parse_key(name, objects.location)
        if key is not None and filters.key_selects(key):
            yield key


def _terminal_at(text: str, fallback: datetime | None) -> datetime | None:
    try:
        return parse_time(text)
    except ValueError:  # parse_archive_record checked it; a fallback all the same
        return fallback


def record_message(record: ArchiveRecord) -> ExhaustedMessage:
    """The archived message as the queue forms see a received one (queue_redrive.decode of the same
    body, attributes and SQS attributes), with the record's own view where the archiver knew more:
    its outcome and error (a plain DLQ message's "dlq"), its chain id, where it goes back
    (``source_queue_arn``), and its age from ``terminal_at``."""
    stored = record["message"]
    received: Any = {  # a received message's shape (MessageTypeDef), as SQS gave it to the archiver
        "MessageId": stored["message_id"],
        "Body": stored["body"],
        # Verbatim as the archiver got them (a Lambda SQS event's stringValue/binaryValue, base64 text):
        # in the API form decode() and the senders take.
        "MessageAttributes": api_attributes(attributes_from_record(stored["attributes"])),
        "Attributes": {str(k): str(v) for k, v in stored["system_attributes"].items()},
    }
    message = decode(received)
    changes: dict[str, Any] = {
        "sent_at": _terminal_at(record["terminal_at"], message.sent_at),
        "outcome": record["outcome"] or message.outcome,
        "error_type": record["error_type"],
        "envelope_id": record["retry_id"] or message.envelope_id,
    }
    if not message.source and record["source_queue_arn"]:
        changes["source"] = record["source_queue_arn"]
    if message.kind == "pointer":
        # A claim check: the archiver read its payload before writing the record, so `original` is
        # the whole message the producer sent (too large for an envelope): it goes back as it came.
        original = record["original"]
        changes.update(
            kind="compact",
            payload_problem="",
            body=original["body"],
            attributes=dict(original["attributes"]),
            history=tuple(dict(h) for h in record["history"]),
        )
    return replace(message, **changes)
