"""Run the emulator's asynchronous Lambda invocations with Lambda's async semantics.

Every async invocation the emulator accepts (Invoke with InvocationType=Event, an SNS delivery, an
EventBridge rule target, a Scheduler Lambda target, a Lambda destination) waits in its internal queue
(:mod:`serverless_retry_tools.local.emulator.async_patches`). This runner drains it, reading each function's
event invoke configuration (GetFunctionEventInvokeConfig) when the event's turn comes, and applies
:mod:`serverless_retry_tools.local.aws_rules.lambda_async`:

- too old (MaximumEventAgeInSeconds) -> discarded unrun: EventAgeExceeded;
- run in the function's worker with the invocation's request id (the same on every retry);
- a function error -> queued again with Lambda's delay (60 s, then 120 s, logical) while
  MaximumRetryAttempts allows, else discarded: RetriesExhausted;
- throttled (its reserved concurrency in use, or 0) -> queued again, 1 s doubling to 5 min
  (logical), not counted as an attempt, until the event is too old;
- success -> the on-success destination; discarded -> the on-failure destination and the function's
  own dead-letter queue (DeadLetterConfig).

Nothing is lost on our side: the next attempt or the destination record is sent *before* the queued
message is deleted (a crash in between repeats the step: at least once, as Lambda). What AWS loses,
the runner loses too, with a ``destination-failed`` event saying why (a FIFO queue or topic, a record
too large for the queue) and Lambda's DestinationDeliveryFailures metric. An S3 destination gets the
record as an object under ``aws/lambda/async/<function-name>/``, as Lambda writes it. Several invocations run at once (different
functions in parallel, and one function's up to its concurrency cap, each in a worker of its own: see
:mod:`serverless_retry_tools.local.runtime.functions`).
"""

from __future__ import annotations

import json
import math
import threading
import uuid
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

from botocore.exceptions import ClientError

from serverless_retry_tools.local.aws_rules.lambda_async import (
    ASYNC_QUEUE_NAME,
    AsyncSettings,
    Queued,
    after_attempt,
    after_throttle,
    dead_letter_attributes,
    destination_kind,
    destination_record,
    error_payload,
    eventbridge_entry,
    on_pickup,
    s3_bucket_of,
    s3_destination_key,
    sns_destination_message,
)
from serverless_retry_tools.local.emulator_contract import ACCOUNT_ID
from serverless_retry_tools.local.runtime.functions import Throttled
from serverless_retry_tools.local.runtime.runner_services import RunnerServices

if TYPE_CHECKING:
    from serverless_retry_tools.local.runtime.functions import InvocationResult

__all__ = ["AsyncRunner", "event_id"]

_WORKERS = 4
_WAIT_SECONDS = 1
# Long enough (logical) for the longest Lambda timeout (900 real seconds) at the emulator's scale.
_MAX_VISIBILITY_SECONDS = 43_200


def event_id(event: Any) -> str:
    """The id a user would follow an event by: an SNS record's MessageId, an EventBridge event's id
    (for progress output and the demo's accounting); "" for anything else."""
    if isinstance(event, dict):
        records = event.get("Records")
        if isinstance(records, list) and len(records) == 1 and isinstance(records[0], dict):
            sns = records[0].get("Sns")
            if isinstance(sns, dict) and isinstance(sns.get("MessageId"), str):
                return str(sns["MessageId"])
        if "detail-type" in event and isinstance(event.get("id"), str):
            return str(event["id"])
    return ""


def _queue_arn(url: str, region: str) -> str:
    """The ARN of an emulator queue from its URL (``.../<account>/<name>``)."""
    account, name = url.rstrip("/").split("/")[-2:]
    return f"arn:aws:sqs:{region}:{account}:{name}"


class DestinationError(RuntimeError):
    """Lambda could not deliver the record (its DestinationDeliveryFailures)."""


