"""An in-memory SQS / EventBridge Scheduler / DynamoDB world on a FrozenClock, fast enough for runs of
tens of thousands of messages, with the semantics the consumer depends on:

- SQS standard: per-message DelaySeconds (0..900), visibility timeouts (ChangeMessageVisibility
  0..43200, from the call), ApproximateReceiveCount / SentTimestamp / ApproximateFirstReceiveTimestamp,
  redrive to a DLQ when a receive would exceed maxReceiveCount, retention (a message older than it
  is deleted wherever it is: recorded as *expired*, i.e. lost), at-least-once (optional duplicate
  deliveries of the same message with a second receipt handle);
- SQS standard: a MessageGroupId is kept and returned (fair queues), and orders nothing;
- SQS FIFO: no per-message delay (refused like AWS), MessageGroupId required, deduplication for 5
  minutes (content-based when the queue has it, else a MessageDeduplicationId is required), and the
  group lock: while any message of a group is in flight, no message of that group is returned;
- Scheduler: one-time ``at()`` schedules; a name that exists is a ConflictException, GetSchedule of
  one that does not (or no longer does) a ResourceNotFoundException; at() in the past,
  a FIFO dead-letter queue, or a FIFO target without a MessageGroupId is a ValidationException; firing
  sends the Input to the target queue and deletes the schedule (ActionAfterCompletion DELETE);
- SQS: a queue's MaximumMessageSize (a larger send is refused), the DLQ keeping a message's original
  enqueue time, SQS's own move of a DLQ back to a source (StartMessageMoveTask: new message ids and
  enqueue times unless told to keep the ids, receive counts from 0), and the calls a client-side
  redrive makes (ReceiveMessage, DeleteMessage, SendMessage, GetQueueAttributes);
- DynamoDB: the conditional UpdateItem (with ReturnValuesOnConditionCheckFailure) and BatchWriteItem
  the claims use, and TTL: an item whose ``expiration`` (epoch seconds) has passed is deleted at a
  random moment within ``ttl_lag_seconds`` after it (AWS deletes expired items within a few days;
  until then they are read and conditioned on like any other).

Clients are duck-typed like boto3's (the calls and the response shapes the consumer reads). Faults are
injected by :class:`Faults` around them, not here.
"""

from __future__ import annotations

import hashlib
import heapq
import itertools
import json
import random
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from botocore.exceptions import ClientError
from serverless_retry.clock import Clock, FrozenClock
from serverless_retry.consumer.claims import CLAIM_CLAUSES, FINAL_CONDITION, FINISH_CONDITION, claim_holds

ACCOUNT = "123456789012"
REGION = "us-east-1"
DEDUP_WINDOW_MS = 300_000
SQS_DEFAULT_MAX_MESSAGE_BYTES = 262_144  # a queue created without MaximumMessageSize
TTL_LAG_SECONDS = 2 * 86_400  # how long after its expiration an item may still be there


def client_error(code: str, operation: str, message: str = "", status: int = 400) -> ClientError:
    return ClientError(
        {"Error": {"Code": code, "Message": message or code}, "ResponseMetadata": {"HTTPStatusCode": status}},  # type: ignore[typeddict-item]
        operation,
    )


@dataclass(slots=True)
class Msg:
    mid: str
    body: str
    attributes: dict[str, Any]
    seq: int
    sent_ms: int
    available_ms: int  # delay end, or end of the current visibility timeout
    group: str | None = None
    receive_count: int = 0
    first_receive_ms: int | None = None
    receipts: set[str] = field(default_factory=set)
    in_flight: bool = False
    dead_letter_source: str | None = None  # the source queue's ARN, for a message SQS dead-lettered


