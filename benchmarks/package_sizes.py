"""What a team deploys and what its cold start imports: bytes and cold-import time of the handler, for
a plain handler, a consumer using serverless_retry (its code in the function zip, or in our layer with
or without Powertools), side by side with Powertools' own BatchProcessor + Logger + Metrics.

Every package is built by ``serverless-retry package`` for this machine's architecture and the
Python the local Lambda runtime uses (python3.12 when installed), from the package index. Each import
runs in a clean interpreter (-I -S: no site-packages; -B: nothing compiled is kept, as Lambda's
read-only /var/task keeps nothing) whose path is the function's code, its layers and what the Lambda
runtime provides (boto3), in the order Lambda uses. Runs are paired: each round imports every
package once, in an order that rotates round by round, and the ratios are per round.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

from _common import EXAMPLE_POLICY, consumer_env, table
from serverless_retry_tools.bundling.bundle import Result, build_function, build_layer
from serverless_retry_tools.bundling.targets import Target
from serverless_retry_tools.local.runtime.lambda_python import resolve

ROOT = Path(__file__).resolve().parents[1]
WORK = ROOT / "build" / "bench" / "package_sizes"
RUNTIME = "python3.12"
POWERTOOLS_PIN = next(
    line.strip()
    for line in (ROOT / "requirements" / "runtime.txt").read_text().splitlines()
    if line.startswith("aws-lambda-powertools==")
)

PLAIN = 'def handler(event, context):\n    return {"batchItemFailures": []}\n'
PROCESSOR = "def process(message):\n    message.body\n"
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
BASELINE = "Powertools BatchProcessor+Logger+Metrics"


@dataclass
class Case:
    name: str
    module: str  # what the Lambda runtime imports at cold start (the handler's module)
    function: Result
    layers: list[Result] = field(default_factory=list)
    counted_layers: int = 0  # how many of ``layers`` the team deploys (AWS's public layer is not theirs)
    dirs: list[Path] = field(default_factory=list)
    seconds: list[float] = field(default_factory=list)

    @property
    def deployed(self) -> int:
        return self.function.zipped + sum(r.zipped for r in self.layers[: self.counted_layers])

    @property
    def unpacked(self) -> int:
        return self.function.unpacked + sum(r.unpacked for r in self.layers)


def _source(name: str, files: dict[str, str]) -> Path:
    src = WORK / "src" / name
    shutil.rmtree(src, ignore_errors=True)
    src.mkdir(parents=True)
    for path, text in files.items():
        (src / path).write_text(text)
    return src


def build_cases(target: Target) -> list[Case]:
    out = WORK / "zips"
    requirements = WORK / "src" / "powertools.txt"
    (WORK / "src").mkdir(parents=True, exist_ok=True)
    requirements.write_text(POWERTOOLS_PIN + "\n")
    constraint = ["-c", str(ROOT / "requirements" / "runtime.txt")]  # the versions our own zip ships
    plain = build_function(_source("plain", {"app.py": PLAIN}), out / "plain.zip", [target])
    consumer_src = _source("consumer", {"orders_processor.py": PROCESSOR})
    in_zip = build_function(
        consumer_src, out / "consumer.zip", [target], with_library=True, pip_options=constraint
    )
    code_only = build_function(consumer_src, out / "consumer-code.zip", [target])
    layer = build_layer(out / "layer.zip", [target], pip_options=constraint)
    slim = build_layer(out / "layer-slim.zip", [target], without_powertools=True, pip_options=constraint)
    # A stand-in for AWS's public Powertools layer: Powertools at our pin, with its dependencies.
    aws_layer = build_function(
        _source("empty", {}), out / "powertools-layer.zip", [target], requirements=requirements
    )
    baseline = build_function(
        _source("powertools", {"app.py": POWERTOOLS_HANDLER}),
        out / "powertools.zip",
        [target],
        requirements=requirements,
    )
    handler = "serverless_retry.handlers.consumer"
    return [
        Case("plain handler, function zip", "app", plain),
        Case("consumer, serverless_retry in the function zip", handler, in_zip),
        Case("consumer, serverless-retry layer", handler, code_only, [layer], 1),
        Case(
            "consumer, layer without Powertools + AWS's Powertools layer",
            handler,
            code_only,
            [slim, aws_layer],
            1,
        ),
        Case(BASELINE, "app", baseline),
        # For reference: what importing the runtime's boto3 alone costs (a consumer's code uses it anyway).
        Case("reference: import boto3 (the runtime's)", "boto3", plain),
    ]


def unpack(case: Case) -> None:
    """Each zip unpacked as Lambda does: the function in /var/task, layers under /opt (python/)."""
    base = WORK / "unpacked" / case.name.replace(" ", "-").replace(",", "").replace("'", "")
    shutil.rmtree(base, ignore_errors=True)
    task = base / "task"
    with zipfile.ZipFile(case.function.out) as zf:
        zf.extractall(task)
    case.dirs = [task]
    for n, layer in enumerate(case.layers):
        with zipfile.ZipFile(layer.out) as zf:
            zf.extractall(base / f"opt{n}")
        python = base / f"opt{n}" / "python"
        case.dirs.append(python if python.is_dir() else base / f"opt{n}")


IMPORT = """\
import importlib, sys, time
sys.path[:0] = sys.argv[2:]
start = time.perf_counter()
importlib.import_module(sys.argv[1])
print(time.perf_counter() - start)
"""


def cold_import(python: str, libs: tuple[str, ...], case: Case, env: dict[str, str]) -> float:
    result = subprocess.run(
        [python, "-I", "-S", "-B", "-c", IMPORT, case.module, *map(str, case.dirs), *libs],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    if result.returncode != 0:
        raise SystemExit(f"{case.name}: the import failed:\n{result.stderr}")
    return float(result.stdout.strip())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=11, help="paired rounds (default 11)")
    parser.add_argument("--json", action="store_true", help="the figures as one JSON document")
    args = parser.parse_args()
    runtime = resolve(RUNTIME)
    if runtime.warning:
        print(f"note: {runtime.warning}", file=sys.stderr)
    machine = {"arm64": "aarch64"}.get(platform.machine(), platform.machine())
    target = Target(runtime.version, machine)
    WORK.mkdir(parents=True, exist_ok=True)
    cases = build_cases(target)
    for case in cases:
        unpack(case)
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_LAMBDA_FUNCTION_NAME": "orders-consumer",
        "TMPDIR": tempfile.gettempdir(),
        **consumer_env(EXAMPLE_POLICY, "orders_processor:process"),
    }
    ratios: dict[str, list[float]] = {case.name: [] for case in cases}
    for n in range(args.rounds):
        order = cases[n % len(cases) :] + cases[: n % len(cases)]
        seconds = {case.name: cold_import(runtime.executable, runtime.libs, case, env) for case in order}
        for case in cases:
            case.seconds.append(seconds[case.name])
            ratios[case.name].append(seconds[case.name] / seconds[BASELINE])
    baseline = next(c for c in cases if c.name == BASELINE)
    report = [
        {
            "package": case.name,
            "deployed_bytes": case.deployed,
            "unpacked_bytes": case.unpacked,
            "files": case.function.files + sum(r.files for r in case.layers),
            "bytes_vs_powertools": case.deployed / baseline.deployed,
            "import_ms_median": statistics.median(case.seconds) * 1000,
            "import_vs_powertools_median": statistics.median(ratios[case.name]),
        }
        for case in cases
    ]
    if args.json:
        print(json.dumps({"python": target.label, "rounds": args.rounds, "rows": report}, indent=2))
        return
    print(f"{target.label}, {args.rounds} paired rounds, cold import in a clean interpreter each time\n")
    rows = [["package", "deployed", "unpacked", "files", "x bytes", "import ms", "x import"]]
    rows += [
        [
            r["package"],
            f"{r['deployed_bytes'] / 1e6:.2f} MB",
            f"{r['unpacked_bytes'] / 1e6:.2f} MB",
            str(r["files"]),
            f"{r['bytes_vs_powertools']:.2f}",
            f"{r['import_ms_median']:.0f}",
            f"{r['import_vs_powertools_median']:.2f}",
        ]
        for r in report
    ]
    table(rows, sys.stdout)
    print(f"\nx: against {BASELINE} (per round for imports, median).")
    print("deployed: the zips the team uploads (AWS's public Powertools layer is not counted);")
    print("unpacked: the function and all its layers, against Lambda's 250 MB.")


if __name__ == "__main__":
    main()
