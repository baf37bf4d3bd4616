"""The consumer's success path before and after a change, measured side by side in one run.

    .venv/bin/python benchmarks/consumer_before_after.py [--baseline 382fd87] [--rounds 8]

The baseline revision's ``lambda_src`` is exported with ``git archive`` into a temporary directory;
each round runs one child process per side (baseline first on even rounds, ours first on odd ones),
and each child times the same thing: a consumer built from the Lambda's environment variables (the
example policy of docs/retry-policy.md, AWS never called), invoked with a batch of 10 records of one message attribute
and a no-op processor, as ``consumer_overhead.py``'s "success, 1 attribute" row. Printed: µs per
record of each side (medians over the rounds) and the median of the per-round ratios ours/baseline.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_BASELINE = "382fd87"  # the last commit before the issue-9 consumer work

CHILD = r"""
import json, os, sys, time
os.environ.update(AWS_ACCESS_KEY_ID="testing", AWS_SECRET_ACCESS_KEY="testing", AWS_DEFAULT_REGION="us-east-1",
                  POWERTOOLS_SERVICE_NAME="orders", POWERTOOLS_METRICS_NAMESPACE="ServerlessRetry")
sys.path.insert(0, sys.argv[1])  # the side's lambda_src, ahead of the installed package
sys.path.insert(1, sys.argv[2])  # benchmarks/, for _common
import serverless_retry
assert serverless_retry.__file__.startswith(sys.argv[1]), serverless_retry.__file__
from _common import EXAMPLE_POLICY, FakeScheduler, FakeSqs, build_consumer, consumer_env, fake_clients, queue_arn
from serverless_retry.testing import lambda_context, sqs_event
devnull = open(os.devnull, "w")
sys.stdout = devnull  # logs and EMF lines are written, to nowhere
consumer = build_consumer(consumer_env(EXAMPLE_POLICY, "_common:noop"), fake_clients(FakeSqs(), FakeScheduler()))
bodies = [{"order_id": f"o-{i}", "amount_cents": 1299 + i} for i in range(10)]
event = sqs_event(bodies, queue_arn=queue_arn("orders"), attributes={"tenant": "acme"})
context = lambda_context("orders")
assert consumer(event, context) == {"batchItemFailures": []}
for _ in range(2000):
    consumer(event, context)
samples = []
for _ in range(15):
    start = time.perf_counter()
    for _ in range(1000):
        consumer(event, context)
    samples.append((time.perf_counter() - start) / 1000 / 10 * 1e6)
sys.stdout = sys.__stdout__
print(json.dumps(sorted(samples)[len(samples) // 2]))
"""


def export(revision: str, into: Path) -> Path:
    archive = into / "baseline.tar"
    subprocess.run(
        ["git", "archive", "--format=tar", "-o", str(archive), revision, "lambda_src"], cwd=ROOT, check=True
    )
    with tarfile.open(archive) as tar:
        tar.extractall(into, filter="data")
    return into / "lambda_src"


def timed(lib: Path) -> float:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_ENDPOINT", "SERVERLESS_RETRY_"))}
    out = subprocess.run(
        [sys.executable, "-c", CHILD, str(lib), str(ROOT / "benchmarks")],
        check=True,
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    return float(json.loads(out.stdout.strip().splitlines()[-1]))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--baseline", default=DEFAULT_BASELINE, help="git revision to compare against")
    parser.add_argument("--rounds", type=int, default=8)
    args = parser.parse_args(argv)
    ours_lib = ROOT / "lambda_src"
    with tempfile.TemporaryDirectory() as tmp:
        base_lib = export(args.baseline, Path(tmp))
        ours: list[float] = []
        base: list[float] = []
        for n in range(args.rounds):
            if n % 2 == 0:
                base.append(timed(base_lib))
                ours.append(timed(ours_lib))
            else:
                ours.append(timed(ours_lib))
                base.append(timed(base_lib))
    ratios = [a / b for a, b in zip(ours, base, strict=True)]
    print(
        f"success path, batch of 10, 1 attribute, no-op processor; {args.rounds} interleaved rounds\n"
        f"  baseline {args.baseline}: {statistics.median(base):.2f} µs/record\n"
        f"  this tree:        {statistics.median(ours):.2f} µs/record\n"
        f"  ours/baseline: median {statistics.median(ratios):.2f}x "
        f"(rounds {min(ratios):.2f}-{max(ratios):.2f}x)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
