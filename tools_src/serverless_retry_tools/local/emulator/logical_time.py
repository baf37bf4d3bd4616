"""moto's SQS on the emulator's logical clock: one notion of time for queues, schedules and functions.

With a clock scale k, logical now = epoch + (real now - epoch) x k (the
:class:`serverless_retry.clock.ScaledClock` every handler the runtime invokes builds from
SERVERLESS_RETRY_CLOCK_SCALE / _EPOCH). Installed in the emulator child, this makes every SQS
duration and timestamp logical, so a consumer's ``DelaySeconds=60`` is 60 logical seconds at any k
and nothing is converted on the way:

- ``moto.sqs.models`` reads the time through ``unix_time`` / ``unix_time_millis`` (delays,
  visibility timeouts, ChangeMessageVisibility's 12-hour limit, retention, FIFO deduplication
  windows, SentTimestamp, ApproximateFirstReceiveTimestamp, queue timestamps): both are replaced by
  the logical clock in that module only (other services keep real time).
- A long poll wakes when its queue's next delayed or invisible message becomes receivable, not on
  moto's fixed one-second tick (which, multiplied by k, was most of the lateness at high scales).
- A ReceiveMessage pass over a queue is atomic, as on AWS: it sees one instant (moto reads the clock
  once per message and again for the FIFO groups in flight, so a message falling due in between
  could be skipped while a later one of its group was handed out), no other pass of that queue runs
  beside it (the runtime receives from one queue on several threads), and each pass takes the groups
  in flight afresh (moto takes them once per call, so a long poll that began before another receiver
  took a group's message could hand out the next one). The long poll is therefore ours: passes of
  moto's receive with no wait, under the queue's lock, and waits between them.
- ``WaitTimeSeconds`` stays a real duration: it bounds how long an HTTP request is held, and the
  caller's read timeout is real. A long poll therefore returns at once when a message is due and
  otherwise after the same real wait as on AWS.

The clock itself waits for the local runtime (:mod:`serverless_retry_tools.local.clock.held_clock`): every
change of a queue is reported (``on_change``) so the emulator knows when its next message is due.
At k = 1 logical time is real time less the time the clock was held.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from serverless_retry_tools.local.clock.held_clock import HeldClock
from serverless_retry_tools.local.emulator.patching import Undo

__all__ = [
    "LogicalClock",
    "QueueChanged",
    "install_logical_sqs",
    "receivable_due",
]

# A wake-up lands a little after the due instant: moto's "visible" test is a strict comparison.
_WAKE_MARGIN_SECONDS = 0.0005
# How far past a message's due instant (logical ms) the clock is held for it.
_DUE_MARGIN_MS = 1.0
# Never sleep longer than this in one go between two passes of a long poll.
_MAX_WAIT_SECONDS = 1.0
# A queue's lock for its receive passes, kept on the moto Queue object.
_PASS_LOCK = "_serverless_retry_pass_lock"
# A queue's count of changes that can make a message receivable (a send, a delete, a visibility
# change), kept on the moto Queue object and guarded by its ``_messages_lock`` condition.
_CHANGES = "_serverless_retry_changes"


# The emulator's clock: a line that the runtime's due events can hold (see held_clock.py).
LogicalClock = HeldClock

# Called with a moto Queue (its ``_messages_lock`` held) after anything that can change when its next
# message is receivable: a send, a receive, a delete, a visibility change, a purge.
QueueChanged = Callable[[Any], None]


def receivable_due(queue: Any, now: float) -> float | None:
    """The earliest instant (logical Unix seconds; at or before ``now``: already) a message of the
    moto ``queue`` is or becomes receivable; None for an empty queue. In a FIFO queue a group with a
    message in flight is receivable when that message's visibility timeout runs out (or, sooner,
    when it is deleted: a change)."""
    messages = list(queue._messages)
    if not messages:
        return None
    now_ms = now * 1000.0
    blocked: dict[str, float] = {}
    if queue.fifo_queue:
        for m in list(queue._pending_messages):
            if m.group_id is not None and m.visible_at > now_ms:
                blocked[m.group_id] = min(blocked.get(m.group_id, m.visible_at), m.visible_at)
    due_ms = min(
        blocked[m.group_id] if m.group_id in blocked else max(m.visible_at, m.delayed_until) for m in messages
    )
    # Just after: moto's "visible" is a strict comparison, and a clock held at the instant itself
    # would never show the message.
    return (due_ms + _DUE_MARGIN_MS) / 1000.0


def install_logical_sqs(clock: HeldClock, on_change: QueueChanged | None = None) -> Undo:
    """Run moto's SQS (in this process) on ``clock``, telling ``on_change`` of every change of a
    queue that can move its next receivable message; returns the undo."""
    from moto.core import utils as core_utils
    from moto.sqs import models

    real_unix_time: Callable[[Any], float] = core_utils.unix_time
    # .now: the instant of this thread's receive pass, or None; .seen: the queue's changes then.
    scan = threading.local()

    def unix_time(dt: Any = None) -> float:
        if dt is not None:
            return real_unix_time(dt)
        frozen: float | None = getattr(scan, "now", None)
        return clock.now() if frozen is None else frozen

    def unix_time_millis(dt: Any = None) -> float:
        return unix_time(dt) * 1000.0

    queue_cls = models.Queue
    backend_cls = models.SQSBackend
    original_receive = backend_cls.__dict__["receive_message"]

    def changed(queue: Any) -> None:
        with queue._messages_lock:
            queue.__dict__[_CHANGES] = queue.__dict__.get(_CHANGES, 0) + 1
            queue._messages_lock.notify_all()
            if on_change is not None:
                on_change(queue)

    def wait_for_messages(queue: Any, timeout: float) -> None:
        """Sleep until the queue changed since this thread's last pass, or a hidden or delayed
        message falls due, or ``timeout`` (real seconds). Not until "a message is visible": in a
        FIFO queue a visible message behind its group's message in flight cannot be received, and a
        poll woken by it would pass again and again until its wait ran out."""
        with queue._messages_lock:
            if queue.__dict__.get(_CHANGES, 0) != getattr(scan, "seen", None):
                return
            now_ms = clock.now() * 1000.0
            upcoming = [
                max(m.visible_at, m.delayed_until)
                for m in queue._messages
                if max(m.visible_at, m.delayed_until) > now_ms
            ]
            wait = min(float(timeout), _MAX_WAIT_SECONDS)
            if upcoming:
                due_in = clock.real_seconds((min(upcoming) - now_ms) / 1000.0) + _WAKE_MARGIN_SECONDS
                wait = min(wait, due_in)
            queue._messages_lock.wait(timeout=wait)

    def notifying(original: Any, queue_of: Any) -> Any:
        """``original``, then the change noted on the queue it acted on (also when it raised)."""

        def call(self: Any, *args: Any, **kwargs: Any) -> Any:
            try:
                return original(self, *args, **kwargs)
            finally:
                changed(queue_of(self, *args, **kwargs))

        return call

    def the_queue(queue: Any, *_: Any, **__: Any) -> Any:
        return queue

    def named_queue(backend: Any, queue_name: str, *_: Any, **__: Any) -> Any:
        return backend.get_queue(queue_name)

    def receive_message(
        self: Any, queue_name: str, count: int, wait_seconds_timeout: int, *args: Any, **kwargs: Any
    ) -> Any:
        queue = self.get_queue(queue_name)
        lock = queue.__dict__.get(_PASS_LOCK) or queue.__dict__.setdefault(_PASS_LOCK, threading.Lock())
        end = time.monotonic() + (wait_seconds_timeout or 0)  # WaitTimeSeconds: real seconds
        while True:
            with lock:
                with queue._messages_lock:
                    scan.seen = queue.__dict__.get(_CHANGES, 0)
                scan.now = clock.now()
                try:
                    result = original_receive(self, queue_name, count, 0, *args, **kwargs)
                finally:
                    scan.now = None
                    if on_change is not None:
                        with queue._messages_lock:
                            on_change(queue)  # received: in flight until its visibility runs out
            left = end - time.monotonic()
            if result or left <= 0:
                return result
            queue.wait_for_messages(left)

    replaced: list[tuple[Any, str, Any]] = [
        (models, "unix_time", unix_time),
        (models, "unix_time_millis", unix_time_millis),
        (queue_cls, "wait_for_messages", wait_for_messages),
        (queue_cls, "add_message", notifying(queue_cls.__dict__["add_message"], the_queue)),
        (queue_cls, "delete_message", notifying(queue_cls.__dict__["delete_message"], the_queue)),
        (
            backend_cls,
            "change_message_visibility",
            notifying(backend_cls.__dict__["change_message_visibility"], named_queue),
        ),
        (backend_cls, "receive_message", receive_message),
        (backend_cls, "purge_queue", notifying(backend_cls.__dict__["purge_queue"], named_queue)),
    ]
    saved = [(owner, name, getattr(owner, name)) for owner, name, _ in replaced]
    for owner, name, new in replaced:
        setattr(owner, name, new)

    def undo() -> None:
        for owner, name, old in saved:
            setattr(owner, name, old)

    return undo
