"""EventBridge Pipes with an SQS source, run locally (moto stores pipes but never runs them).

For each pipe whose CurrentState is RUNNING (read from ListPipes / DescribePipe on every refresh,
so a stopped, updated or deleted pipe is followed): receive a batch from the source queue with the
pipe's SqsQueueParameters (BatchSize, MaximumBatchingWindowInSeconds, the window in logical
seconds), pass the SQS records to the enrichment Lambda if there is one, and deliver the items to
the target: an event bus (PutEvents, one entry per item, Source and DetailType from
EventBridgeEventBusParameters or Pipes' defaults), an SQS queue, an SNS topic or a Lambda function.

Enrichment, as EventBridge Pipes documents it (pipes-enrichment, eb-pipes-batching-concurrency): it
is invoked synchronously with the batch as a JSON array, even for one record; its response (at most
6 MB) goes to the target as it is: an array is the items, any other value is one item, and an empty
response (``""``, ``{}``, ``[]`` or null) filters the batch out: the target is not invoked and the
batch counts as processed. A response with more items than the target takes in one batch (10 for
an event bus, SQS queue or SNS topic) does not invoke the target: the batch fails. There is no
partial batch failure for enrichment.

The source messages are deleted only when enrichment and delivery both succeeded (or the
enrichment filtered them out); otherwise they return after the queue's visibility timeout, and its
redrive policy applies. A throttled enrichment or Lambda target (reserved concurrency 0) fails the
batch the same way. Not emulated (a warning says so): FilterCriteria, InputTemplate, and
non-SQS sources.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from typing import Any

from serverless_retry_tools.local.aws_rules.sqs_events import sqs_event
from serverless_retry_tools.local.runtime.functions import InvocationResult, Throttled
from serverless_retry_tools.local.runtime.polling import delete_messages, receive_batch
from serverless_retry_tools.local.runtime.runner_services import RunnerServices

__all__ = ["PipeRunner"]

_REFRESH_SECONDS = 0.5
ENRICHMENT_RESPONSE_LIMIT = 6 * 1024 * 1024
# The most items a target takes in one batch; a Lambda target takes any number (up to 6 MB).
TARGET_BATCH_LIMITS = {"events": 10, "sqs": 10, "sns": 10}


def enrichment_items(result: Any) -> list[Any]:
    """The items an enrichment response hands to the target (empty: filtered out)."""
    if result in (None, "", {}, []):
        return []
    return list(result) if isinstance(result, list) else [result]


class PipeRunner:
    def __init__(self, services: RunnerServices, stop: threading.Event) -> None:
        self._rt = services
        self._stop = stop
        self._pipes: dict[str, dict[str, Any]] = {}
        self._lock = threading.Lock()
        self.threads: dict[str, threading.Thread] = {}

    def loop(self) -> None:
        pipes = self._rt.client("pipes")
        while not self._stop.is_set():
            try:
                self._refresh(pipes)
            except Exception as exc:
                self._rt.emit("error", where="list_pipes", error=repr(exc))
            self._stop.wait(_REFRESH_SECONDS)

    def _refresh(self, pipes: Any) -> None:
        found: dict[str, dict[str, Any]] = {}
        token: str | None = None
        for _ in range(100):  # bounded pagination
            page = pipes.list_pipes(**({"NextToken": token} if token else {}))
            for summary in page.get("Pipes", []):
                found[summary["Name"]] = pipes.describe_pipe(Name=summary["Name"])
            token = page.get("NextToken")
            if not token:
                break
        with self._lock:
            self._pipes = found
        for name in found:
            if name not in self.threads or not self.threads[name].is_alive():
                thread = threading.Thread(target=self._poll, args=(name,), name=f"pipe-{name}", daemon=True)
                self.threads[name] = thread
                thread.start()

    def _pipe(self, name: str) -> dict[str, Any] | None:
        with self._lock:
            return self._pipes.get(name)

    def _poll(self, name: str) -> None:
        sqs = self._rt.client("sqs")
        while not self._stop.is_set():
            pipe = self._pipe(name)
            if pipe is None:
                return
            if pipe.get("CurrentState") != "RUNNING" or not self._supported(pipe):
                self._stop.wait(_REFRESH_SECONDS)
                continue
            try:
                self._once(sqs, pipe)
            except Exception as exc:
                self._rt.emit("error", where=f"pipe {name}", error=repr(exc))
                self._stop.wait(1.0)

    def _supported(self, pipe: dict[str, Any]) -> bool:
        name, source = pipe["Name"], str(pipe.get("Source", ""))
        problems = []
        if source.split(":")[2:3] != ["sqs"]:
            problems.append(f"source {source} (only SQS sources run locally)")
        if (pipe.get("SourceParameters") or {}).get("FilterCriteria"):
            problems.append("FilterCriteria")
        if (pipe.get("EnrichmentParameters") or {}).get("InputTemplate"):
            problems.append("an enrichment InputTemplate")
        if (pipe.get("TargetParameters") or {}).get("InputTemplate"):
            problems.append("a target InputTemplate")
        if problems:
            self._rt.warn_once(
                f"pipe:{name}", f"pipe {name} uses {', '.join(problems)}: not emulated, skipped"
            )
            return False
        return True

    def _once(self, sqs: Any, pipe: dict[str, Any]) -> None:
        source = pipe["Source"]
        params = (pipe.get("SourceParameters") or {}).get("SqsQueueParameters") or {}
        url = self._rt.queue_url(sqs, source)
        messages = receive_batch(
            sqs,
            url,
            int(params.get("BatchSize") or 10),
            self._rt.clock.real_duration(float(params.get("MaximumBatchingWindowInSeconds") or 0)),
            self._stop,
        )
        if not messages:
            return
        items: list[Any] = sqs_event(messages, source, self._rt.region)["Records"]
        error = ""
        enrichment = pipe.get("Enrichment")
        if enrichment:
            try:
                result = self._rt.functions.invoke(enrichment, items)
            except Throttled as exc:  # the batch comes back, as after any enrichment failure
                result = InvocationResult(
                    request_id="", ok=False, error={"errorType": "Throttled", "errorMessage": str(exc)}
                )
            if not result.ok:
                error = f"enrichment failed: {result.error_text}"
            elif len(json.dumps(result.result).encode()) > ENRICHMENT_RESPONSE_LIMIT:
                error = "enrichment failed: its response is larger than 6 MB"
            else:
                items = enrichment_items(result.result)
        limit = TARGET_BATCH_LIMITS.get(str(pipe["Target"]).split(":")[2])
        if not error and limit is not None and len(items) > limit:
            error = f"the enrichment returned {len(items)} items; the target takes at most {limit} per batch"
        if not error and items:
            try:
                self._deliver(pipe, items)
            except Exception as exc:
                error = f"target failed: {exc!r}"
        if not error:
            for failure in delete_messages(sqs, url, messages, [m["MessageId"] for m in messages]):
                self._rt.emit("error", where="delete_message_batch", error=str(failure))
        self._rt.count(pipe_batches=1, pipe_messages=len(messages))
        self._rt.emit(
            "pipe", pipe=pipe["Name"], size=len(messages), items=len(items), ok=not error, why=error
        )

    def _deliver(self, pipe: dict[str, Any], items: list[Any]) -> None:
        target: str = pipe["Target"]
        params = pipe.get("TargetParameters") or {}
        service = target.split(":")[2]
        senders: dict[str, Callable[[str, dict[str, Any], list[Any]], None]] = {
            "events": self._to_bus,
            "sqs": self._to_queue,
            "sns": self._to_topic,
            "lambda": self._to_function,
        }
        if service not in senders:
            raise NotImplementedError(f"pipe target service {service!r} is not emulated")
        senders[service](target, {**params, "_pipe": pipe["Name"]}, items)

    def _to_bus(self, target: str, params: dict[str, Any], items: list[Any]) -> None:
        bus = params.get("EventBridgeEventBusParameters") or {}
        entries = []
        for item in items:
            entry: dict[str, Any] = {
                "Source": bus.get("Source") or f"Pipe {params['_pipe']}",
                "DetailType": bus.get("DetailType") or "Event from aws:sqs",
                "Detail": json.dumps(item),
                "EventBusName": target,
            }
            if bus.get("Resources"):
                entry["Resources"] = bus["Resources"]
            entries.append(entry)
        # One PutEvents for the batch (at most 10 entries: checked before delivery).
        response = self._rt.client("events").put_events(Entries=entries)
        if response.get("FailedEntryCount"):
            raise RuntimeError(f"PutEvents rejected {response['FailedEntryCount']} entries")

    def _to_queue(self, target: str, params: dict[str, Any], items: list[Any]) -> None:
        sqs = self._rt.client("sqs")
        url = self._rt.queue_url(sqs, target)
        group = (params.get("SqsQueueParameters") or {}).get("MessageGroupId")
        for item in items:
            extra = {"MessageGroupId": group} if group else {}
            sqs.send_message(
                QueueUrl=url, MessageBody=item if isinstance(item, str) else json.dumps(item), **extra
            )

    def _to_topic(self, target: str, params: dict[str, Any], items: list[Any]) -> None:
        sns = self._rt.client("sns")
        for item in items:
            sns.publish(TopicArn=target, Message=item if isinstance(item, str) else json.dumps(item))

    def _to_function(self, target: str, params: dict[str, Any], items: list[Any]) -> None:
        mode = (params.get("LambdaFunctionParameters") or {}).get("InvocationType", "REQUEST_RESPONSE")
        if mode == "FIRE_AND_FORGET":
            self._rt.invoke_async(target, json.dumps(items))
            return
        result = self._rt.functions.invoke(target, items)
        if not result.ok:
            raise RuntimeError(result.error_text)
