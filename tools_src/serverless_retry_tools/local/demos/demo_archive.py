"""The archive in the demos: what the archiver took from the terminal queues, read back from S3, and
the retention step every demo ends with.

The demos apply their example with ``archive_enabled = true``: modules/archive drains the terminal
queues into S3 as messages arrive. The records are read with the archive's own store
(:class:`serverless_retry.archive.store.ArchiveStore`), the reader the operator's commands use too.

The retention step: logical time jumps past the exhausted queue's retention (``Emulator.advance_clock``;
SQS's ceiling is 14 days, and what SQS still held then would no longer be received), the queue is
shown empty, and the operator's commands
run as an operator would run them, the installed ``serverless-retry`` executable against the
emulator: ``inspect --archive`` with a filter, then ``redrive --archive --max 1 --yes``. The redriven
message runs through the deployment again and ends where its behaviour takes it: processed, or
archived again as a new chain, while the record it came from carries the redrive's mark.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import boto3
from botocore.exceptions import ClientError
from serverless_retry.archive.record import DEAD_DIR, ArchiveRecord
from serverless_retry.archive.store import ArchiveStore

from serverless_retry_tools.commands.archive_location import parse_archive_location
from serverless_retry_tools.local.demos.demo_frame import ExampleRun, logical_duration, run_until_settled
from serverless_retry_tools.local.demos.demo_queues import queue_depth
from serverless_retry_tools.local.runtime.runtime import Runtime

__all__ = [
    "ARCHIVE_VARIABLES",
    "RetentionResult",
    "archive_counts",
    "archive_expiration_days",
    "archive_records",
    "print_archive",
    "retention_step",
    "run_cli",
]

# What every demo applies its example with: the archive on.
ARCHIVE_VARIABLES: dict[str, Any] = {"archive_enabled": True}
# Past the queue's retention by this much: a jump to exactly the retention could still find the last
# message SQS keeps.
_PAST_RETENTION_SECONDS = 3600
_CLI_TIMEOUT_SECONDS = 120
_SHOWN_LINES = 16  # of inspect's report: the counts and the oldest few


def archive_records(s3: Any, location: str) -> list[ArchiveRecord]:
    """Every record of the archive at ``location`` (``s3://bucket/prefix/``), in key order."""
    where = parse_archive_location(location)
    store = ArchiveStore(s3, where.bucket, where.prefix)
    return [store.get(key)[0] for key in store.list()]


def archive_counts(records: Sequence[ArchiveRecord]) -> dict[str, Counter[str]]:
    """The records by the queue they came from (``place``) and by outcome."""
    return {
        "place": Counter(r["place"] for r in records),
        "outcome": Counter(r["outcome"] for r in records),
    }


def print_archive(location: str, records: Sequence[ArchiveRecord], out: Callable[..., None]) -> None:
    """The archive's location and counts, as a line of the demo's report."""
    counts = archive_counts(records)
    out(
        f"archive {location}: {len(records)} record(s); from "
        + (", ".join(f"{k} {v}" for k, v in sorted(counts["place"].items())) or "nowhere")
        + "; by outcome "
        + (", ".join(f"{k} {v}" for k, v in sorted(counts["outcome"].items())) or "none"),
        stamp=False,
    )


def archive_expiration_days(s3: Any, location: str) -> int | None:
    """The days the bucket's lifecycle keeps a record under ``<prefix>dead/``, None without a rule."""
    where = parse_archive_location(location)
    dead = f"{where.prefix}{DEAD_DIR}"
    try:
        rules = s3.get_bucket_lifecycle_configuration(Bucket=where.bucket).get("Rules", [])
    except ClientError:
        return None
    for rule in rules:
        prefix = (rule.get("Filter") or {}).get("Prefix", rule.get("Prefix"))
        days = (rule.get("Expiration") or {}).get("Days")
        if rule.get("Status") == "Enabled" and prefix == dead and isinstance(days, int):
            return days
    return None


def run_cli(env: Mapping[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    """The installed ``serverless-retry`` with the emulator's environment (a script: --yes needed)."""
    cli = shutil.which("serverless-retry", path=str(Path(sys.executable).parent)) or "serverless-retry"
    clean = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    return subprocess.run(
        [cli, *args],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        env={**clean, **env},
        timeout=_CLI_TIMEOUT_SECONDS,
        check=False,
    )


@dataclass
class RetentionResult:
    """What the retention step showed."""

    retention_seconds: int
    expiration_days: int | None
    jumped_seconds: float  # logical seconds the clock jumped
    queue_depth: int  # the exhausted queue after the jump
    archived_before: int
    inspected: int  # records inspect listed with the step's filters
    redriven_from: str = ""  # the key of the record redriven
    redriven_message_id: str = ""  # the message the redrive sent
    ended: str = ""  # where the redriven message ended: "processed", "archived: <outcome>", "" unknown
    ended_key: str = ""
    archived_after: int = 0
    redrive_skipped: str = ""  # why the step made no redrive ("" when it made one)
    errors: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        redriven = bool(self.redrive_skipped) or (bool(self.redriven_message_id) and bool(self.ended))
        return not self.errors and self.queue_depth == 0 and redriven


def _advance(run: ExampleRun, seconds: float) -> float:
    """Jump the emulator's logical clock; the logical seconds it moved (less than asked when a due
    event the runtime has not dispatched stops it)."""
    before = run.emulator.clock.now().timestamp()
    return run.emulator.advance_clock(seconds) - before


def retention_step(
    run: ExampleRun,
    *,
    location: str,
    queue_url: str,
    queue_label: str,
    filters: Sequence[str],
    redrive_options: Sequence[str] = (),
    no_redrive: str = "",
    in_transit: Callable[[], Mapping[str, int]],
    processed: Callable[[str], bool],
    deadline_seconds: float = 90.0,
) -> RetentionResult:
    """Logical time past ``queue_url``'s retention, then ``inspect`` and ``redrive --max 1`` of the
    archive's records selected by ``filters`` (CLI filter options; ``redrive_options``: the
    redrive's own, e.g. its target, none for the queue each record names; ``no_redrive``: why the
    step ends after inspect instead), and the redriven message run until
    ``in_transit`` is empty: archived again (a record the archive did not hold before), else
    ``processed(message_id)``."""
    out, emulator = run.out, run.emulator
    kwargs = emulator.client_kwargs()
    sqs = boto3.client("sqs", **kwargs)
    s3 = boto3.client("s3", **kwargs)
    env = emulator.env()
    errors: list[str] = []

    def finish(result: RetentionResult) -> RetentionResult:
        result.errors = tuple(errors)
        for error in errors:
            out(f"RETENTION STEP FAILED: {error}", stamp=False)
        (run.work_dir / "retention.json").write_text(json.dumps(asdict(result), indent=1))
        return result

    attrs = sqs.get_queue_attributes(QueueUrl=queue_url, AttributeNames=["MessageRetentionPeriod"])
    retention = int(attrs["Attributes"]["MessageRetentionPeriod"])
    expiration = archive_expiration_days(s3, location)
    before = archive_records(s3, location)
    out(stamp=False)
    out(
        f"retention step 1/4: the {queue_label} keeps a message {logical_duration(retention)} "
        f"({retention // 86_400} days); the archive keeps a record "
        + (
            f"{expiration} days (its lifecycle rule)"
            if expiration is not None
            else "until deleted (no lifecycle rule)"
        )
    )
    wanted = retention + _PAST_RETENTION_SECONDS
    jumped = _advance(run, wanted)
    out(
        f"logical time jumped {logical_duration(jumped)} (asked {logical_duration(wanted)}): past the {queue_label}'s retention"
    )
    if jumped < retention:
        errors.append(f"the clock jumped {jumped:.0f} s only, not past the retention of {retention} s")
    depth = queue_depth(sqs, queue_url)
    out(
        f"retention step 2/4: the {queue_label} holds {depth} message(s); the archive still holds "
        f"{len(before)} record(s)"
    )
    if depth:
        errors.append(f"the {queue_label} still holds {depth} message(s) the archiver never took")

    shown = run_cli(env, "inspect", "--archive", location, *filters)
    out(f"retention step 3/4: serverless-retry inspect --archive {location} {' '.join(filters)}")
    for line in shown.stdout.rstrip().splitlines()[:_SHOWN_LINES]:
        out(f"  {line}", stamp=False)
    inspect = run_cli(env, "inspect", "--archive", location, *filters, "--json")
    listed = 0
    if inspect.returncode == 0:
        listed = int(json.loads(inspect.stdout).get("scanned", 0))
    else:
        errors.append(f"inspect failed ({inspect.returncode}): {inspect.stderr.strip()[-300:]}")
    if not listed:
        errors.append("inspect listed no record for the filters")
        return finish(RetentionResult(retention, expiration, jumped, depth, len(before), listed))

    if no_redrive:
        out(f"retention step 4/4: no redrive: {no_redrive}")
        skipped = RetentionResult(retention, expiration, jumped, depth, len(before), listed)
        skipped.redrive_skipped = no_redrive
        return finish(skipped)
    command = ("redrive", "--archive", location, *filters, *redrive_options, "--max", "1", "--yes")
    redrive = run_cli(env, *command)
    out(f"retention step 4/4: serverless-retry {' '.join(command)}")
    for line in redrive.stdout.rstrip().splitlines()[-4:]:
        out(f"  {line}", stamp=False)
    if redrive.returncode != 0:
        errors.append(f"redrive failed ({redrive.returncode}): {redrive.stderr.strip()[-300:]}")
    marked = [(r["key"], mark) for r in archive_records(s3, location) for mark in r["redriven"]]
    if len(marked) != 1:
        errors.append(f"expected one record marked redriven, found {len(marked)}")
        return finish(RetentionResult(retention, expiration, jumped, depth, len(before), listed))
    key, mark = marked[0]
    new_id = mark["message_id"]
    out(
        f"redriven {key.rsplit('/', 1)[-1]} to {mark['to'].rsplit('/', 1)[-1]} as message {new_id}; running it"
    )
    runtime = Runtime(emulator.url, region=emulator.region, work_dir=run.work_dir / "runtime-redrive")
    settled = run_until_settled(
        runtime,
        out,
        in_transit=in_transit,
        progress=lambda counts: [", ".join(f"{k} {v}" for k, v in counts.items())],
        quiet_checks=2,
        deadline_seconds=deadline_seconds,
        finals="message",
        summary=lambda: f"{runtime.stats['batches']} batches",
    )
    after = archive_records(s3, location)
    known = {r["key"] for r in before}
    again = [r for r in after if r["key"] not in known]
    result = RetentionResult(
        retention, expiration, jumped, depth, len(before), listed, key, new_id, archived_after=len(after)
    )
    if again:
        result.ended, result.ended_key = f"archived: {again[0]['outcome']}", again[0]["key"]
        out(
            f"the redriven message went through its retries again and ended archived again: {again[0]['outcome']} "
            f"after {again[0]['attempt']} attempt(s) ({again[0]['error_type'] or 'no error'}), "
            f"{result.ended_key.rsplit('/', 1)[-1]}"
        )
    elif processed(new_id):
        result.ended = "processed"
        out("the redriven message was processed this time")
    else:
        errors.append(f"the redriven message {new_id} is neither processed nor archived again")
    marks = [m for r in after if r["key"] == key for m in r["redriven"]]
    out(
        f"the record redriven keeps its mark: {len(marks)} redrive(s)"
        + "".join(f", at {m['at']} to {m['to'].rsplit('/', 1)[-1]} as {m['message_id']}" for m in marks)
    )
    print_archive(location, after, out)
    if not settled:
        errors.append("the redriven message did not settle before the deadline")
    return finish(result)
