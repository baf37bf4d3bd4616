"""A zip built for arm64 (`serverless-retry package function --arch arm64`, the modules' default
architecture) with a `message_regex` policy processes messages on the emulator on this host,
whatever its machine: the emulator runs this host's build of google-re2 in place of the zip's
aarch64 one and says so; on a host that is itself arm64 nothing is substituted.

The zip's wheels come from ``build/wheelhouse/`` (downloaded once from the package index for Lambda's
arm64 platform), so the test runs offline once they are there, and fails with pip's reason, within
a bounded time, when they are not and cannot be downloaded. The emulator's host build of
google-re2 is cached under ``build/lambda-python/host-builds/`` after its first use the same way."""

from __future__ import annotations

import json
import subprocess
import sys
import time
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from botocore.config import Config
from serverless_retry_tools.bundling.targets import Target, pip_target_args
from serverless_retry_tools.local.emulator.emulator import Emulator
from serverless_retry_tools.local.runtime.architectures import host_machine
from serverless_retry_tools.local.runtime.runtime import Runtime, RuntimeEvent

from tests.integration.emulator_account import EmulatorAccount

ROOT = Path(__file__).resolve().parents[2]
PINS = ROOT / "requirements" / "runtime.txt"  # the versions the release zip pins
WHEELHOUSE = ROOT / "build" / "wheelhouse" / "arm64-py312"
CONFIG = Config(retries={"mode": "standard", "max_attempts": 3})
DOWNLOAD_SECONDS = 120

PROCESSOR = """
def handle(message):
    print("attempt", message.body, message.attempt)
    if message.body == "flaky" and message.attempt == 1:
        raise RuntimeError("backend busy, try later")
    if message.body == "broken":
        raise RuntimeError("order 7 is malformed")
"""
# "busy" is matched by RE2 and retried 2 s later; anything else goes to the exhausted queue.
POLICY = {
    "max_attempts": 3,
    "rules": [{"message_regex": r"\bbusy\b", "backoff": {"strategy": "fixed", "base_seconds": 2}}],
    "unmatched": "dead-letter",
    "transport": "sqs-delay",
}


