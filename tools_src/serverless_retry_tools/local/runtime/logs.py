"""Ship what local functions print to the emulator's CloudWatch Logs, as Lambda does.

Each line a worker writes (the handler's logs, Powertools' JSON, EMF metric lines, and the runtime's
START/END/REPORT lines) becomes a log event in the function's log group (its LoggingConfig.LogGroup,
by default ``/aws/lambda/<name>``) and log stream, so ``logs filter-log-events`` against the
emulator shows what CloudWatch would. A copy goes to ``<work_dir>/logs/<function>.log``.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

__all__ = ["LogShipper"]

_FLUSH_INTERVAL_SECONDS = 0.3
_MAX_BATCH = 5_000  # PutLogEvents accepts 10,000 events; stay well inside


class LogShipper:
    def __init__(
        self,
        logs_client: Any,
        log_dir: Path,
        *,
        echo: bool = False,
        tap: Callable[[str, str], None] | None = None,
    ) -> None:
        self._logs = logs_client
        self._tap = tap
        self._log_dir = log_dir
        self._echo = echo
        self._pending: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
        self._known_groups: set[str] = set()
        self._known_streams: set[tuple[str, str]] = set()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.errors: list[str] = []
        log_dir.mkdir(parents=True, exist_ok=True)

    def __call__(self, function: str, group: str, stream: str, line: str) -> None:
        now_ms = int(time.time() * 1000)
        with self._lock:
            self._pending[(group, stream)].append({"timestamp": now_ms, "message": line or " "})
        with (self._log_dir / f"{function}.log").open("a", encoding="utf-8") as fh:
            fh.write(line + "\n")
        if self._echo:
            print(f"[{function}] {line}", flush=True)
        if self._tap is not None:
            self._tap(function, line)

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="log-shipper", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(_FLUSH_INTERVAL_SECONDS):
            self.flush()
        self.flush()

    def flush(self) -> None:
        with self._lock:
            pending, self._pending = self._pending, defaultdict(list)
        for (group, stream), events in pending.items():
            try:
                self._ensure(group, stream)
                for i in range(0, len(events), _MAX_BATCH):
                    self._logs.put_log_events(
                        logGroupName=group, logStreamName=stream, logEvents=events[i : i + _MAX_BATCH]
                    )
            except Exception as exc:  # logs are best effort: never stop the runtime for them
                self.errors.append(f"{group}/{stream}: {exc}")

    def _ensure(self, group: str, stream: str) -> None:
        if group not in self._known_groups:
            # Lambda creates its log group when the function's role may; Terraform usually has.
            with contextlib.suppress(self._logs.exceptions.ResourceAlreadyExistsException):
                self._logs.create_log_group(logGroupName=group)
            self._known_groups.add(group)
        if (group, stream) not in self._known_streams:
            with contextlib.suppress(self._logs.exceptions.ResourceAlreadyExistsException):
                self._logs.create_log_stream(logGroupName=group, logStreamName=stream)
            self._known_streams.add((group, stream))

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)
            self._thread = None
        else:
            self.flush()
