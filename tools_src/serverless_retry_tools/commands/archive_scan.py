"""One object of the archive judged by the filters, read only when needed; shared by the archive forms
of ``inspect``, ``redrive`` and ``discard``. Also the few words of text their reports share."""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from typing import Any

from serverless_retry.archive.record import RedriveMark
from serverless_retry.redrive.queue import ExhaustedMessage

from serverless_retry_tools.commands import aws
from serverless_retry_tools.commands.archive_location import ArchiveKey
from serverless_retry_tools.commands.archive_objects import ArchiveObjects, ArchiveReadError, StoredRecord
from serverless_retry_tools.commands.archive_select import ArchiveFilters, record_message

__all__ = ["Found", "Unreadable", "age_text", "judge", "s3_client", "short"]


def s3_client(args: argparse.Namespace) -> Any:
    """For ``--archive``: the bucket the archiver writes (AWS_ENDPOINT_URL under the emulator)."""
    return aws._client("s3", args)


@dataclass(frozen=True)
class Found:
    key: ArchiveKey
    stored: StoredRecord | None = None  # None: not read (nothing needed its body)
    message: ExhaustedMessage | None = None

    @property
    def chain_id(self) -> str:
        return self.message.envelope_id if self.message is not None else self.key.chain_id

    @property
    def redriven(self) -> list[RedriveMark]:
        return list(self.stored.record["redriven"]) if self.stored is not None else []


@dataclass(frozen=True)
class Unreadable:
    key: str
    why: str


def judge(
    objects: ArchiveObjects, filters: ArchiveFilters, key: ArchiveKey, *, read: bool
) -> Found | Unreadable | None:
    """The object if the filters select it (read when ``read`` or a filter needs its body), None when
    they do not, Unreadable when it had to be read and is no record: reported, the run goes on."""
    if not (read or filters.needs_body(key)):
        return Found(key)
    try:
        stored = objects.read(key.key)
        message = record_message(stored.record)
    except ArchiveReadError as exc:
        return Unreadable(key.key, str(exc))
    except (KeyError, TypeError, ValueError, AttributeError) as exc:  # parsed, but not as a record reads
        return Unreadable(key.key, f"not a readable record: {type(exc).__name__}: {exc}")
    if not filters.record_selects(stored.record, message):
        return None
    return Found(key, stored, message)


def age_text(seconds: float | None) -> str:
    """90s, 15.0m, 2.5h, 3.0d (as inspect prints a queue's ages)."""
    if seconds is None:
        return "?"
    for unit, size in (("d", 86_400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds / size:.1f}{unit}"
    return f"{seconds:.0f}s"


def short(text: str, limit: int = 60) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"
