"""SQS message move tasks (StartMessageMoveTask, ListMessageMoveTasks, CancelMessageMoveTask), which
moto 5.2 does not implement, emulated as SQS runs them: in the background, at their rate.

What the API reference says, and what is emulated here:

- the source must be the dead-letter queue of an SQS queue (a redrive policy names it); the
  destination, when given, a queue of the same type (FIFO to FIFO, standard to standard); without
  one, each message goes back to the queue it came from, its ``DeadLetterQueueSourceArn`` (set when
  the redrive policy moved it: see ``moto_fidelity.sqs_dead_letter_source_arn_missing``). A message
  without it (sent to the DLQ directly) cannot go back anywhere: the task fails, saying so;
- ``MaxNumberOfMessagesPerSecond`` is 1 to 500; unset, SQS picks a rate from the backlog (here:
  500). The messages counted at the start (``ApproximateNumberOfMessagesToMove``) move oldest first,
  each as a new message (new id, new retention), at that rate on the emulator's logical clock; a
  message in flight waits until it is visible again, one deleted meanwhile is skipped;
- one running task per source queue; ListMessageMoveTasks gives the most recent tasks, newest first
  (MaxResults 1 to 10, default 1), and a ``TaskHandle`` only for a task still RUNNING;
  CancelMessageMoveTask stops a RUNNING task (CANCELLING, then CANCELLED), keeping what moved.
"""

from __future__ import annotations

import copy
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from serverless_retry_tools.local.emulator.patching import Undo

__all__ = ["DEFAULT_RATE", "MAX_RATE", "MoveTask", "MoveTasks", "install"]

MAX_RATE = 500  # "The maximum value for messages per second is 500."
DEFAULT_RATE = MAX_RATE  # unset: SQS optimises for the backlog; the emulator takes the maximum
MAX_RESULTS = 10
_DEAD_LETTER_SOURCE = "DeadLetterQueueSourceArn"
_IDLE_WAIT_SECONDS = 0.05  # real seconds between looks while every remaining message is in flight


@dataclass
class MoveTask:
    handle: str
    source_arn: str
    destination_arn: str | None
    rate: int | None
    started_ms: int  # logical
    pending: list[Any]  # moto Message objects still to move, oldest first
    to_move: int = 0
    moved: int = 0
    status: str = "RUNNING"
    failure: str | None = None
    thread: threading.Thread | None = field(default=None, repr=False)

    def describe(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "Status": self.status,
            "SourceArn": self.source_arn,
            "ApproximateNumberOfMessagesMoved": self.moved,
            "ApproximateNumberOfMessagesToMove": self.to_move,
            "StartedTimestamp": self.started_ms,
        }
        if self.status == "RUNNING":
            out["TaskHandle"] = self.handle  # only for running tasks, as ListMessageMoveTasks does
        if self.destination_arn:
            out["DestinationArn"] = self.destination_arn
        if self.rate is not None:
            out["MaxNumberOfMessagesPerSecond"] = self.rate
        if self.failure:
            out["FailureReason"] = self.failure
        return out