class FakeQueue:
    def __init__(
        self,
        world: World,
        name: str,
        *,
        visibility_timeout: int = 30,
        retention_seconds: int = 345_600,
        dlq: FakeQueue | None = None,
        max_receive_count: int = 5,
        content_based_dedup: bool = False,
        max_message_size: int = SQS_DEFAULT_MAX_MESSAGE_BYTES,
    ) -> None:
        self.world = world
        self.name = name
        self.url = f"https://sqs.{REGION}.amazonaws.com/{ACCOUNT}/{name}"
        self.arn = f"arn:aws:sqs:{REGION}:{ACCOUNT}:{name}"
        self.fifo = name.endswith(".fifo")
        self.visibility_timeout = visibility_timeout
        self.retention_ms = retention_seconds * 1000
        self.dlq = dlq
        self.max_receive_count = max_receive_count
        self.content_based_dedup = content_based_dedup
        self.max_message_size = max_message_size
        self._visibility: int | None = None  # the VisibilityTimeout of the receive under way
        self.messages: dict[str, Msg] = {}
        self._heap: list[tuple[int, int, str]] = []
        self._receipts: dict[str, str] = {}
        self._dedup: dict[str, int] = {}
        self.groups: dict[str, list[str]] = {}  # FIFO: group → message ids in order
        self.expired: list[Msg] = []  # deleted by retention: lost
        self.duplicate_rate = 0.0  # standard queues: chance a receive leaves the message visible

    # -- sending ----------------------------------------------------------------------------------
    def send(
        self,
        body: str,
        *,
        delay: int = 0,
        attributes: dict[str, Any] | None = None,
        group: str | None = None,
        dedup: str | None = None,
        message_id: str | None = None,
    ) -> str:
        """``message_id``: keep this id (a move that keeps ids); None: a new one."""
        if not 0 <= delay <= 900:
            raise client_error("InvalidParameterValue", "SendMessage", "DelaySeconds must be 0..900")
        size = message_size(body, attributes or {})
        if size > self.max_message_size:
            raise client_error(
                "InvalidParameterValue",
                "SendMessage",
                f"Message must be shorter than {self.max_message_size} bytes (got {size})",
            )
        now = self.world.now_ms()
        if self.fifo:
            if delay:
                raise client_error(
                    "InvalidParameterValue", "SendMessage", "per-message DelaySeconds is not valid on FIFO"
                )
            if not group:
                raise client_error("MissingParameter", "SendMessage", "MessageGroupId is required")
            if dedup is None:
                if not self.content_based_dedup:
                    raise client_error("InvalidParameterValue", "SendMessage", "no deduplication id")
                dedup = hashlib.sha256(body.encode()).hexdigest()
            seen = self._dedup.get(dedup)
            if seen is not None and now - seen < DEDUP_WINDOW_MS:
                return f"dedup-{dedup[:12]}"  # accepted, not enqueued again
            self._dedup[dedup] = now
        # A standard queue takes a MessageGroupId too (a fair queue's tenant, SQS 2025): it orders
        # nothing there, but ReceiveMessage returns it.
        seq = next(self.world.seq)
        mid = message_id or f"{self.name[:4]}-{seq:08d}"
        msg = Msg(mid, body, dict(attributes or {}), seq, now, now + delay * 1000, group)
        self.messages[mid] = msg
        heapq.heappush(self._heap, (msg.available_ms, seq, mid))
        if group is not None and self.fifo:
            self.groups.setdefault(group, []).append(mid)
        return mid

    # -- receiving --------------------------------------------------------------------------------
    def _drop(self, msg: Msg) -> None:
        del self.messages[msg.mid]
        for receipt in msg.receipts:
            self._receipts.pop(receipt, None)
        if msg.group is not None and self.fifo:
            members = self.groups[msg.group]
            members.remove(msg.mid)
            if not members:
                del self.groups[msg.group]

    def _expire(self, msg: Msg, now: int) -> bool:
        if now >= msg.sent_ms + self.retention_ms:
            self._drop(msg)
            self.expired.append(msg)
            return True
        return False

    def sweep(self) -> None:
        """Delete every message past the queue's retention (SQS does, received or not)."""
        now = self.world.now_ms()
        for msg in list(self.messages.values()):
            self._expire(msg, now)

    def _deliver(self, msg: Msg, now: int, out: list[dict[str, Any]]) -> None:
        if self.dlq is not None and msg.receive_count >= self.max_receive_count:
            self._drop(msg)  # SQS moves it instead of returning it, keeping its body and attributes
            self.dlq.adopt(msg, source=self.arn)
            return
        msg.receive_count += 1
        if msg.first_receive_ms is None:
            msg.first_receive_ms = now
        receipt = f"rh-{next(self.world.seq)}"
        msg.receipts.add(receipt)
        self._receipts[receipt] = msg.mid
        duplicate = not self.fifo and self.world.rng.random() < self.duplicate_rate
        # A duplicate: the message stays receivable (by a later ReceiveMessage, never the same one).
        timeout = self.visibility_timeout if self._visibility is None else self._visibility
        msg.available_ms = now + 1 if duplicate else now + timeout * 1000
        msg.in_flight = True
        heapq.heappush(self._heap, (msg.available_ms, msg.seq, msg.mid))
        out.append(self.record(msg, receipt))

    def adopt(self, msg: Msg, *, source: str | None = None) -> None:
        """A message SQS dead-lettered here (keeps its id, body and SentTimestamp: a DLQ's retention
        counts from the original enqueue time)."""
        fresh = Msg(
            msg.mid,
            msg.body,
            msg.attributes,
            next(self.world.seq),
            msg.sent_ms,
            self.world.now_ms(),
            msg.group,
            dead_letter_source=source,
        )
        self.messages[fresh.mid] = fresh
        heapq.heappush(self._heap, (fresh.available_ms, fresh.seq, fresh.mid))
        if fresh.group is not None and self.fifo:
            self.groups.setdefault(fresh.group, []).append(fresh.mid)

    def take_all(self) -> list[Msg]:
        """Every message, removed (as a redrive tool's receive-and-delete of a whole DLQ does)."""
        self.sweep()
        taken = sorted(self.messages.values(), key=lambda m: m.seq)
        for msg in taken:
            self._drop(msg)
        return taken

    def take_oldest(self, limit: int) -> list[Msg]:
        """Up to ``limit`` messages not in flight, oldest first, removed (a move task's step)."""
        self.sweep()
        now = self.world.now_ms()
        ready = sorted(
            (m for m in self.messages.values() if not (m.in_flight and m.available_ms > now)),
            key=lambda m: (m.sent_ms, m.seq),
        )[:limit]
        for msg in ready:
            self._drop(msg)
        return ready

    def move(self, msg: Msg, destination: FakeQueue, *, keep_id: bool = False) -> str:
        """SQS's own redrive of one DLQ message (StartMessageMoveTask): body and attributes kept, a
        new enqueue time and receive count; a new message id unless ``keep_id``. FIFO: the group
        kept, deduplicated on the moved message's id."""
        dedup = hashlib.sha256(msg.mid.encode()).hexdigest() if destination.fifo else None
        if keep_id:
            return destination.send(
                msg.body, attributes=msg.attributes, group=msg.group, dedup=dedup, message_id=msg.mid
            )
        return destination.send(msg.body, attributes=msg.attributes, group=msg.group, dedup=dedup)

    def receive(self, limit: int = 10, *, visibility: int | None = None) -> list[dict[str, Any]]:
        """``visibility``: the receive's VisibilityTimeout (None: the queue's)."""
        self._visibility = visibility
        try:
            return self._receive(limit)
        finally:
            self._visibility = None

    def _receive(self, limit: int) -> list[dict[str, Any]]:
        now = self.world.now_ms()
        out: list[dict[str, Any]] = []
        if self.fifo:
            self._receive_fifo(now, limit, out)
            return out
        while self._heap and len(out) < limit and self._heap[0][0] <= now:
            available, _, mid = heapq.heappop(self._heap)
            msg = self.messages.get(mid)
            if msg is None or msg.available_ms != available or self._expire(msg, now):
                continue  # a stale entry, or the message expired
            self._deliver(msg, now, out)
        return out

    def _receive_fifo(self, now: int, limit: int, out: list[dict[str, Any]]) -> None:
        # Clean due heap entries (expiry), then serve groups with nothing in flight, in order.
        while self._heap and self._heap[0][0] <= now:
            available, _, mid = heapq.heappop(self._heap)
            msg = self.messages.get(mid)
            if msg is not None and msg.available_ms == available and not self._expire(msg, now):
                msg.in_flight = False
        for group in sorted(self.groups, key=lambda g: self.messages[self.groups[g][0]].seq):
            members = [self.messages[m] for m in self.groups.get(group, [])]
            if any(m.in_flight and m.available_ms > now for m in members):
                continue  # the group lock
            for msg in members:
                if len(out) >= limit:
                    return
                if self._expire(msg, now):
                    continue
                self._deliver(msg, now, out)

    def record(self, msg: Msg, receipt: str) -> dict[str, Any]:
        """The Lambda event record an event source mapping builds."""
        attributes = {
            "ApproximateReceiveCount": str(msg.receive_count),
            "SentTimestamp": str(msg.sent_ms),
            "SenderId": "AIDAFAKE",
            "ApproximateFirstReceiveTimestamp": str(msg.first_receive_ms),
        }
        if msg.group is not None:
            attributes["MessageGroupId"] = msg.group
        if msg.group is not None and self.fifo:
            attributes["SequenceNumber"] = str(msg.seq).zfill(20)
        return {
            "messageId": msg.mid,
            "receiptHandle": receipt,
            "body": msg.body,
            "attributes": attributes,
            "messageAttributes": {
                name: {"dataType": a["DataType"], "stringValue": a.get("StringValue", "")}
                for name, a in msg.attributes.items()
            },
            "md5OfBody": hashlib.md5(msg.body.encode()).hexdigest(),
            "eventSource": "aws:sqs",
            "eventSourceARN": self.arn,
            "awsRegion": REGION,
        }

    # -- settling ---------------------------------------------------------------------------------
    def delete(self, receipt: str) -> None:
        mid = self._receipts.get(receipt)
        if mid is not None and mid in self.messages:
            self._drop(self.messages[mid])

    def change_visibility(self, receipt: str, timeout: int) -> None:
        if not 0 <= timeout <= 43_200:
            raise client_error("InvalidParameterValue", "ChangeMessageVisibility", "0..43200")
        mid = self._receipts.get(receipt)
        msg = self.messages.get(mid) if mid is not None else None
        now = self.world.now_ms()
        if msg is None or not msg.in_flight or msg.available_ms <= now:
            raise client_error("MessageNotInflight", "ChangeMessageVisibility")
        msg.available_ms = now + timeout * 1000
        heapq.heappush(self._heap, (msg.available_ms, msg.seq, msg.mid))

    def next_event_ms(self) -> int | None:
        while self._heap:
            available, _, mid = self._heap[0]
            msg = self.messages.get(mid)
            if msg is not None and msg.available_ms == available:
                return available
            heapq.heappop(self._heap)
        return None

    def bodies(self) -> Iterator[Msg]:
        """What the queue holds now (past its retention: expired, not held)."""
        self.sweep()
        return iter(sorted(self.messages.values(), key=lambda m: m.seq))

    def api_message(self, record: dict[str, Any], msg: Msg) -> dict[str, Any]:
        """A received message as boto3's ReceiveMessage returns it (all attributes asked for)."""
        system = dict(record["attributes"])
        if msg.dead_letter_source is not None:
            system["DeadLetterQueueSourceArn"] = msg.dead_letter_source
        out: dict[str, Any] = {
            "MessageId": msg.mid,
            "ReceiptHandle": record["receiptHandle"],
            "MD5OfBody": record["md5OfBody"],
            "Body": msg.body,
            "Attributes": system,
        }
        if msg.attributes:
            out["MessageAttributes"] = {name: dict(a) for name, a in msg.attributes.items()}
        return out


