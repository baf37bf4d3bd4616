"""Cold import of every Lambda handler of the deployment zip as shipped (with its bytecode) against
the same zip as sources only (what it shipped before issue 29) and against Powertools'
BatchProcessor + Logger + Metrics, beyond boto3.

    .venv/bin/python benchmarks/handler_imports.py [--rounds 15] [--zip dist/serverless-retry.zip] [--check]

The zip (``./build.sh package``) is unpacked as Lambda unpacks a function's code, and every import
runs in a clean interpreter of the runtime's Python (python3.12 when installed): ``-I -S -B``, no
site-packages, nothing compiled kept. Its path is a directory with the team's own code (the
processor, or the baseline's ``app.py``), then the unpacked zip, then the runtime's boto3. The
baseline imports Powertools from the same unpacked zip, so both sides read the same files.

Beyond boto3: each child imports boto3 first, untimed (the runtime provides it and a function that
calls AWS pays for it either way), then times the handler module's import, which builds what the
handler builds at cold start (settings read and validated from the environment, the processor
imported). Two forms of the same files: **as shipped** (the zip as built: every module with its
bytecode for the runtime's Python; the team's code compiled too, as ``serverless-retry package``
ships it) and **sources only** (every ``__pycache__`` stripped from an unpacked copy: the zip before
it carried bytecode, when Python compiled each module at every cold start, since /var/task is
read-only). The baseline as shipped is Powertools with its bytecode, as any zip a team builds with
``pip install -t`` carries it.

Goals (issue 29): the consumer as shipped at most 0.35x its sources-only import, and at most 0.8x the
baseline as shipped; every handler at most 1.0x the baseline in each form (issue 20).

Paired rounds: each round imports every case once per form, in an order rotated round by round; a
ratio is taken between two imports of the same round, and the median over the rounds is printed.
Times are CPU time of the child (``time.process_time``): on a machine shared with other jobs, wall
time mostly measures waiting for a core; the import itself is CPU-bound (files in the page cache).
Wall-time medians are printed too. Bounded: ``--rounds`` rounds, one child per case and form, each
child stopped after 120 s.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from _common import EXAMPLE_POLICY, consumer_env, queue_arn, queue_url, table
from serverless_retry_tools.local.runtime.lambda_python import resolve

ROOT = Path(__file__).resolve().parents[1]
WORK = ROOT / "build" / "bench" / "handler_imports"
RUNTIME = "python3.12"
GOAL = 1.0  # every handler against the baseline, in each form
CONSUMER_VS_SOURCES = 0.35  # the consumer as shipped against its sources-only import
CONSUMER_VS_BASELINE = 0.8  # the consumer as shipped against the baseline as shipped
SHIPPED, SOURCES = "as shipped", "sources only"
BASELINE = "Powertools BatchProcessor+Logger+Metrics"

PROCESSOR = "def process(message):\n    message.body\n"
# The handler Powertools documents for an SQS batch, with Logger and Metrics (as package_sizes.py).
POWERTOOLS_HANDLER = """\
from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.utilities.batch import BatchProcessor, EventType, process_partial_response

processor = BatchProcessor(event_type=EventType.SQS)
logger = Logger()
metrics = Metrics()


def record_handler(record):
    record.body


@logger.inject_lambda_context(clear_state=True)
@metrics.log_metrics
def handler(event, context):
    return process_partial_response(event=event, record_handler=record_handler, processor=processor, context=context)