class MoveTasks:
    """Every move task of one emulator, each moving messages in a thread of its own."""

    def __init__(self, now: Callable[[], float], real_seconds: Callable[[float], float]) -> None:
        self._now = now  # logical Unix seconds
        self._real_seconds = real_seconds  # logical seconds -> real seconds to sleep
        self._tasks: dict[str, list[MoveTask]] = {}
        self._lock = threading.Lock()
        self._closed = threading.Event()

    # -- the API ----------------------------------------------------------------------------------------
    def start(self, backend: Any, source_arn: str, destination_arn: str | None, rate: Any) -> MoveTask:
        from moto.sqs.exceptions import InvalidParameterValue

        if rate is not None and (isinstance(rate, bool) or not 1 <= int(rate) <= MAX_RATE):
            raise InvalidParameterValue(
                f"Value {rate} for parameter MaxNumberOfMessagesPerSecond is invalid. "
                f"Reason: must be between 1 and {MAX_RATE}."
            )
        source = queue_by_arn(backend, source_arn, "SourceArn")
        if not [q for q in backend.queues.values() if q.dead_letter_queue is source]:
            raise InvalidParameterValue("Source queue must be configured as a Dead Letter Queue.")
        if destination_arn:
            destination = queue_by_arn(backend, destination_arn, "DestinationArn")
            if bool(destination.fifo_queue) != bool(source.fifo_queue):
                raise InvalidParameterValue(
                    "The source queue and the destination queue must be of the same type (both FIFO or "
                    "both standard)."
                )
        with self._lock:
            tasks = self._tasks.setdefault(source_arn, [])
            if any(t.status in ("RUNNING", "CANCELLING") for t in tasks):
                raise InvalidParameterValue(
                    "There is already a task running. Only one active task is allowed for a source queue "
                    "arn at a given time."
                )
            with source._messages_lock:
                pending = sorted(source._messages, key=lambda m: m.sent_timestamp or 0)
            task = MoveTask(
                handle=str(uuid.uuid4()),
                source_arn=source_arn,
                destination_arn=destination_arn or None,
                rate=int(rate) if rate is not None else None,
                started_ms=int(self._now() * 1000),
                pending=pending,
                to_move=len(pending),
            )
            tasks.insert(0, task)
        task.thread = threading.Thread(
            target=self._run, args=(backend, source, task), name=f"move-task-{task.handle[:8]}", daemon=True
        )
        task.thread.start()
        return task

    def list(self, backend: Any, source_arn: str, max_results: Any) -> list[dict[str, Any]]:
        from moto.sqs.exceptions import InvalidParameterValue

        limit = 1 if max_results is None else int(max_results)
        if not 1 <= limit <= MAX_RESULTS:
            raise InvalidParameterValue(
                f"Value {max_results} for parameter MaxResults is invalid. Reason: must be between 1 and "
                f"{MAX_RESULTS}."
            )
        queue_by_arn(backend, source_arn, "SourceArn")
        with self._lock:
            return [t.describe() for t in self._tasks.get(source_arn, [])[:limit]]

    def cancel(self, handle: str) -> int:
        from moto.sqs.exceptions import InvalidParameterValue

        with self._lock:
            for tasks in self._tasks.values():
                for task in tasks:
                    if task.handle == handle and task.status == "RUNNING":
                        task.status = "CANCELLING"  # the task's thread ends it at its next step
                        return task.moved
        raise InvalidParameterValue("Task does not exist or is not running.")

    def close(self) -> None:
        self._closed.set()

    def wait(self, task: MoveTask, timeout: float) -> None:
        """For tests: until the task's thread ends (or ``timeout`` real seconds)."""
        if task.thread is not None:
            task.thread.join(timeout)

    # -- the task -----------------------------------------------------------------------------------------
    def _run(self, backend: Any, source: Any, task: MoveTask) -> None:
        rate = task.rate or DEFAULT_RATE
        started = task.started_ms / 1000
        done = 0  # messages dealt with: moved, or skipped because they were gone
        while not self._closed.is_set():
            with self._lock:
                if task.status == "CANCELLING":
                    task.status = "CANCELLED"
                    return
                if not task.pending:
                    task.status = "COMPLETED"
                    return
            # Message n (0-based) may move once n / rate logical seconds have passed since the start.
            due_in = done / rate - (self._now() - started)
            if due_in > 0:
                self._closed.wait(min(self._real_seconds(due_in), 1.0))
                continue
            message = self._next_movable(source, task)
            if message is None:
                self._closed.wait(_IDLE_WAIT_SECONDS)  # the rest is in flight: wait until visible
                continue
            try:
                moved = self._move(backend, source, task, message)
            except Exception as exc:  # the destination is gone, or refuses the message
                with self._lock:
                    task.status, task.failure = "FAILED", str(getattr(exc, "message", None) or exc)
                return
            with self._lock:
                task.pending.remove(message)
                task.moved += 1 if moved else 0
            done += 1

    def _next_movable(self, source: Any, task: MoveTask) -> Any:
        with source._messages_lock:
            present = {id(m) for m in source._messages}
        for message in list(task.pending):
            if id(message) not in present:
                with self._lock:
                    task.pending.remove(message)  # deleted or expired meanwhile: nothing to move
                continue
            if message.visible and not message.delayed:
                return message
        return None

    def _move(self, backend: Any, source: Any, task: MoveTask, message: Any) -> bool:
        from moto.sqs.exceptions import InvalidParameterValue

        target_arn = task.destination_arn
        if target_arn is None:
            origin = (message.system_attributes or {}).get(_DEAD_LETTER_SOURCE) or {}
            target_arn = origin.get("StringValue")
        if not target_arn:
            raise InvalidParameterValue(
                f"message {message.id} has no DeadLetterQueueSourceArn (it was not moved to this queue by "
                "an SQS redrive policy), so it has no source queue to return to; give a DestinationArn"
            )
        destination = queue_by_arn(backend, target_arn, "DestinationArn")
        with source._messages_lock:
            if message not in source._messages:
                return False
        # Sent first, removed after: a send the destination refuses leaves the message where it was.
        backend.send_message(
            destination.name,
            message.body,
            message_attributes=copy.deepcopy(message.message_attributes) or None,
            group_id=message.group_id,
            deduplication_id=message.deduplication_id,
        )
        with source._messages_lock:
            if message in source._messages:
                source._messages.remove(message)
            source.pending_messages.discard(message)
        return True


def queue_by_arn(backend: Any, arn: str, parameter: str) -> Any:
    from moto.sqs.exceptions import InvalidParameterValue

    for queue in backend.queues.values():
        if queue.queue_arn == arn:
            return queue
    raise InvalidParameterValue(
        f"The resource that you specified for the {parameter} parameter doesn't exist: {arn}"
    )


def install(clock: Any, add: Callable[[Any, str, Any], Undo]) -> Undo:
    """Give moto's SQS the three move-task actions, on ``clock`` (the emulator's LogicalClock, or
    None for real time); ``add`` adds a method moto must not have yet (see moto_patches._add)."""
    from moto.core.responses import ActionResult
    from moto.sqs.responses import SQSResponse

    if clock is None:
        tasks = MoveTasks(time.time, lambda seconds: max(0.0, seconds))
    else:
        tasks = MoveTasks(clock.now, clock.real_seconds)

    def start_message_move_task(self: Any) -> Any:
        task = tasks.start(
            self.sqs_backend,
            self._get_param("SourceArn"),
            self._get_param("DestinationArn"),
            self._get_param("MaxNumberOfMessagesPerSecond"),
        )
        return ActionResult({"TaskHandle": task.handle})

    def list_message_move_tasks(self: Any) -> Any:
        found = tasks.list(self.sqs_backend, self._get_param("SourceArn"), self._get_param("MaxResults"))
        return ActionResult({"Results": found})

    def cancel_message_move_task(self: Any) -> Any:
        moved = tasks.cancel(self._get_param("TaskHandle"))
        return ActionResult({"ApproximateNumberOfMessagesMoved": moved})

    undos = [
        add(SQSResponse, "start_message_move_task", start_message_move_task),
        add(SQSResponse, "list_message_move_tasks", list_message_move_tasks),
        add(SQSResponse, "cancel_message_move_task", cancel_message_move_task),
    ]

    def undo() -> None:
        tasks.close()
        for u in reversed(undos):
            u()

    return undo
