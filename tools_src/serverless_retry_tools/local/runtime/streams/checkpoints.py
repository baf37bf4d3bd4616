"""How far each shard of each stream mapping got: its checkpoint (the last sequence number up to
which every record is done: processed or discarded) and, per record the function processed, how long
it waited (logical seconds between its arrival and the invocation that succeeded with it). Kept by
the runner, read by a demo or a test through :meth:`Checkpoints.snapshot`."""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

__all__ = ["Checkpoints", "ShardProgress"]


@dataclass(frozen=True)
class ShardProgress:
    checkpoint: str | None = None  # every record up to this sequence number is done; None: none yet
    waited: Mapping[str, float] = field(default_factory=dict)  # sequence number -> logical seconds
    discarded: tuple[str, ...] = ()  # sequence numbers given up (on-failure destination)


class Checkpoints:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._checkpoint: dict[tuple[str, str], str] = {}
        self._waited: dict[tuple[str, str], dict[str, float]] = {}
        self._discarded: dict[tuple[str, str], list[str]] = {}

    def get(self, mapping: str, shard: str) -> str | None:
        with self._lock:
            return self._checkpoint.get((mapping, shard))

    def processed(self, mapping: str, shard: str, waited: Mapping[str, float]) -> None:
        with self._lock:
            self._waited.setdefault((mapping, shard), {}).update(waited)

    def discarded(self, mapping: str, shard: str, sequence_numbers: Iterable[str]) -> None:
        with self._lock:
            self._discarded.setdefault((mapping, shard), []).extend(sequence_numbers)

    def advance(self, mapping: str, shard: str, checkpoint: str) -> None:
        with self._lock:
            self._checkpoint[(mapping, shard)] = checkpoint

    def snapshot(self) -> Mapping[str, Mapping[str, ShardProgress]]:
        """mapping UUID -> shard id -> its progress, as of now (read-only copies)."""
        with self._lock:
            keys = set(self._checkpoint) | set(self._waited) | set(self._discarded)
            out: dict[str, dict[str, ShardProgress]] = {}
            for mapping, shard in keys:
                out.setdefault(mapping, {})[shard] = ShardProgress(
                    checkpoint=self._checkpoint.get((mapping, shard)),
                    waited=MappingProxyType(dict(self._waited.get((mapping, shard), {}))),
                    discarded=tuple(self._discarded.get((mapping, shard), [])),
                )
        return MappingProxyType({m: MappingProxyType(s) for m, s in out.items()})