"""

# What the child runs: boto3 first (untimed), then the handler module, timed.
CHILD = """\
import importlib, json, sys, time
sys.path[:0] = sys.argv[2:]
import boto3
before = len(sys.modules)
wall, cpu = time.perf_counter(), time.process_time()
importlib.import_module(sys.argv[1])
cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
print(json.dumps({"cpu": cpu, "wall": wall, "modules": len(sys.modules) - before}))
"""

ACCOUNT = "123456789012"
FUNCTION_ARN = f"arn:aws:lambda:us-east-1:{ACCOUNT}:function:orders-fn"
SELF_HEALING_POLICY = {"max_attempts": 4, "backoff": {"strategy": "exponential", "base_seconds": 10}}


@dataclass
class Case:
    name: str
    module: str  # what the Lambda runtime imports at cold start
    env: dict[str, str]
    cpu: dict[str, list[float]] = field(default_factory=dict)  # by form
    wall: dict[str, list[float]] = field(default_factory=dict)
    modules: int = 0


def cases() -> list[Case]:
    """The baseline and the four handlers, each with the environment its Terraform module sets."""
    consumer = consumer_env(EXAMPLE_POLICY, "orders_processor:process")
    exhausted = queue_url("orders-self-healing-exhausted")
    scheduler = {
        "SERVERLESS_RETRY_SCHEDULE_GROUP": "orders-self-healing",
        "SERVERLESS_RETRY_SCHEDULER_ROLE_ARN": f"arn:aws:iam::{ACCOUNT}:role/orders-self-healing-scheduler",
        "SERVERLESS_RETRY_DLQ_ARN": queue_arn("orders-self-healing-schedule-dlq"),
    }
    return [
        Case(BASELINE, "app", {"POWERTOOLS_SERVICE_NAME": "orders"}),
        Case("consumer", "serverless_retry.handlers.consumer", consumer),
        Case(
            "enrichment",
            "serverless_retry.handlers.enrichment",
            {
                "SERVERLESS_RETRY_EXHAUSTED_QUEUE_URL": exhausted,
                "SERVERLESS_RETRY_FAILURE_QUEUE_URL": queue_url("orders-self-healing-failures"),
            },
        ),
        Case(
            "redrive",
            "serverless_retry.handlers.redrive",
            {
                "SERVERLESS_RETRY_SOURCES": json.dumps({"orders-fn": {"function_arn": FUNCTION_ARN}}),
                "SERVERLESS_RETRY_POLICY": json.dumps(SELF_HEALING_POLICY),
                "SERVERLESS_RETRY_EXHAUSTED_QUEUE_URL": exhausted,
                **scheduler,
            },
        ),
        Case(
            "queue redrive",
            "serverless_retry.handlers.redrive_queue",
            {
                "SERVERLESS_RETRY_REDRIVE_FROM_QUEUE_URLS": queue_url("orders-exhausted"),
                "SERVERLESS_RETRY_REDRIVE_TO_QUEUE_URL": queue_url("orders"),
            },
        ),
    ]


def prepare(zip_path: Path, python: str) -> dict[str, list[Path]]:
    """The unpacked zip in both forms, and the team's own code beside it: the path of each form."""
    shutil.rmtree(WORK, ignore_errors=True)
    code = WORK / "code-sources"
    code.mkdir(parents=True)
    (code / "orders_processor.py").write_text(PROCESSOR)
    (code / "app.py").write_text(POWERTOOLS_HANDLER)
    shipped = WORK / "shipped"
    with zipfile.ZipFile(zip_path) as zf:
        zf.extractall(shipped)
    tag = subprocess.run(
        [python, "-I", "-c", "import sys; print(sys.implementation.cache_tag)"],
        capture_output=True, text=True, check=True, timeout=60,
    ).stdout.strip()  # fmt: skip
    if not any(shipped.rglob(f"*.{tag}.pyc")):
        raise SystemExit(
            f"{zip_path} carries no bytecode for {tag}: rebuild it (./build.sh package) with that Python "
            "installed, or it measures sources only twice"
        )
    sources = WORK / "sources-only"
    shutil.copytree(shipped, sources, ignore=shutil.ignore_patterns("__pycache__"))
    shipped_code = WORK / "code-shipped"
    shutil.copytree(code, shipped_code)
    # The team's code as the package command ships it: hash-based pycs of the runtime's Python.
    subprocess.run(
        [python, "-m", "compileall", "-q", "--invalidation-mode", "unchecked-hash", str(shipped_code)],
        check=True,
        timeout=600,
    )
    return {SHIPPED: [shipped_code, shipped], SOURCES: [code, sources]}


