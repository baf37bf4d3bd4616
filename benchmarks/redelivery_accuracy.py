"""How late, in logical seconds, does a delayed retry or a schedule arrive on the local emulator, at
clock scales x1, x30 and x100?

For each scale an emulator is started with that clock (its SQS runs on it; the runtime and the
functions share it), and three things are measured, all in logical seconds:

1. consumer + runtime: N messages go through the real consumer (the deployed
   dist/serverless-retry.zip plus a tiny processor) run by the local runtime. Each fails its first
   attempt with ``RetryableError(retry_after=d)``, so the consumer re-enqueues it with
   ``DelaySeconds = d`` (d = 1..8 real seconds' worth: d x scale logical seconds, at most 900); the
   second attempt succeeds. Lateness = when the runtime's poller received the retry copy
   (ApproximateFirstReceiveTimestamp, on the emulator's clock) - (its SentTimestamp + d): what the
   queue's delay and the poller's long poll add. Shown for information: the processor's start -
   due, which adds the invocation; function execution is real time, so at x100 every real
   millisecond of it is 0.1 logical second (the consumer's own send latency is left out too).
2. baseline, same emulator: a plain client sends each message with ``DelaySeconds = d`` and long
   polls; lateness = ApproximateFirstReceiveTimestamp - (SentTimestamp + d). The clock does not wait
   for such a client (only for the runtime's pollers), so this row shows what logical time gives a
   starved receiver: for information, no bound.
3. schedules: N one-time schedules ``at(now + lead)`` with an SQS target, fired by the runtime;
   lateness = SentTimestamp of the delivered message - the at() instant.

4. burst: N copies that all fall due in the same second (d = 3 real seconds' worth for every one):
   lateness as in 1, so Lambda's poller scaling (five batches, then more) is measured too.

Each scale runs twice, on a quiet machine and beside ``--hogs`` CPU-bound processes (each ends by
itself after ``--hog-seconds``, and is stopped when its side is done), and both are printed side by
side: the emulator's clock waits for the runtime's due events (held_clock.py), so a busy machine
stretches real time, not logical time.

Bounds (issue 10): SQS delays within 2 logical seconds, schedules within the Scheduler's documented
one-minute window, in both columns. Timing figures are noisy on a shared machine.

    .venv/bin/python benchmarks/redelivery_accuracy.py [--messages 40] [--scales 1,30,100] [--hogs 2]
"""

from __future__ import annotations

import argparse
import io
import json
import random
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import zipfile
from datetime import timedelta
from pathlib import Path
from typing import Any

import boto3
from serverless_retry_tools.local.emulator.emulator import Emulator
from serverless_retry_tools.local.runtime.runtime import Runtime, RuntimeEvent

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "dist" / "serverless-retry.zip"
SQS_BOUND = 2.0
SCHEDULE_BOUND = 60.0
MAX_SQS_DELAY = 900

PROCESSOR = """
import json, os, time
from serverless_retry import RetryableError

EPOCH = float(os.environ["SERVERLESS_RETRY_CLOCK_EPOCH"])
SCALE = float(os.environ["SERVERLESS_RETRY_CLOCK_SCALE"])

def logical_now():
    return EPOCH + (time.time() - EPOCH) * SCALE

def handle(message):
    started = logical_now()
    order = message.json()
    if message.retry.attempt == 1:
        print(json.dumps({"bench": "fail", "id": message.retry.id}), flush=True)
        raise RetryableError("try later", retry_after=order["delay"])
    attributes = message.record["attributes"]
    sent = int(attributes["SentTimestamp"]) / 1000
    received = int(attributes["ApproximateFirstReceiveTimestamp"]) / 1000
    print(json.dumps({"bench": "ok", "id": message.retry.id, "t": started, "received": received,
                      "due": sent + order["delay"]}), flush=True)
"""

