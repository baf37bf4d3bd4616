"""The local runtime runs an event source mapping's batches concurrently, as Lambda does, within
ScalingConfig.MaximumConcurrency and the function's reserved concurrency; a FIFO queue's message
group stays in order; a timeout stops only the worker that ran the batch."""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from serverless_retry_tools.local.emulator.emulator import Emulator

from tests.integration.test_runtime import Aws, Run

# Writes one line when a batch starts and one when it ends (real times; every worker runs on this
# machine), then sleeps SLEEP seconds per record; a record {"hang": true} hangs on its first delivery.
SPANS = """
import json, os, time
def _write(line):
    with open(os.path.join(os.environ["SPANS_DIR"], "spans.jsonl"), "a") as f:
        f.write(json.dumps(line) + "\\n")
def handler(event, context):
    records = event["Records"]
    line = {
        "id": context.aws_request_id,
        "pid": os.getpid(),
        "start": time.time(),
        "bodies": [json.loads(r["body"]) for r in records],
        "first": [r["attributes"]["ApproximateReceiveCount"] == "1" for r in records],
    }
    _write(dict(line, phase="start"))
    for body, first in zip(line["bodies"], line["first"]):
        if body.get("hang") and first:
            time.sleep(30)
        time.sleep(float(os.environ["SLEEP"]))
    _write(dict(line, phase="end", end=time.time()))
    return {"batchItemFailures": []}
"""


@pytest.fixture(scope="module")
def aws() -> Iterator[Aws]:
    with Emulator() as emulator:
        yield Aws(emulator)


def _spans_function(aws: Aws, spans: Path, *, sleep: float, timeout: int = 10) -> str:
    spans.mkdir()
    return aws.function(
        {"app.py": SPANS}, env={"SPANS_DIR": str(spans), "SLEEP": str(sleep)}, Timeout=timeout
    )


def _lines(spans: Path, phase: str) -> list[dict[str, Any]]:
    path = spans / "spans.jsonl"
    if not path.exists():
        return []
    lines = [json.loads(text) for text in path.read_text().splitlines() if text.strip()]
    return [line for line in lines if line["phase"] == phase]


def _most_at_once(ended: list[dict[str, Any]]) -> int:
    """The largest number of these finished batches that were running at the same instant."""
    return max(sum(1 for o in ended if o["start"] <= s["start"] < o["end"]) for s in ended)


def _send(aws: Aws, url: str, bodies: list[dict[str, Any]], **extra: str) -> None:
    sqs = aws.client("sqs")
    for body in bodies:
        sqs.send_message(QueueUrl=url, MessageBody=json.dumps(body), **extra)


def test_batches_of_one_mapping_run_at_once(aws: Aws, tmp_path: Path) -> None:
    url, arn = aws.queue("conc", VisibilityTimeout="30")
    spans = tmp_path / "spans"
    # Longer than a worker's cold start on a loaded machine (1.6 s seen).
    function = _spans_function(aws, spans, sleep=3.0)
    aws.mapping(function, arn, BatchSize=1)
    _send(aws, url, [{"n": n} for n in range(3)])
    run = Run(aws, tmp_path / "rt")
    assert run.until(lambda: run.runtime.stats["messages_deleted"] == 3 and aws.depth(url) == 0)
    ended = _lines(spans, "end")
    assert len(ended) == 3, ended
    first, second = sorted(ended, key=lambda s: s["start"])[:2]
    assert second["start"] < first["end"], ended  # both started before either ended
    assert len({s["pid"] for s in ended}) >= 2  # each in a worker of its own
    assert not run.runtime.errors


