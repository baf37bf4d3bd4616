"""Directories the runtime builds once and shares between workers (a function's unpacked code, a
layer's /opt, a host build of a distribution): built in a staging directory, marked complete last,
then renamed into place, so a worker never reads a half-written tree."""

from __future__ import annotations

from pathlib import Path

__all__ = ["COMPLETE", "is_complete", "publish"]

COMPLETE = ".serverless-retry-complete"  # written last into a tree


def is_complete(target: Path) -> bool:
    return (target / COMPLETE).exists()


def publish(staging: Path, target: Path, marker: str) -> None:
    """Mark ``staging`` complete (``marker``: what it was built from) and rename it to ``target``;
    another runtime's complete copy already there wins (the caller removes ``staging`` after)."""
    (staging / COMPLETE).write_text(marker)
    try:
        staging.rename(target)
    except OSError:
        if not is_complete(target):  # not another runtime's complete copy
            raise