class AsyncRunner:
    def __init__(self, services: RunnerServices, stop: threading.Event, *, workers: int = _WORKERS) -> None:
        self._rt = services
        self._stop = stop
        self._pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="lambda-async")
        self._free = workers
        self._free_lock = threading.Condition()
        self._url: str | None = None
        self.threads: dict[str, threading.Thread] = {}

    # -- the drain loop -----------------------------------------------------------------------------
    def announce(self) -> None:
        """Before the loop starts: logical time waits for the internal queue's events from now on,
        also for the first one, which creates the queue before this loop can see it."""
        self._rt.clock_holder.ready(_queue_arn(f"/{ACCOUNT_ID}/{ASYNC_QUEUE_NAME}", self._rt.region), True)

    def loop(self) -> None:
        sqs = self._rt.client("sqs")
        visibility = min(_MAX_VISIBILITY_SECONDS, math.ceil(960 * self._rt.clock.scale))
        while not self._stop.is_set():
            try:
                url = self._queue_url(sqs)
                if url is None:
                    self._stop.wait(0.5)
                    continue
                # Logical time waits for a due event (a retry's delay, a visibility timeout) only
                # while a worker is free to take it.
                arn = _queue_arn(url, self._rt.region)
                with self._free_lock:
                    busy = self._free == 0
                if busy:
                    self._rt.clock_holder.ready(arn, False)
                with self._free_lock:
                    while self._free == 0 and not self._stop.is_set():
                        self._free_lock.wait(0.5)
                    room = min(10, self._free)
                self._rt.clock_holder.ready(arn, room > 0)
                if room == 0:
                    continue
                messages = sqs.receive_message(
                    QueueUrl=url,
                    MaxNumberOfMessages=room,
                    WaitTimeSeconds=_WAIT_SECONDS,
                    VisibilityTimeout=visibility,
                ).get("Messages", [])
                for message in messages:
                    with self._free_lock:
                        self._free -= 1
                    self._pool.submit(self._run, url, message)
            except Exception as exc:
                self._rt.emit("error", where="lambda async queue", error=repr(exc))
                self._stop.wait(1.0)

    def _queue_url(self, sqs: Any) -> str | None:
        if self._url is None:
            try:
                self._url = str(sqs.get_queue_url(QueueName=ASYNC_QUEUE_NAME)["QueueUrl"])
            except sqs.exceptions.QueueDoesNotExist:
                return None  # nothing was invoked asynchronously yet
        return self._url

    def close(self) -> None:
        self._pool.shutdown(wait=True, cancel_futures=True)

    def _run(self, url: str, message: dict[str, Any]) -> None:
        try:
            if self._stop.is_set():
                return  # left in the queue: it comes back after its visibility timeout
            queued: Queued = json.loads(message["Body"])
            self.handle(queued)
            self._rt.client("sqs").delete_message(QueueUrl=url, ReceiptHandle=message["ReceiptHandle"])
        except Exception as exc:
            self._rt.emit("error", where="lambda async invocation", error=repr(exc))
        finally:
            with self._free_lock:
                self._free += 1
                self._free_lock.notify()

    # -- one invocation -----------------------------------------------------------------------------
    def now_ms(self) -> int:
        return int(self._rt.clock.now().timestamp() * 1000)

    def _settings(self, queued: Queued) -> AsyncSettings:
        lam = self._rt.client("lambda")
        try:
            config = lam.get_function_event_invoke_config(
                FunctionName=queued["function_arn"], Qualifier=queued["qualifier"]
            )
        except lam.exceptions.ResourceNotFoundException:
            config = None
        return AsyncSettings.from_config(config)

    def handle(self, queued: Queued) -> None:
        """Run (or discard) one queued invocation and settle it; raises if settling failed."""
        settings = self._settings(queued)
        if on_pickup(settings, queued, self.now_ms()).action == "discard":
            self._discard(
                queued, settings, "EventAgeExceeded", invoke_count=queued["invoke_count"], result=None
            )
            return
        target = (
            queued["function_arn"]
            if queued["qualifier"] == "$LATEST"
            else f"{queued['function_arn']}:{queued['qualifier']}"
        )
        try:
            config = self._rt.functions.describe(target)
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") != "ResourceNotFoundException":
                raise  # left in the queue: it comes back after its visibility timeout
            # Deleted since it was invoked: Lambda drops the event (nothing to run, no record).
            self._rt.emit("async-dropped", function=target, request_id=queued["request_id"], why=str(exc))
            return
        try:
            result = self._rt.functions.invoke(
                config.arn,
                json.loads(queued["payload"]),
                config=config,
                request_id=queued["request_id"],
                throttle=True,  # past the reserve: a 429, the event goes back to the queue
            )
        except Throttled:
            self._throttled(queued, config.name)
            return
        count = queued["invoke_count"] + 1
        self._rt.count(async_invocations=1)
        self._rt.emit(
            "async-invoke",
            function=config.name,
            request_id=queued["request_id"],
            trigger=queued["trigger"],
            attempt=count,
            ok=result.ok,
            error=result.error_text,
            message_id=event_id(json.loads(queued["payload"])),
            logical_ms=self.now_ms(),
        )
        step = after_attempt(settings, count, result.ok)
        if step.action == "success":
            if settings.on_success:
                record = destination_record(
                    queued,
                    condition="Success",
                    at_ms=self.now_ms(),
                    invoke_count=count,
                    response=result.result,
                )
                self._destination(settings.on_success, record, queued)
        elif step.action == "retry":
            self._queue_again({**queued, "invoke_count": count}, step.delay_seconds)
            self._rt.emit(
                "async-retry", function=config.name, request_id=queued["request_id"], delay=step.delay_seconds
            )
        else:
            self._discard(queued, settings, step.condition, invoke_count=count, result=result)

    def _queue_again(self, again: Queued, delay_seconds: int) -> None:
        """Put the next attempt in the internal queue (before the caller deletes this one)."""
        sqs = self._rt.client("sqs")
        sqs.send_message(
            QueueUrl=self._queue_url(sqs), MessageBody=json.dumps(again), DelaySeconds=delay_seconds
        )

    def _throttled(self, queued: Queued, function: str) -> None:
        throttles = queued.get("throttle_count", 0) + 1
        step = after_throttle(throttles)
        self._queue_again({**queued, "throttle_count": throttles}, step.delay_seconds)
        self._rt.count(async_throttles=1)
        self._rt.emit(
            "async-throttled", function=function, request_id=queued["request_id"], delay=step.delay_seconds
        )

    def _discard(
        self,
        queued: Queued,
        settings: AsyncSettings,
        condition: str,
        *,
        invoke_count: int,
        result: InvocationResult | None,
    ) -> None:
        response = (
            None
            if result is None
            else error_payload(result.error, queued["request_id"], timed_out=result.timed_out)
        )
        self._rt.emit(
            "async-discarded",
            function=queued["function_arn"].rsplit(":", 1)[-1],
            request_id=queued["request_id"],
            condition=condition,
            invoke_count=invoke_count,
            destination=settings.on_failure,
        )
        if settings.on_failure:
            record = destination_record(
                queued,
                condition=condition,
                at_ms=self.now_ms(),
                invoke_count=invoke_count,
                response=response,
                function_error="Unhandled" if result is not None else None,
                ran=result is not None,
            )
            self._destination(settings.on_failure, record, queued)
        self._function_dlq(queued, condition, response)

    def _function_dlq(self, queued: Queued, condition: str, response: dict[str, Any] | None) -> None:
        lam = self._rt.client("lambda")
        try:
            configuration = lam.get_function_configuration(FunctionName=queued["function_arn"])
        except lam.exceptions.ResourceNotFoundException:
            return
        target = (configuration.get("DeadLetterConfig") or {}).get("TargetArn")
        if not target:
            return
        message = str((response or {}).get("errorMessage") or condition)
        attributes = dead_letter_attributes(queued["request_id"], "200", message)
        if destination_kind(target) == "sns":
            self._rt.client("sns").publish(
                TopicArn=target, Message=queued["payload"], MessageAttributes=attributes
            )
        else:
            sqs = self._rt.client("sqs")
            sqs.send_message(
                QueueUrl=self._rt.queue_url(sqs, target),
                MessageBody=queued["payload"],
                MessageAttributes=attributes,
            )

    # -- destinations -------------------------------------------------------------------------------
    def _destination(self, arn: str, record: dict[str, Any], queued: Queued) -> None:
        try:
            self._send_record(arn, record)
        except Exception as exc:  # Lambda loses the record too; say so
            self._rt.emit(
                "destination-failed",
                function=queued["function_arn"].rsplit(":", 1)[-1],
                request_id=queued["request_id"],
                destination=arn,
                error=f"{type(exc).__name__}: {exc}",
            )
            self._rt.warn_once(f"destination:{arn}", f"records to destination {arn} are lost: {exc}")
            self._delivery_failure(queued["function_arn"].rsplit(":", 1)[-1])
            return
        self._rt.emit(
            "destination",
            function=queued["function_arn"].rsplit(":", 1)[-1],
            request_id=queued["request_id"],
            condition=record["requestContext"]["condition"],
            destination=arn,
        )

    def _delivery_failure(self, function: str) -> None:
        """Lambda's DestinationDeliveryFailures (AWS/Lambda, FunctionName), to the emulator's CloudWatch."""
        try:
            self._rt.client("cloudwatch").put_metric_data(
                Namespace="AWS/Lambda",
                MetricData=[
                    {
                        "MetricName": "DestinationDeliveryFailures",
                        "Dimensions": [{"Name": "FunctionName", "Value": function}],
                        "Timestamp": self._rt.clock.now(),
                        "Value": 1.0,
                        "Unit": "Count",
                    }
                ],
            )
        except Exception as exc:  # the destination-failed event still says it
            self._rt.warn_once(
                "destination-metric", f"PutMetricData DestinationDeliveryFailures failed: {exc!r}"
            )

    def _send_record(self, arn: str, record: dict[str, Any]) -> None:
        kind = destination_kind(arn)
        text = json.dumps(record, ensure_ascii=False, separators=(",", ":"))
        if kind in ("sqs", "sns") and arn.endswith(".fifo"):
            raise DestinationError(f"a FIFO {'queue' if kind == 'sqs' else 'topic'} cannot be a destination")
        if kind == "sqs":
            sqs = self._rt.client("sqs")
            sqs.send_message(QueueUrl=self._rt.queue_url(sqs, arn), MessageBody=text)
        elif kind == "sns":
            self._rt.client("sns").publish(TopicArn=arn, Message=sns_destination_message(record))
        elif kind == "lambda":
            self._rt.client("lambda").invoke(FunctionName=arn, InvocationType="Event", Payload=text.encode())
        elif kind == "events":
            response = self._rt.client("events").put_events(Entries=[eventbridge_entry(record, bus_arn=arn)])
            if response.get("FailedEntryCount"):
                raise DestinationError(f"PutEvents refused the record: {response.get('Entries')}")
        elif kind == "s3":
            function = record["requestContext"]["functionArn"].split(":")[6]
            self._rt.client("s3").put_object(
                Bucket=s3_bucket_of(arn),
                Key=s3_destination_key(function, self.now_ms(), str(uuid.uuid4())),
                Body=text.encode(),
                ContentType="application/json",
            )
        else:
            raise DestinationError(f"destination {arn} is not emulated")
