"""``serverless-retry redrive --archive s3://bucket/prefix/``: send archived messages back, each one
once per run, then mark its object redriven.

What is sent is what ``redrive`` from the queue sends for the same message
(:func:`serverless_retry.redrive.queue.outgoing_message` on the archived copy, decoded as a received
message is): by default the final envelope as the consumer wrote it, which its consumer reads as its
chain's next attempt and so takes the chain's claim (no second chain for one message); a retry copy a
DLQ caught goes back as that same copy; ``--reset-attempts`` sends the original body and attributes
(the record's ``original``) with a fresh budget; a plain DLQ message goes back verbatim. Refusals are
the queue form's (:func:`~serverless_retry.redrive.queue.refusal`: a self-healing record goes to no queue).
With ``--to-function`` a self-healing record (archived from the self-healing retry-exhausted queue)
re-invokes the function that failed instead, as from the queue: its payload read back through its S3
pointer when it has one (:mod:`serverless_retry_tools.commands.selfheal_pointer`); anything else is
refused.

One run: the keys are listed before the first send (objects archived meanwhile are a later run's);
each chain goes back at most once (:class:`~serverless_retry.redrive.queue.RunMemory`); a record
already redriven, by any run, is skipped unless ``--again``. After each send the object is rewritten
with the mark appended (``{at, to, message_id, run}``), conditionally on the ETag read: a 412 (or 409)
means it changed meanwhile; it is read again and marked again unless this run's mark is there."""

from __future__ import annotations

import argparse
import json
import sys
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

from botocore.exceptions import ClientError, ParamValidationError
from serverless_retry.archive.record import RedriveMark
from serverless_retry.envelope import format_time
from serverless_retry.redrive.options import RedriveOptions
from serverless_retry.redrive.queue import (
    DEFAULT_MAX_MESSAGE_BYTES,
    MESSAGE_ERRORS,
    ExhaustedMessage,
    Pacer,
    RunMemory,
    Sender,
    describe_error,
    lambda_sender,
    outgoing_message,
    refusal,
    sqs_sender,
)

from serverless_retry_tools.commands.archive_objects import ArchiveObjects, ArchiveReadError, StoredRecord
from serverless_retry_tools.commands.archive_scan import Found, Unreadable, age_text, judge, s3_client, short
from serverless_retry_tools.commands.archive_select import archive_filters, listed_keys
from serverless_retry_tools.commands.args import UsageError
from serverless_retry_tools.commands.aws import lambda_client, sqs_client
from serverless_retry_tools.commands.clock import command_clock
from serverless_retry_tools.commands.confirm import confirm
from serverless_retry_tools.commands.selfheal_pointer import StoredPayloads
from serverless_retry_tools.console import Progress, print_table
from serverless_retry_tools.routing import SourceRouter

__all__ = ["ArchiveRedrive", "cmd_redrive_archive"]

MARK_TRIES = 3  # rewrites of one mark racing other writers, before the run stops


@dataclass
class ArchiveRedrive:
    """One run's outcome, by key."""

    run_id: str
    dry_run: bool
    listed: int = 0
    moved: list[tuple[Found, str, str | None]] = field(default_factory=list)  # (found, to, sent id)
    skipped: int = 0  # not selected by the filters
    already: list[Found] = field(default_factory=list)  # redriven before (no --again)
    repeated: list[tuple[Found, str]] = field(default_factory=list)  # a chain this run moved
    failed: list[tuple[Found, str]] = field(default_factory=list)  # refused, or the send failed
    unrouted: list[tuple[Found, str]] = field(default_factory=list)
    unreadable: list[Unreadable] = field(default_factory=list)
    unmarked: list[tuple[Found, str]] = field(default_factory=list)  # sent, the mark not written
    notes: list[tuple[Found, str]] = field(default_factory=list)
    stopped: str | None = None

    @property
    def complete(self) -> bool:
        return not (self.failed or self.unrouted or self.unreadable or self.unmarked or self.stopped)

    def as_json(self) -> dict[str, Any]:
        return {
            "archive_run_id": self.run_id,
            "dry_run": self.dry_run,
            "complete": self.complete,
            "stopped": self.stopped,
            "listed": self.listed,
            "moved": len(self.moved),
            "skipped": self.skipped,
            "already_redriven": len(self.already),
            "repeated": len(self.repeated),
            "failed": len(self.failed),
            "not_routed": len(self.unrouted),
            "unreadable": [{"key": u.key, "error": u.why} for u in self.unreadable],
            "moved_keys": [f.key.key for f, _to, _id in self.moved],
            "moved_ids": [f.chain_id for f, _to, _id in self.moved],
            "routes": {f.key.key: to for f, to, _id in self.moved},
            "already_keys": [f.key.key for f in self.already],
            "repeated_keys": [{"key": f.key.key, "why": why} for f, why in self.repeated],
            "failures": [{"key": f.key.key, "id": f.chain_id, "error": why} for f, why in self.failed],
            "not_routed_keys": [{"key": f.key.key, "why": why} for f, why in self.unrouted],
            "unmarked": [{"key": f.key.key, "error": why} for f, why in self.unmarked],
            "notes": [{"key": f.key.key, "note": note} for f, note in self.notes],
        }