@pytest.mark.parametrize("limit", ["maximum-concurrency", "reserved-concurrency"])
def test_concurrency_limits_are_honoured(aws: Aws, tmp_path: Path, limit: str) -> None:
    url, arn = aws.queue("capped", VisibilityTimeout="30")
    spans = tmp_path / "spans"
    function = _spans_function(aws, spans, sleep=0.6)
    if limit == "maximum-concurrency":
        aws.mapping(function, arn, BatchSize=1, ScalingConfig={"MaximumConcurrency": 2})
        expected = 2
    else:
        aws.client("lambda").put_function_concurrency(FunctionName=function, ReservedConcurrentExecutions=1)
        aws.mapping(function, arn, BatchSize=1)
        expected = 1
    _send(aws, url, [{"n": n} for n in range(6)])
    run = Run(aws, tmp_path / "rt")
    assert run.until(lambda: run.runtime.stats["messages_deleted"] == 6 and aws.depth(url) == 0)
    ended = _lines(spans, "end")
    assert len(ended) == 6, ended
    assert _most_at_once(ended) == expected, ended  # never more, and the limit is used
    assert not run.runtime.errors


def test_a_fifo_group_stays_in_order_while_groups_run_at_once(aws: Aws, tmp_path: Path) -> None:
    url, arn = aws.queue(
        "ordered", FifoQueue="true", ContentBasedDeduplication="true", VisibilityTimeout="30"
    )
    spans = tmp_path / "spans"
    function = _spans_function(aws, spans, sleep=0.4)
    aws.mapping(function, arn, BatchSize=2)
    sqs = aws.client("sqs")
    for n in range(4):
        for group in ("a", "b", "c"):
            sqs.send_message(
                QueueUrl=url, MessageBody=json.dumps({"group": group, "n": n}), MessageGroupId=group
            )
    run = Run(aws, tmp_path / "rt")
    assert run.until(lambda: run.runtime.stats["messages_deleted"] == 12 and aws.depth(url) == 0)
    ended = sorted(_lines(spans, "end"), key=lambda s: s["start"])
    for group in ("a", "b", "c"):
        mine = [s for s in ended if any(b["group"] == group for b in s["bodies"])]
        order = [b["n"] for s in mine for b in s["bodies"] if b["group"] == group]
        assert order == [0, 1, 2, 3], (group, ended)  # each delivered once, in order
        for earlier, later in itertools.pairwise(mine):
            assert earlier["end"] <= later["start"], (group, ended)  # never two batches of a group at once
    assert _most_at_once(ended) >= 2, ended  # other groups went on meanwhile
    assert not run.runtime.errors


def _running(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


def test_a_timeout_stops_only_the_worker_that_ran_it(aws: Aws, tmp_path: Path) -> None:
    url, arn = aws.queue("hang", VisibilityTimeout="3")
    spans = tmp_path / "spans"
    function = _spans_function(aws, spans, sleep=0.3, timeout=3)
    aws.mapping(function, arn, BatchSize=1)
    _send(aws, url, [{"hang": True}])
    run = Run(aws, tmp_path / "rt")
    sent: list[bool] = []
    at_timeout: dict[str, Any] = {}

    def done() -> bool:
        hung = [s for s in _lines(spans, "start") if s["bodies"][0].get("hang")]
        if hung and not sent:
            _send(aws, url, [{"n": n} for n in range(3)])  # while the first batch hangs
            sent.append(True)
        timed_out = [b for b in run.of("batch") if "timed out" in b["why"]]
        if timed_out and not at_timeout:
            fine = [s for s in _lines(spans, "end") if not s["bodies"][0].get("hang")]
            at_timeout.update(
                hung_pid_running=_running(hung[0]["pid"]),
                fine=fine,
                fine_pids_running=[_running(s["pid"]) for s in fine],
            )
        return run.runtime.stats["messages_deleted"] == 4 and aws.depth(url) == 0

    assert run.until(done, deadline=40)
    hung = next(s for s in _lines(spans, "start") if s["bodies"][0].get("hang") and s["first"][0])
    assert at_timeout, run.events
    assert not at_timeout["hung_pid_running"]  # the timed-out worker was stopped
    assert len(at_timeout["fine"]) == 3, at_timeout  # the others ran while it hung,
    assert all(s["end"] < hung["start"] + 3 for s in at_timeout["fine"]), (hung, at_timeout)
    assert all(at_timeout["fine_pids_running"]), at_timeout  # in workers that were left running
    assert hung["pid"] not in {s["pid"] for s in at_timeout["fine"]}
    assert not run.runtime.errors