POLICY = {
    "max_attempts": 3,
    "backoff": {"strategy": "fixed", "base_seconds": 1},
    "rules": [
        {
            "errors": ["RetryableError"],
            "honor_retry_after": True,
            "backoff": {"strategy": "fixed", "base_seconds": 1, "max_seconds": MAX_SQS_DELAY},
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


def _queue(sqs: Any, name: str, **attributes: str) -> tuple[str, str]:
    url = sqs.create_queue(QueueName=name, Attributes=attributes)["QueueUrl"]
    arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    return url, arn


def measure_consumer(
    emulator: Emulator, delays: list[int], deadline: float, prefix: str = "bench"
) -> tuple[list[float], list[float]]:
    """(received by the runtime's poller - due, processor started - due), logical seconds."""
    kw = emulator.client_kwargs()
    sqs, lam, iam = (boto3.client(s, **kw) for s in ("sqs", "lambda", "iam"))  # type: ignore[call-overload]
    # 180 logical seconds: the module default (6 x a 30 s function timeout).
    urls, arns = {}, {}
    for n in ("src", "exhausted", "dlq"):
        urls[n], arns[n] = _queue(sqs, f"{prefix}-{n}", VisibilityTimeout="180")
    role = iam.create_role(RoleName=prefix, AssumeRolePolicyDocument="{}")["Role"]["Arn"]
    lam.create_function(
        FunctionName=prefix,
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
        FunctionName=prefix,
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
        runtime = Runtime(emulator.url, region=emulator.region, work_dir=Path(work), log_tap=tap)
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
    oks = [r for r in records if r["bench"] == "ok"]
    return [r["received"] - r["due"] for r in oks], [r["t"] - r["due"] for r in oks]


def measure_baseline(emulator: Emulator, delays: list[int], deadline: float) -> list[float]:
    sqs = boto3.client("sqs", **emulator.client_kwargs())  # type: ignore[call-overload]
    url, _ = _queue(sqs, "bench-baseline")
    for n, d in enumerate(delays):
        sqs.send_message(QueueUrl=url, MessageBody=json.dumps({"n": n, "delay": d}), DelaySeconds=d)
    errors: list[float] = []
    end = time.monotonic() + deadline
    while len(errors) < len(delays) and time.monotonic() < end:
        for m in sqs.receive_message(
            QueueUrl=url,
            MaxNumberOfMessages=10,
            WaitTimeSeconds=1,
            MessageSystemAttributeNames=["All"],
        ).get("Messages", []):
            # When the queue handed it out (on the emulator's logical clock), as in the runtime's row.
            received = int(m["Attributes"]["ApproximateFirstReceiveTimestamp"]) / 1000
            due = int(m["Attributes"]["SentTimestamp"]) / 1000 + json.loads(m["Body"])["delay"]
            errors.append(received - due)
            sqs.delete_message(QueueUrl=url, ReceiptHandle=m["ReceiptHandle"])
    if len(errors) < len(delays):
        raise SystemExit("the baseline did not receive every message")
    return errors


def measure_schedules(emulator: Emulator, leads: list[float], deadline: float) -> list[float]:
    kw = emulator.client_kwargs()
    sqs, scheduler, iam = (boto3.client(s, **kw) for s in ("sqs", "scheduler", "iam"))  # type: ignore[call-overload]
    url, arn = _queue(sqs, "bench-scheduled")
    role = iam.create_role(RoleName="bench-scheduler", AssumeRolePolicyDocument="{}")["Role"]["Arn"]
    events: list[RuntimeEvent] = []
    errors: list[float] = []
    with tempfile.TemporaryDirectory() as work:
        runtime = Runtime(emulator.url, region=emulator.region, work_dir=Path(work), on_event=events.append)
        due_at: dict[str, float] = {}
        for n, lead in enumerate(leads):
            due = (runtime.clock.now() + timedelta(seconds=lead)).replace(microsecond=0) + timedelta(
                seconds=1
            )
            due_at[str(n)] = due.timestamp()
            scheduler.create_schedule(
                Name=f"bench-{n}",
                ScheduleExpression=f"at({due:%Y-%m-%dT%H:%M:%S})",
                FlexibleTimeWindow={"Mode": "OFF"},
                ActionAfterCompletion="DELETE",
                Target={"Arn": arn, "RoleArn": role, "Input": str(n)},
            )
        runtime.start()
        end = time.monotonic() + deadline
        try:
            while len(errors) < len(leads) and time.monotonic() < end:
                for m in sqs.receive_message(
                    QueueUrl=url,
                    MaxNumberOfMessages=10,
                    WaitTimeSeconds=1,
                    MessageSystemAttributeNames=["SentTimestamp"],
                ).get("Messages", []):
                    errors.append(int(m["Attributes"]["SentTimestamp"]) / 1000 - due_at[m["Body"]])
                    sqs.delete_message(QueueUrl=url, ReceiptHandle=m["ReceiptHandle"])
        finally:
            runtime.stop()
    if len(errors) < len(leads):
        raise SystemExit(
            f"only {len(errors)} of {len(leads)} schedules fired; runtime errors: {runtime.errors}"
        )
    return errors


HOG = "import time\nend = time.monotonic() + {seconds}\nwhile time.monotonic() < end:\n    pass\n"


def _hogs(count: int, seconds: float) -> list[subprocess.Popen[bytes]]:
    """``count`` CPU-bound processes, each ending by itself after ``seconds``."""
    return [subprocess.Popen([sys.executable, "-c", HOG.format(seconds=seconds)]) for _ in range(count)]


def _stop(hogs: list[subprocess.Popen[bytes]]) -> None:
    for hog in hogs:
        hog.kill()
        hog.wait(timeout=10)


Row = tuple[str, str, float]  # scale, what, bound


def measure_scale(
    scale: float, real_delays: list[int], real_leads: list[float], burst: int, deadline: float
) -> dict[Row, list[float]]:
    delays = [min(MAX_SQS_DELAY, round(d * scale)) for d in real_delays]
    label = f"x{scale:g}"
    with Emulator(clock_scale=scale) as emulator:
        ours, started = measure_consumer(emulator, delays, deadline)
        base = measure_baseline(emulator, delays, deadline)
        sched = measure_schedules(emulator, [lead * scale for lead in real_leads], deadline)
        together, _ = measure_consumer(
            emulator, [min(MAX_SQS_DELAY, round(3 * scale))] * burst, deadline, prefix="burst"
        )
    return {
        (label, "SQS delay: received by the runtime", SQS_BOUND): ours,
        # A client the clock does not wait for: what logical time gives with no runtime to hold it.
        (label, "SQS delay: plain client long poll (info)", float("inf")): base,
        (label, f"SQS delay: {burst} due in the same second", SQS_BOUND): together,
        (label, "SQS delay: processor started (info)", float("inf")): started,
        (label, "schedule at(): delivered by runtime", SCHEDULE_BOUND): sched,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--messages", type=int, default=40, help="messages (and schedules) per side and scale"
    )
    parser.add_argument("--burst", type=int, default=40, help="copies falling due in the same second")
    parser.add_argument("--scales", default="1,30,100", help="comma-separated clock scales")
    parser.add_argument("--seed", type=int, default=3)
    parser.add_argument("--deadline", type=float, default=120.0, help="real seconds allowed per side")
    parser.add_argument("--hogs", type=int, default=2, help="CPU-bound processes beside the loaded run")
    parser.add_argument("--hog-seconds", type=float, default=300.0, help="the longest a hog runs")
    args = parser.parse_args(argv)
    if not PACKAGE.is_file():
        print(f"{PACKAGE} is missing: run ./build.sh package", file=sys.stderr)
        return 2
    scales = [float(s) for s in args.scales.split(",") if s]
    rand = random.Random(args.seed)
    real_delays = [rand.randint(1, 8) for _ in range(args.messages)]
    real_leads = [rand.uniform(1, 8) for _ in range(args.messages)]
    quiet: dict[Row, list[float]] = {}
    loaded: dict[Row, list[float]] = {}
    for scale in scales:
        quiet.update(measure_scale(scale, real_delays, real_leads, args.burst, args.deadline))
        hogs = _hogs(args.hogs, args.hog_seconds)
        try:
            loaded.update(measure_scale(scale, real_delays, real_leads, args.burst, args.deadline))
        finally:
            _stop(hogs)
    print(
        f"redelivery lateness in logical seconds (negative = early); {args.messages} per row "
        f"({args.burst} in the burst row), delays/leads 1-8 real seconds' worth, seed {args.seed}; "
        f"quiet machine | beside {args.hogs} CPU-bound processes"
    )
    print(
        f"{'scale':>6}  {'what':<40} {'median':>8} {'max':>8} {'min':>8} | "
        f"{'median':>8} {'max':>8} {'min':>8} {'bound':>6}  ok"
    )
    ok = True
    for row, values in quiet.items():
        label, what, bound = row
        cells = []
        within = True
        for side in (values, loaded[row]):
            median, _, worst, best = _summary(side)
            within = within and worst <= bound and best >= -0.05
            cells.append(f"{median:8.3f} {worst:8.3f} {best:8.3f}")
        ok = ok and (within or bound == float("inf"))
        verdict = "-" if bound == float("inf") else "yes" if within else "NO"
        print(f"{label:>6}  {what:<40} {cells[0]} | {cells[1]} {bound:6.0f}  {verdict}")
    print(
        "every row within its bound in both columns (max <= bound, never early)"
        if ok
        else "SOME ROWS MISS THEIR BOUND"
    )
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