def message_size(body: str, attributes: dict[str, Any]) -> int:
    """What SQS counts against MaximumMessageSize: the body and each attribute's name, type and value."""
    size = len(body.encode())
    for name, attribute in attributes.items():
        value = attribute.get("StringValue", attribute.get("BinaryValue", ""))
        raw = value if isinstance(value, bytes) else str(value).encode()
        size += len(name.encode()) + len(str(attribute.get("DataType", "")).encode()) + len(raw)
    return size


class FakeSqsClient:
    def __init__(self, world: World) -> None:
        self.world = world

    def send_message(self, *, QueueUrl: str, MessageBody: str, **params: Any) -> dict[str, Any]:
        queue = self.world.by_url[QueueUrl]
        mid = queue.send(
            MessageBody,
            delay=params.get("DelaySeconds", 0),
            attributes=params.get("MessageAttributes"),
            group=params.get("MessageGroupId"),
            dedup=params.get("MessageDeduplicationId"),
        )
        return {"MessageId": mid}

    def receive_message(self, *, QueueUrl: str, **params: Any) -> dict[str, Any]:
        """What a client-side redrive asks: up to MaxNumberOfMessages, hidden for VisibilityTimeout
        (the queue's own when not given). WaitTimeSeconds is not waited (no time passes here)."""
        queue = self.world.by_url[QueueUrl]
        queue.sweep()
        limit = int(params.get("MaxNumberOfMessages", 1))
        if not 1 <= limit <= 10:
            raise client_error("InvalidParameterValue", "ReceiveMessage", "MaxNumberOfMessages 1..10")
        visibility = params.get("VisibilityTimeout")
        records = queue.receive(limit, visibility=None if visibility is None else int(visibility))
        return {"Messages": [queue.api_message(r, queue.messages[r["messageId"]]) for r in records]}

    def delete_message(self, *, QueueUrl: str, ReceiptHandle: str) -> dict[str, Any]:
        self.world.by_url[QueueUrl].delete(ReceiptHandle)  # an unknown or stale handle: no error, as SQS
        return {}

    def get_queue_attributes(self, *, QueueUrl: str, AttributeNames: list[str]) -> dict[str, Any]:
        queue = self.world.by_url[QueueUrl]
        queue.sweep()
        now = self.world.now_ms()
        hidden = sum(1 for m in queue.messages.values() if m.in_flight and m.available_ms > now)
        delayed = sum(1 for m in queue.messages.values() if not m.in_flight and m.available_ms > now)
        known = {
            "MaximumMessageSize": str(queue.max_message_size),
            "VisibilityTimeout": str(queue.visibility_timeout),
            "MessageRetentionPeriod": str(queue.retention_ms // 1000),
            "ApproximateNumberOfMessages": str(len(queue.messages) - hidden - delayed),
            "ApproximateNumberOfMessagesNotVisible": str(hidden),
            "ApproximateNumberOfMessagesDelayed": str(delayed),
            "QueueArn": queue.arn,
        }
        wanted = known if "All" in AttributeNames else {k: known[k] for k in AttributeNames if k in known}
        return {"Attributes": wanted}

    def send_message_batch(self, *, QueueUrl: str, Entries: list[dict[str, Any]]) -> dict[str, Any]:
        queue = self.world.by_url[QueueUrl]
        if not 1 <= len(Entries) <= 10:
            raise client_error("AWS.SimpleQueueService.TooManyEntriesInBatchRequest", "SendMessageBatch")
        ok, failed = [], []
        for entry in Entries:
            try:
                mid = queue.send(
                    entry["MessageBody"],
                    delay=entry.get("DelaySeconds", 0),
                    attributes=entry.get("MessageAttributes"),
                    group=entry.get("MessageGroupId"),
                    dedup=entry.get("MessageDeduplicationId"),
                )
            except ClientError as exc:
                failed.append({"Id": entry["Id"], "SenderFault": True, "Code": exc.response["Error"]["Code"]})
            else:
                ok.append({"Id": entry["Id"], "MessageId": mid})
        return {"Successful": ok, "Failed": failed}

    def change_message_visibility_batch(
        self, *, QueueUrl: str, Entries: list[dict[str, Any]]
    ) -> dict[str, Any]:
        queue = self.world.by_url[QueueUrl]
        ok, failed = [], []
        for entry in Entries:
            try:
                queue.change_visibility(entry["ReceiptHandle"], entry["VisibilityTimeout"])
            except ClientError as exc:
                failed.append({"Id": entry["Id"], "SenderFault": True, "Code": exc.response["Error"]["Code"]})
            else:
                ok.append({"Id": entry["Id"]})
        return {"Successful": ok, "Failed": failed}


_AT = re.compile(r"at\((\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)\)")


@dataclass
class Schedule:
    name: str
    due_ms: int
    target: dict[str, Any]


class FakeSchedulerClient:
    def __init__(self, world: World) -> None:
        self.world = world
        self.schedules: dict[str, Schedule] = {}
        # (due, name) of every schedule, soonest first: a run holds thousands, and the fault run
        # asks for the due ones and the next one at every step.
        self._due: list[tuple[int, str]] = []
        self.created = 0

    def create_schedule(self, **params: Any) -> dict[str, Any]:
        name = params["Name"]
        if name in self.schedules:
            raise client_error("ConflictException", "CreateSchedule", f"Schedule {name} already exists.", 409)
        match = _AT.fullmatch(params["ScheduleExpression"])
        if match is None:
            raise client_error("ValidationException", "CreateSchedule", "not an at() expression")
        due = datetime.fromisoformat(match[1]).replace(tzinfo=UTC)
        due_ms = int(due.timestamp() * 1000)
        if due_ms < self.world.now_ms():
            raise client_error("ValidationException", "CreateSchedule", "at() is in the past")
        target = params["Target"]
        if target["DeadLetterConfig"]["Arn"].endswith(".fifo"):
            raise client_error("ValidationException", "CreateSchedule", "a FIFO queue cannot be a DLQ here")
        queue = self.world.by_arn[target["Arn"]]
        if queue.fifo and not target.get("SqsParameters", {}).get("MessageGroupId"):
            raise client_error("ValidationException", "CreateSchedule", "FIFO target needs MessageGroupId")
        if params.get("ActionAfterCompletion") != "DELETE":
            raise AssertionError("retry schedules delete themselves")
        self.schedules[name] = Schedule(name, due_ms, target)
        heapq.heappush(self._due, (due_ms, name))
        self.created += 1
        return {"ScheduleArn": f"arn:aws:scheduler:{REGION}:{ACCOUNT}:schedule/{params['GroupName']}/{name}"}

    def get_schedule(self, *, Name: str, GroupName: str) -> dict[str, Any]:
        schedule = self.schedules.get(Name)
        if schedule is None:  # never created, or already fired (and deleted itself)
            raise client_error(
                "ResourceNotFoundException", "GetSchedule", f"Schedule {Name} does not exist.", 404
            )
        return {"Name": Name, "GroupName": GroupName, "Target": schedule.target, "State": "ENABLED"}

    def fire_due(self) -> int:
        """Send each due schedule's Input to its target and delete the schedule (what AWS does)."""
        now = self.world.now_ms()
        fired = 0
        while self._due and self._due[0][0] <= now:
            _, name = heapq.heappop(self._due)
            schedule = self.schedules.pop(name)
            queue = self.world.by_arn[schedule.target["Arn"]]
            group = schedule.target.get("SqsParameters", {}).get("MessageGroupId")
            queue.send(schedule.target["Input"], group=group)  # a FIFO target needs content-based dedup
            fired += 1
        return fired

    def next_event_ms(self) -> int | None:
        return self._due[0][0] if self._due else None


class FakeDynamoDBClient:
    """The calls serverless_retry.consumer.claims makes, with its conditions interpreted (tests/functional/
    test_claims_on_moto.py holds the same calls against moto's DynamoDB, which parses them)."""

    def __init__(
        self,
        clock: Clock | None = None,
        rng: random.Random | None = None,
        *,
        ttl_lag_seconds: float = TTL_LAG_SECONDS,
    ) -> None:
        """With a ``clock``, TTL on ``expiration``: an expired item goes at a random moment (``rng``)
        within ``ttl_lag_seconds`` after its expiration. Without one, items never expire."""
        self.items: dict[str, dict[str, Any]] = {}
        self.clock = clock
        self.rng = rng or random.Random(0)
        self.ttl_lag_seconds = ttl_lag_seconds
        self._gone_at: dict[str, float] = {}  # key → when TTL deletes it (epoch seconds)
        self.ttl_deleted = 0

    def _store(self, key: str, item: dict[str, Any]) -> None:
        self.items[key] = item
        self._gone_at.pop(key, None)
        expiration = item.get("expiration", {}).get("N")
        if self.clock is not None and expiration is not None:
            self._gone_at[key] = int(expiration) + self.rng.uniform(0, self.ttl_lag_seconds)

    def expire(self, key: str | None = None) -> int:
        """Let TTL delete what is due: ``key``'s item, or every item. Returns how many went."""
        if self.clock is None:
            return 0
        now = self.clock.now().timestamp()
        keys = [key] if key is not None else list(self._gone_at)
        gone = 0
        for k in keys:
            at = self._gone_at.get(k)
            if at is not None and at <= now:
                del self._gone_at[k]
                self.items.pop(k, None)
                gone += 1
        self.ttl_deleted += gone
        return gone

    def update_item(self, **params: Any) -> dict[str, Any]:
        key = params["Key"]["id"]["S"]
        self.expire(key)
        held = self.items.get(key)
        names: dict[str, str] = params.get("ExpressionAttributeNames", {})
        values: dict[str, Any] = params["ExpressionAttributeValues"]
        condition = params.get("ConditionExpression")
        if condition is not None and not _holds(condition, held, values):
            error = client_error("ConditionalCheckFailedException", "UpdateItem")
            if params.get("ReturnValuesOnConditionCheckFailure") == "ALL_OLD" and held is not None:
                error.response["Item"] = dict(held)  # type: ignore[typeddict-unknown-key]
            raise error
        item = dict(held) if held is not None else {"id": {"S": key}}
        for action, assignments in _update_clauses(params["UpdateExpression"]):
            for placeholder, value in assignments:
                name = names.get(placeholder, placeholder)
                if action == "SET" and value.startswith("if_not_exists("):
                    item.setdefault(name, values[value.split(",")[1].strip(" )")])  # if_not_exists(name, :v)
                elif action == "SET":
                    item[name] = values[value]
                else:  # ADD of a number
                    item[name] = {"N": str(int(item.get(name, {"N": "0"})["N"]) + int(values[value]["N"]))}
        self._store(key, item)
        if params.get("ReturnValues") == "ALL_OLD" and held is not None:
            return {"Attributes": dict(held)}
        if params.get("ReturnValues") == "ALL_NEW":
            return {"Attributes": dict(item)}
        return {}

    def batch_write_item(self, *, RequestItems: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
        [(_, requests)] = RequestItems.items()
        if len(requests) > 25:
            raise client_error("ValidationException", "BatchWriteItem", "too many items")
        for request in requests:
            item = request["PutRequest"]["Item"]
            self._store(item["id"]["S"], dict(item))
        return {"UnprocessedItems": {}}


def _update_clauses(expression: str) -> list[tuple[str, list[tuple[str, str]]]]:
    """``SET a = :x, b = :y ADD c :z`` as [("SET", [(a, :x), (b, :y)]), ("ADD", [(c, :z)])]."""
    out: list[tuple[str, list[tuple[str, str]]]] = []
    for raw in re.split(r"\b(?=SET |ADD )", expression):
        part = raw.strip()
        if not part:
            continue
        action, rest = part.split(" ", 1)
        pairs = []
        for assignment in re.split(r",(?![^()]*\))", rest):  # (not the comma inside if_not_exists(a, b))
            name, value = assignment.split("=") if action == "SET" else assignment.split()
            pairs.append((name.strip(), value.strip()))
        out.append((action, pairs))
    return out


def _holds(condition: str, held: dict[str, Any] | None, values: dict[str, Any]) -> bool:
    """The claims' conditions, evaluated as DynamoDB does (a missing attribute compares false)."""

    def s(name: str) -> str | None:
        return held[name]["S"] if held is not None and name in held else None

    def n(name: str) -> int | None:
        return int(held[name]["N"]) if held is not None and name in held else None

    if condition == FINAL_CONDITION:
        return s("owner") is None or s("owner") == values[":owner"]["S"]
    if condition == FINISH_CONDITION:
        return s("owner") == values[":owner"]["S"] and n("attempt") == int(values[":attempt"]["N"])
    if CLAIM_CLAUSES not in condition:
        raise AssertionError(f"condition not modelled: {condition}")
    # The claim's condition, as serverless_retry.consumer.claims states it in Python (test_claims compares
    # both with moto's DynamoDB).
    return claim_holds(
        held,
        attempt=int(values[":attempt"]["N"]),
        owner=values[":owner"]["S"],
        generation=int(values.get(":generation", {"N": "0"})["N"]),
        now=int(values[":now"]["N"]),
        predecessors=[v["S"] for k, v in values.items() if k.startswith(":p")],
    )


class World:
    """Queues, a scheduler and a table sharing one FrozenClock."""

    def __init__(self, clock: FrozenClock, rng: Any, *, ttl_rng: random.Random | None = None) -> None:
        """``ttl_rng``: the table deletes expired items (TTL), at moments drawn from it; None: never."""
        self.clock = clock
        self.rng = rng
        self.seq = itertools.count(1)
        self.by_url: dict[str, FakeQueue] = {}
        self.by_arn: dict[str, FakeQueue] = {}
        self.sqs = FakeSqsClient(self)
        self.scheduler = FakeSchedulerClient(self)
        self.dynamodb = FakeDynamoDBClient(clock if ttl_rng is not None else None, ttl_rng)

    def now_ms(self) -> int:
        return int(self.clock.now().timestamp() * 1000)

    def queue(self, name: str, **kwargs: Any) -> FakeQueue:
        queue = FakeQueue(self, name, **kwargs)
        self.by_url[queue.url] = queue
        self.by_arn[queue.arn] = queue
        return queue


def envelope_meta(body: str) -> dict[str, Any] | None:
    try:
        document = json.loads(body)
    except ValueError:
        return None
    meta = document.get("serverless_retry") if isinstance(document, dict) else None
    return meta if isinstance(meta, dict) else None
