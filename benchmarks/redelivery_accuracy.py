"""How close to the scheduled time does an SQS-delay retry come back, on the local emulator?

At clock scale 1, N messages (default 60) go through the real consumer (the deployed
dist/serverless-retry.zip plus a tiny processor) run by the local runtime. Each message fails its
first attempt with ``RetryableError(retry_after=d)``, d from 1 to 8 s, so the consumer re-enqueues it
with ``DelaySeconds = d``; the second attempt succeeds. The processor prints the wall time of each
attempt; error = (start of attempt 2) - (end of attempt 1 + d). That includes the consumer sending
the copy, moto holding it, the runtime's long poll and the invocation.

Baseline, measured in the same run against the same emulator: a plain client sends each message
with ``DelaySeconds = d`` and long-polls for it, error = (received) - (sent + d). The ratio of the
medians shows what the consumer and the runtime add to moto's own delay precision.

    .venv/bin/python benchmarks/redelivery_accuracy.py [--messages 60]
"""

from __future__ import annotations

import argparse
import io
import json
import random
import statistics
import sys
import tempfile
import threading
import time
import zipfile
from pathlib import Path
from typing import Any

import boto3
from serverless_retry_tools.local.emulator import Emulator
from serverless_retry_tools.local.runtime import Runtime

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "dist" / "serverless-retry.zip"

PROCESSOR = """
import json, time
from serverless_retry import RetryableError

def handle(message):
    started = time.time()
    order = message.json()
    if message.retry.attempt == 1:
        print(json.dumps({"bench": "fail", "id": message.retry.id, "t": time.time(), "delay": order["delay"]}), flush=True)
        raise RetryableError("try later", retry_after=order["delay"])
    print(json.dumps({"bench": "ok", "id": message.retry.id, "t": started, "attempt": message.retry.attempt}), flush=True)
"""

POLICY = {
    "max_attempts": 3,
    "backoff": {"strategy": "fixed", "base_seconds": 1},
    "rules": [
        {
            "errors": ["RetryableError"],
            "honor_retry_after": True,
            "backoff": {"strategy": "fixed", "base_seconds": 1},
        }
    ],
    "transport": "sqs-delay",
}


def _zip_with_processor() -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(PACKAGE) as src, zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as dst:
        for item in src.infolist():
            dst.writestr(item, src.read(item.filename))
        dst.writestr("bench_processor.py", PROCESSOR)
    return buf.getvalue()


def _summary(errors: list[float]) -> tuple[float, float, float, float]:
    ordered = sorted(errors)
    p90 = ordered[min(len(ordered) - 1, int(0.9 * len(ordered)))]
    return statistics.median(ordered), p90, max(ordered), min(ordered)