def _marked_by(stored: StoredRecord, run_id: str) -> bool:
    return any(isinstance(m, dict) and m.get("run") == run_id for m in stored.record.get("redriven", []))


@dataclass
class _Destination:
    """Where each record goes: --to-queue-url, else the queue it was consumed from."""

    sqs: Any
    to_queue_url: str | None
    message_group_id: str | None
    router: SourceRouter = field(init=False)
    _senders: dict[str, Sender] = field(default_factory=dict)
    _max_bytes: dict[str, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.router = SourceRouter(self.sqs, message_group_id=self.message_group_id)

    def url(self, found: Found) -> tuple[str | None, str]:
        if self.to_queue_url is not None:
            return self.to_queue_url, ""
        assert found.stored is not None
        assert found.message is not None
        recorded = found.stored.record.get("source_queue_arn") or found.message.source
        if not recorded:
            return None, "no source queue recorded (give --to-queue-url)"
        url = self.router.url(str(recorded))
        return (url, "") if url else (None, f"its recorded source {recorded} is not a queue that exists")

    def max_bytes(self, url: str) -> int:
        """The destination's MaximumMessageSize (an envelope that does not fit goes as the original,
        as from the queue); SQS's smallest maximum when it cannot be read."""
        if url not in self._max_bytes:
            try:
                attributes = self.sqs.get_queue_attributes(
                    QueueUrl=url, AttributeNames=["MaximumMessageSize"]
                )
                self._max_bytes[url] = int(attributes["Attributes"]["MaximumMessageSize"])
            except (ClientError, KeyError, ValueError):
                self._max_bytes[url] = DEFAULT_MAX_MESSAGE_BYTES
        return self._max_bytes[url]

    def sender(self, url: str) -> Sender:
        if url not in self._senders:
            self._senders[url] = sqs_sender(self.sqs, url, message_group_id=self.message_group_id)
        return self._senders[url]


class _Run:
    def __init__(
        self,
        objects: ArchiveObjects,
        destination: _Destination,
        *,
        options: RedriveOptions,
        again: bool,
        run_id: str,
        now: Callable[[], datetime],
        pacer: Pacer,
        invoker: Sender | None = None,
        s3: Any = None,
    ) -> None:
        self.objects, self.destination = objects, destination
        self.options, self.again, self.now, self.pacer = options, again, now, pacer
        # --to-function: the Invoke, and the payloads of records that point into S3 (read with the
        # archive's S3 client: the same credentials)
        self.invoker = invoker
        self.stored = StoredPayloads(s3) if options.to_function else None
        self.memory = RunMemory()
        self.report = ArchiveRedrive(run_id=run_id, dry_run=options.dry_run)

    def one(self, found: Found) -> bool:
        """Send one selected record and mark it; False ends the run (the rest stays as it is)."""
        assert found.stored is not None
        assert found.message is not None
        report, message = self.report, found.message
        if _marked_by(found.stored, report.run_id) or (found.redriven and not self.again):
            report.already.append(found)
            return True
        repeat = self.memory.repeat(message)
        if repeat is not None:
            report.repeated.append((found, repeat))
            return True
        if self.stored is not None:
            return self._to_function(found, message, self.stored)
        url, why = self.destination.url(found)
        if url is None:
            report.unrouted.append((found, why))
            return True
        refused = refusal(message, replace(self.options, to_queue_url=url))
        if refused is not None:
            report.failed.append((found, refused))
            return True
        if self.options.dry_run:
            self.memory.took(message)
            report.moved.append((found, url, None))
            return True
        return self._send(found, message, url)

    def _to_function(self, found: Found, message: ExhaustedMessage, stored: StoredPayloads) -> bool:
        report = self.report
        if not stored.select(message):  # its payload is in S3 and could not be read back
            report.failed.append((found, stored.unreadable[-1][1]))
            report.stopped = stored.stopped
            return stored.stopped is None
        refused = refusal(message, self.options)
        if refused is not None:
            report.failed.append((found, refused))
            return True
        if self.options.dry_run:
            self.memory.took(message)
            report.moved.append((found, self.options.function or message.source, None))
            return True
        return self._send(found, message, None)

    def _send(self, found: Found, message: ExhaustedMessage, url: str | None) -> bool:
        """Send to the queue ``url``, or (None) invoke the function the record failed in."""
        report = self.report
        try:
            if url is None:
                assert self.invoker is not None
                outgoing = outgoing_message(
                    message,
                    reset_attempts=self.options.reset_attempts,
                    now=self.now(),
                    to_function=True,
                    function=self.options.function,
                )
                sender, url = self.invoker, str(outgoing.function)
            else:
                outgoing = outgoing_message(
                    message,
                    reset_attempts=self.options.reset_attempts,
                    now=self.now(),
                    max_bytes=self.destination.max_bytes(url),
                )
                sender = self.destination.sender(url)
            self.pacer.wait()
            sent_id = sender(message, outgoing)
        except Exception as exc:  # nothing was sent: the record stays unmarked, for a later run
            report.failed.append((found, describe_error(exc)))
            if _message_level(exc):
                return True
            report.stopped = f"send failed: {describe_error(exc)}"
            return False
        self.memory.took(message, sent_id)
        report.moved.append((found, url, sent_id))
        if outgoing.note:
            report.notes.append((found, outgoing.note))
        mark: RedriveMark = {
            "at": format_time(self.now()),
            "to": url,
            "message_id": sent_id or "",
            "run": report.run_id,
        }
        why = self._mark(found, mark)
        if why is not None:  # sent, not marked: a later run would send it again; stop here
            report.unmarked.append((found, why))
            report.stopped = f"sent {found.key.key} but could not mark it: {why}"
            return False
        return True

    def _mark(self, found: Found, mark: RedriveMark) -> str | None:
        """Why the mark could not be written; None once it is there."""
        stored = found.stored
        assert stored is not None
        for _ in range(MARK_TRIES):
            try:
                if self.objects.mark(stored, mark):
                    return None
                stored = self.objects.read(stored.key)  # changed meanwhile: read it again
            except ArchiveReadError as exc:
                return str(exc)
            except Exception as exc:
                return describe_error(exc)
            if _marked_by(stored, self.report.run_id):
                return None
        return f"the object kept changing ({MARK_TRIES} conditional writes refused)"


def _message_level(exc: BaseException) -> bool:
    """As the queue redrive decides: an error about this message alone lets the run go on."""
    if isinstance(exc, ClientError):
        return exc.response.get("Error", {}).get("Code", "") in MESSAGE_ERRORS
    return isinstance(exc, ValueError | KeyError | TypeError | ParamValidationError)


def _check(args: argparse.Namespace) -> None:
    if args.native:
        raise UsageError("--native: not with --archive (SQS's move task works on a queue)")
    if args.to_function and args.to_queue_url:
        raise UsageError("--to-function or --to-queue-url, not both")


def _print(report: ArchiveRedrive, now: datetime) -> None:
    for found, why in report.failed:
        print(f"failed {found.chain_id} ({found.key.key}): {why} (not marked)", file=sys.stderr)
    for found, why in report.unrouted:
        print(f"not routed {found.chain_id} ({found.key.key}): {why}", file=sys.stderr)
    for item in report.unreadable:
        print(f"unreadable {item.key}: {item.why} (left in place)", file=sys.stderr)
    for found, why in report.repeated:
        print(f"left {found.chain_id} ({found.key.key}): {why}", file=sys.stderr)
    for found, note in report.notes:
        print(f"note {found.chain_id}: {note}", file=sys.stderr)
    rows = [
        (
            f.chain_id,
            f.message.outcome if f.message else "?",
            (f.message.error_type or "-") if f.message else "-",
            age_text(f.message.age_seconds(now)) if f.message else "?",
            short(to, 50),
        )
        for f, to, _id in report.moved
    ]
    left = (f", already redriven {len(report.already)}" if report.already else "") + (
        f", left {len(report.repeated)} of chains this run moved" if report.repeated else ""
    )
    trouble = (f", not routed {len(report.unrouted)}" if report.unrouted else "") + (
        f", unreadable {len(report.unreadable)}" if report.unreadable else ""
    )
    if report.dry_run:
        if rows:
            print_table(f"would redrive {len(rows)}", ["id", "outcome", "error type", "age", "to"], rows)
        print(
            f"dry run: would redrive {len(report.moved)} of {report.listed} listed, would skip "
            f"{report.skipped}, would refuse {len(report.failed)}{trouble}{left}; nothing was changed"
        )
        return
    print(
        f"redriven {len(report.moved)} of {report.listed} listed, skipped {report.skipped}, failed "
        f"{len(report.failed)}{trouble}{left} (run {report.run_id})"
    )
    if report.stopped:
        print(f"stopped early: {report.stopped}; records not redriven are unmarked", file=sys.stderr)


def cmd_redrive_archive(args: argparse.Namespace) -> int:
    _check(args)
    clock = command_clock()
    location = args.archive
    options = RedriveOptions(
        from_queue_url=str(location),
        to_queue_url=args.to_queue_url,
        max_messages=args.max,
        rate=args.rate,
        reset_attempts=args.reset_attempts,
        dry_run=args.dry_run,
        message_group_id=args.message_group_id,
        to_function=bool(args.to_function),
        function=args.to_function if isinstance(args.to_function, str) else None,
    )
    filters = archive_filters(args, location, clock.now())
    s3 = s3_client(args)
    objects = ArchiveObjects(s3, location)
    destination = _Destination(sqs_client(args), args.to_queue_url, args.message_group_id)
    keys = list(listed_keys(objects, filters))  # the run's set, fixed before the first send
    where = args.to_queue_url or "each record's source queue"
    if args.to_function:
        where = (
            f"function {args.to_function}"
            if isinstance(args.to_function, str)
            else "the function that failed"
        )
    if not args.dry_run and not confirm(
        args,
        f"redrive up to {len(keys)} record(s) of {location} to {where}?",
        change="redrive sends messages and marks archive records (--dry-run shows which)",
    ):
        return 1
    run = _Run(
        objects,
        destination,
        options=options,
        again=args.again,
        run_id=uuid.uuid4().hex,
        now=clock.now,
        pacer=Pacer(args.rate, time.monotonic, time.sleep),
        invoker=lambda_sender(lambda_client(args)) if args.to_function and not args.dry_run else None,
        s3=s3,
    )
    report = run.report
    report.listed = len(keys)
    verb = "dry run of" if args.dry_run else "redriving"
    print(f"{verb} {location} -> {where} (run {report.run_id})", file=sys.stderr)
    with Progress("redrive", len(keys)) as progress:
        for done, key in enumerate(keys, 1):
            verdict = judge(objects, filters, key, read=True)
            if isinstance(verdict, Unreadable):
                report.unreadable.append(verdict)
            elif verdict is None:
                report.skipped += 1
            elif not run.one(verdict):
                break
            progress.update(done, f"moved {len(report.moved)} failed {len(report.failed)}")
            if args.max is not None and len(report.moved) + len(report.failed) >= args.max:
                break
    if args.json:
        print(json.dumps(report.as_json(), indent=2))
    else:
        _print(report, clock.now())
    return 0 if report.complete else 1