def child(python: str, case: Case, path: list[Path], libs: tuple[str, ...]) -> dict[str, Any]:
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_LAMBDA_FUNCTION_NAME": "orders-function",
        "TMPDIR": tempfile.gettempdir(),
        **case.env,
    }
    result = subprocess.run(
        [python, "-I", "-S", "-B", "-c", CHILD, case.module, *map(str, path), *libs],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    if result.returncode != 0:
        raise SystemExit(f"{case.name}: the import failed:\n{result.stderr}")
    out: dict[str, Any] = json.loads(result.stdout.strip().splitlines()[-1])
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rounds", type=int, default=15, help="paired rounds (default 15)")
    parser.add_argument("--zip", type=Path, default=ROOT / "dist" / "serverless-retry.zip")
    parser.add_argument("--check", action="store_true", help="exit 1 when a handler misses the goal")
    args = parser.parse_args(argv)
    if not args.zip.is_file():
        raise SystemExit(f"{args.zip} not found: run ./build.sh package first")
    started = time.perf_counter()
    runtime = resolve(RUNTIME)
    if runtime.warning:
        print(f"note: {runtime.warning}", file=sys.stderr)
    forms = prepare(args.zip, runtime.executable)
    all_cases = cases()
    for n in range(args.rounds):
        shift = n % len(all_cases)
        for case in all_cases[shift:] + all_cases[:shift]:
            for form, path in forms.items():
                got = child(runtime.executable, case, path, runtime.libs)
                case.cpu.setdefault(form, []).append(got["cpu"])
                case.wall.setdefault(form, []).append(got["wall"])
                case.modules = got["modules"]
    baseline, consumer = all_cases[0], all_cases[1]
    print(
        f"Cold import beyond boto3, Python {runtime.version}, {args.rounds} paired rounds, "
        f"{os.cpu_count()} CPUs, from {args.zip.name} unpacked\n"
    )
    rows = [
        [
            "handler", "form", "modules", "cpu ms", "x baseline (cpu)", "p25-p75", "wall ms", "x (wall)",
            "x sources only (cpu)", "goal",
        ]
    ]  # fmt: skip
    missed = []
    for case in all_cases:
        for form in forms:
            ratios = paired(case.cpu[form], baseline.cpu[form])
            wall_ratio = statistics.median(paired(case.wall[form], baseline.wall[form]))
            ratio = statistics.median(ratios)
            goal = "-"
            if case is not baseline:
                ok = ratio <= GOAL
                goal = f"≤ {GOAL:.2f} {'ok' if ok else 'MISSED'}"
                if not ok:
                    missed.append(f"{case.name} ({form}) {ratio:.2f} x baseline")
            own = "-"
            if form == SHIPPED:
                own = f"{statistics.median(paired(case.cpu[SHIPPED], case.cpu[SOURCES])):.2f}"
            rows.append(
                [
                    case.name,
                    form,
                    str(case.modules),
                    f"{statistics.median(case.cpu[form]) * 1000:.1f}",
                    f"{ratio:.2f}",
                    f"{ratios[len(ratios) // 4]:.2f}-{ratios[(3 * len(ratios)) // 4]:.2f}",
                    f"{statistics.median(case.wall[form]) * 1000:.1f}",
                    f"{wall_ratio:.2f}",
                    own,
                    goal,
                ]
            )
    table(rows, sys.stdout)
    lines = []
    for name, ratios, limit in (
        ("as shipped / its sources only", paired(consumer.cpu[SHIPPED], consumer.cpu[SOURCES]), CONSUMER_VS_SOURCES),
        ("as shipped / baseline as shipped", paired(consumer.cpu[SHIPPED], baseline.cpu[SHIPPED]), CONSUMER_VS_BASELINE),
    ):  # fmt: skip
        ratio = statistics.median(ratios)
        quartiles = f"{ratios[len(ratios) // 4]:.2f}-{ratios[(3 * len(ratios)) // 4]:.2f}"
        verdict = "ok" if ratio <= limit else f"MISSED by {ratio / limit - 1:.0%}"
        lines.append(f"  consumer {name}: {ratio:.2f} (p25-p75 {quartiles}), goal ≤ {limit:.2f}: {verdict}")
        if ratio > limit:
            missed.append(f"consumer {name} {ratio:.2f}")
    print(
        "\nmodules: imported by the handler beyond boto3 (Python's own included). x: median of the "
        "per-round ratios to the baseline of the same round and form; x sources only: to the same "
        "handler's sources-only import of the same round.\n"
        "issue 29's goals:\n" + "\n".join(lines) + "\n"
        f"every handler ≤ {GOAL:.2f} x the baseline in each form; "
        f"{'MISSED: ' + ', '.join(missed) if missed else 'all goals ok'} "
        f"(finished in {time.perf_counter() - started:.0f} s)"
    )
    return 1 if args.check and missed else 0


def paired(values: list[float], against: list[float]) -> list[float]:
    """The per-round ratios, sorted (for the median and the quartiles)."""
    return sorted(a / b for a, b in zip(values, against, strict=True))


if __name__ == "__main__":
    sys.exit(main())