def _run(argv: list[str], timeout: float) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(argv, capture_output=True, text=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        pytest.fail(f"{' '.join(argv[:6])} ... took longer than {timeout:.0f} s")


def _package(source: Path, out: Path) -> subprocess.CompletedProcess[str]:
    cli = [sys.executable, "-m", "serverless_retry_tools.cli", "package", "function", str(source)]
    offline = ["--no-index", "--find-links", str(WHEELHOUSE), "-c", str(PINS)]
    return _run(
        [*cli, "--with-serverless-retry", "--arch", "arm64", "--python", "3.12", *offline, "-o", str(out)],
        120,
    )


def _download() -> None:
    """The pinned runtime wheels for python3.12 on arm64 Lambda, into the wheelhouse."""
    WHEELHOUSE.mkdir(parents=True, exist_ok=True)
    argv = [sys.executable, "-m", "pip", "download", "--quiet", "--disable-pip-version-check", "--no-deps",
            "--timeout", "15", "--retries", "1", *pip_target_args(Target("3.12", "aarch64")),
            "-d", str(WHEELHOUSE), "-r", str(PINS)]  # fmt: skip
    result = _run(argv, DOWNLOAD_SECONDS)
    if result.returncode != 0:
        pytest.fail(
            f"the arm64 wheels this test packages are not in {WHEELHOUSE} and pip could not download "
            f"them from the package index (run the test once with network access):\n{result.stderr[-1500:]}"
        )


@pytest.fixture(scope="module")
def arm64_zip(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    work = tmp_path_factory.mktemp("arm64")
    (work / "src").mkdir()
    (work / "src" / "orders_proc.py").write_text(PROCESSOR)
    out = work / "orders.zip"
    built = _package(work / "src", out)
    if built.returncode != 0:  # the wheelhouse is new or lacks a pin: fill it, then build offline
        _download()
        built = _package(work / "src", out)
    assert built.returncode == 0, built.stdout + built.stderr
    with zipfile.ZipFile(out) as zf:
        extensions = [n for n in zf.namelist() if n.endswith(".so")]
    assert extensions == ["re2/_re2.cpython-312-aarch64-linux-gnu.so"]  # arm64 only, as Lambda gets it
    return out.read_bytes()


class Aws(EmulatorAccount):
    def depth(self, url: str) -> int:
        attrs = self.client("sqs").get_queue_attributes(QueueUrl=url, AttributeNames=["All"])["Attributes"]
        names = (
            "ApproximateNumberOfMessages",
            "ApproximateNumberOfMessagesNotVisible",
            "ApproximateNumberOfMessagesDelayed",
        )
        return sum(int(attrs[k]) for k in names)

    def logs(self, function: str) -> list[str]:
        logs = self.client("logs")
        try:
            events = logs.filter_log_events(logGroupName=f"/aws/lambda/{function}")["events"]
        except logs.exceptions.ResourceNotFoundException:
            return []
        return [str(e["message"]) for e in events]


@pytest.fixture(scope="module")
def aws() -> Iterator[Aws]:
    with Emulator(clock_scale=10) as emulator:  # a 2 s retry delay is 0.2 real seconds
        yield Aws(emulator, config=CONFIG)


def _consumer(aws: Aws, code: bytes) -> tuple[str, str, str]:
    """Pattern 1's consumer as modules/consumer configures it, declared arm64: (name, queue URL,
    exhausted queue URL)."""
    url, arn = aws.queue("orders", VisibilityTimeout="300")
    exhausted_url, _ = aws.queue("exhausted")
    _, dlq_arn = aws.queue("dlq")
    name = aws.name("consumer")
    aws.client("lambda").create_function(
        FunctionName=name,
        Role=aws.role,
        Handler="serverless_retry.handlers.consumer.handler",
        Runtime="python3.12",
        Architectures=["arm64"],
        Timeout=30,
        Code={"ZipFile": code},
        Environment={
            "Variables": {
                "SERVERLESS_RETRY_PROCESSOR": "orders_proc:handle",
                "SERVERLESS_RETRY_POLICY": json.dumps(POLICY),
                "SERVERLESS_RETRY_QUEUE_URL": url,
                "SERVERLESS_RETRY_QUEUE_ARN": arn,
                "SERVERLESS_RETRY_EXHAUSTED_QUEUE_URL": exhausted_url,
                "SERVERLESS_RETRY_DLQ_ARN": dlq_arn,
            }
        },
    )
    aws.client("lambda").create_event_source_mapping(
        EventSourceArn=arn, FunctionName=name, FunctionResponseTypes=["ReportBatchItemFailures"]
    )
    return name, url, exhausted_url


def test_an_arm64_zip_with_a_message_regex_policy_processes_messages_here(
    aws: Aws, arm64_zip: bytes, tmp_path: Path
) -> None:
    name, url, exhausted_url = _consumer(aws, arm64_zip)
    sqs = aws.client("sqs")
    for body in ("fine", "flaky", "broken"):
        sqs.send_message(QueueUrl=url, MessageBody=body)
    events: list[RuntimeEvent] = []
    runtime = Runtime(aws.emulator.url, work_dir=tmp_path, on_event=events.append)

    def settled() -> bool:
        return aws.depth(url) == 0 and aws.depth(exhausted_url) == 1

    started = time.monotonic()
    done = runtime.run(until=settled, deadline_seconds=45, check_every=0.2)
    warnings = [str(e.detail.get("message")) for e in events if e.kind == "warning"]
    logs = aws.logs(name)
    failed = [w for w in warnings if "could not get this host's build" in w]
    assert not failed, failed[0]  # pip could not provide the host's google-re2: its own reason
    assert done, f"not settled in {time.monotonic() - started:.0f} s: {warnings}\n" + "\n".join(logs[-40:])
    assert not [line for line in logs if "ConfigError" in line or "_re2" in line]
    # The regex decided: "busy" retried once and succeeded, the other error went to the exhausted queue.
    attempts = sorted(line for line in logs if line.startswith("attempt "))
    assert attempts == ["attempt broken 1", "attempt fine 1", "attempt flaky 1", "attempt flaky 2"]
    (left,) = sqs.receive_message(QueueUrl=exhausted_url, MessageAttributeNames=["All"])["Messages"]
    envelope = json.loads(left["Body"])
    assert envelope["body"] == "broken"
    assert envelope["serverless_retry"]["final_error"]["message"] == "order 7 is malformed"
    assert envelope["serverless_retry"]["outcome"] == "non-retryable"
    substituted = [line for line in logs if line.startswith("emulator: ")]
    if host_machine() == "aarch64":  # the zip is this host's own: nothing to substitute
        assert substituted == []
    else:
        assert substituted, logs
        line: Any = substituted[0]
        assert line.startswith(
            f"emulator: function {name}'s zip holds compiled code for arm64 (aarch64), as the function declares"
        )
        assert "this host's build of google-re2 1.1.20250722 in place of the aarch64 one" in line
        assert any(line in w for w in warnings)  # and once as the runtime's warning