def measure_consumer(emulator: Emulator, delays: list[int], deadline: float) -> list[float]:
    kw = emulator.client_kwargs()
    sqs, lam, iam = (boto3.client(s, **kw) for s in ("sqs", "lambda", "iam"))  # type: ignore[call-overload]
    urls = {
        n: sqs.create_queue(QueueName=f"bench-{n}", Attributes={"VisibilityTimeout": "30"})["QueueUrl"]
        for n in ("src", "exhausted", "dlq")
    }
    arns = {
        n: sqs.get_queue_attributes(QueueUrl=u, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
        for n, u in urls.items()
    }
    role = iam.create_role(RoleName="bench", AssumeRolePolicyDocument="{}")["Role"]["Arn"]
    lam.create_function(
        FunctionName="bench",
        Role=role,
        Handler="serverless_retry.handlers.consumer.handler",
        Runtime="python3.12",
        Timeout=30,
        Code={"ZipFile": _zip_with_processor()},
        Environment={
            "Variables": {
                "SERVERLESS_RETRY_PROCESSOR": "bench_processor:handle",
                "SERVERLESS_RETRY_POLICY": json.dumps(POLICY),
                "SERVERLESS_RETRY_QUEUE_URL": urls["src"],
                "SERVERLESS_RETRY_QUEUE_ARN": arns["src"],
                "SERVERLESS_RETRY_EXHAUSTED_QUEUE_URL": urls["exhausted"],
                "SERVERLESS_RETRY_DLQ_ARN": arns["dlq"],
                "POWERTOOLS_LOG_LEVEL": "WARNING",
            }
        },
    )
    lam.create_event_source_mapping(
        EventSourceArn=arns["src"],
        FunctionName="bench",
        BatchSize=10,
        FunctionResponseTypes=["ReportBatchItemFailures"],
    )
    records: list[dict[str, Any]] = []
    lock = threading.Lock()

    def tap(_function: str, line: str) -> None:
        if line.startswith('{"bench"'):
            with lock:
                records.append(json.loads(line))

    with tempfile.TemporaryDirectory() as work:
        runtime = Runtime(
            emulator.url, region=emulator.region, work_dir=Path(work), clock_scale=1.0, log_tap=tap
        )
        for start in range(0, len(delays), 10):
            sqs.send_message_batch(
                QueueUrl=urls["src"],
                Entries=[
                    {"Id": str(i), "MessageBody": json.dumps({"delay": d})}
                    for i, d in enumerate(delays[start : start + 10])
                ],
            )

        def done() -> bool:
            with lock:
                return sum(1 for r in records if r["bench"] == "ok") >= len(delays)

        if not runtime.run(until=done, deadline_seconds=deadline, check_every=0.2):
            raise SystemExit(
                f"not every message came back within {deadline:.0f} s; runtime errors: {runtime.errors}"
            )
    fails = {r["id"]: r for r in records if r["bench"] == "fail"}
    oks = {r["id"]: r for r in records if r["bench"] == "ok"}
    return [oks[i]["t"] - (fails[i]["t"] + fails[i]["delay"]) for i in oks if i in fails]


def measure_baseline(emulator: Emulator, delays: list[int], deadline: float) -> list[float]:
    sqs = boto3.client("sqs", **emulator.client_kwargs())  # type: ignore[call-overload]
    url = sqs.create_queue(QueueName="bench-baseline")["QueueUrl"]
    sent: dict[str, float] = {}
    for n, d in enumerate(delays):
        sent[str(n)] = time.time() + d
        sqs.send_message(QueueUrl=url, MessageBody=str(n), DelaySeconds=d)
    errors: list[float] = []
    end = time.monotonic() + deadline
    while len(errors) < len(delays) and time.monotonic() < end:
        for m in sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, WaitTimeSeconds=1).get(
            "Messages", []
        ):
            errors.append(time.time() - sent[m["Body"]])
            sqs.delete_message(QueueUrl=url, ReceiptHandle=m["ReceiptHandle"])
    if len(errors) < len(delays):
        raise SystemExit("the baseline did not receive every message")
    return errors


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--messages", type=int, default=60, help="messages per side (>= 50 recommended)")
    parser.add_argument("--seed", type=int, default=3)
    parser.add_argument("--deadline", type=float, default=90.0, help="real seconds allowed per side")
    args = parser.parse_args(argv)
    if not PACKAGE.is_file():
        print(f"{PACKAGE} is missing: run ./build.sh package", file=sys.stderr)
        return 2
    rand = random.Random(args.seed)
    delays = [rand.randint(1, 8) for _ in range(args.messages)]
    with Emulator() as emulator:
        started = time.monotonic()
        ours = measure_consumer(emulator, delays, args.deadline)
        ours_seconds = time.monotonic() - started
        base = measure_baseline(emulator, delays, args.deadline)
    print(
        f"redelivery accuracy at clock scale 1: {args.messages} SQS-delay retries, delays 1-8 s (seed {args.seed})"
    )
    print(f"{'':34} {'median':>8} {'p90':>8} {'max':>8} {'min':>8}   (seconds late; negative = early)")
    for label, errors in (("consumer + local runtime", ours), ("baseline: SendMessage + long poll", base)):
        median, p90, worst, best = _summary(errors)
        print(f"{label:34} {median:8.3f} {p90:8.3f} {worst:8.3f} {best:8.3f}   n={len(errors)}")
    ratio = statistics.median(ours) / statistics.median(base) if statistics.median(base) > 0 else float("inf")
    print(f"median error ratio (ours / baseline): {ratio:.2f}x; consumer side took {ours_seconds:.0f} s")
    early = [e for e in ours if e < -0.05]
    if early:
        print(f"WARNING: {len(early)} retries came back early (by up to {-min(early):.3f} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
