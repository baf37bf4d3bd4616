"""Native retry seen and handled from the CLI, on the local emulator (moto in server mode, its
logical clock): the DLQ move at maxReceiveCount x visibility after the first receive (what
``simulate --native`` predicts), the backlog read without receiving, and SQS's move tasks listed,
cancelled, and cancelled on Ctrl-C."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
from serverless_retry_tools.commands.simulate import native_rows
from serverless_retry_tools.local.emulator.emulator import Emulator

pytestmark = pytest.mark.integration

CLI = shutil.which("serverless-retry", path=str(Path(sys.executable).parent)) or "serverless-retry"
# Ctrl-C as a terminal delivers it: SIGINT, which Python turns into KeyboardInterrupt only when SIGINT
# is not ignored at its start. A suite started as a background job of a script ignores SIGINT, and its
# children inherit that, so the CLI starts through this, with SIGINT's default restored.
WITH_SIGINT = [
    sys.executable,
    "-c",
    "import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); os.execvp(sys.argv[1], sys.argv[1:])",
]
SCALE = 20.0  # logical seconds per real second
VISIBILITY = 60  # logical seconds: 3 real seconds a receive
MAX_RECEIVES = 3
MOVED = 60  # at 1 message a second on a real-time clock, a move task outlasts a few CLI runs


def _env(emulator: Emulator) -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith("AWS_")} | emulator.env()


def _cli(emulator: Emulator, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [CLI, *args],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        env=_env(emulator),
        timeout=120,
        check=False,
    )


def _queues(sqs: Any, name: str, *, visibility: int, max_receives: int) -> tuple[str, str]:
    dlq = sqs.create_queue(QueueName=f"{name}-dlq")["QueueUrl"]
    dlq_arn = sqs.get_queue_attributes(QueueUrl=dlq, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    policy = json.dumps({"deadLetterTargetArn": dlq_arn, "maxReceiveCount": str(max_receives)})
    source = sqs.create_queue(
        QueueName=name, Attributes={"RedrivePolicy": policy, "VisibilityTimeout": str(visibility)}
    )["QueueUrl"]
    return source, dlq


def _visible(sqs: Any, url: str) -> int:
    attributes = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["ApproximateNumberOfMessages"])
    return int(attributes["Attributes"]["ApproximateNumberOfMessages"])


@pytest.fixture(scope="module")
def emulator(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Emulator]:
    with Emulator(clock_scale=SCALE, log_path=tmp_path_factory.mktemp("native-ops") / "emulator.log") as emu:
        yield emu


@pytest.fixture(scope="module")
def real_time(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Emulator]:
    """Move tasks at 1 message a second on the real clock: slow enough to list, cancel and interrupt
    with CLI runs that take seconds each on a loaded machine."""
    with Emulator(clock_scale=1.0, log_path=tmp_path_factory.mktemp("move-tasks") / "emulator.log") as emu:
        yield emu


def test_a_failing_message_reaches_the_dlq_at_max_receive_count_times_visibility(emulator: Emulator) -> None:
    """A handler that always fails, polled as Lambda's pollers do (at once when visible, never
    deleting): receives at 0, V, 2V, and the DLQ move on the receive after the last one's visibility
    ends, at 3V after the first receive - what ``simulate --native`` prints, and one visibility
    timeout later than the (maxReceiveCount - 1) x V the docs once gave. The lower bounds are exact
    (a message is hidden for V after each receive); the upper one says the move comes with the first
    poll after the last visibility timeout ends (half a V is 1.5 real seconds for a late poll)."""
    sqs = boto3.client("sqs", **emulator.client_kwargs())
    source, dlq = _queues(sqs, "timed", visibility=VISIBILITY, max_receives=MAX_RECEIVES)
    sqs.send_message(QueueUrl=source, MessageBody="always fails")
    clock = emulator.clock
    # Each moment is read before and after its call: on a loaded machine the call itself can take a
    # logical second or more (a tenth of a real second at x20), so the bounds use the side that makes
    # them hold whatever the calls' own duration.
    receives: list[tuple[float, float]] = []
    moved: tuple[float, float] | None = None
    looks: list[subprocess.CompletedProcess[str]] = []
    look = threading.Thread(
        target=lambda: looks.append(_cli(emulator, "inspect", "--queue-url", source, "--json"))
    )
    deadline = time.monotonic() + 60  # real seconds: 3 V at x20 is 9 s
    while moved is None and time.monotonic() < deadline:
        before = clock.now().timestamp()
        got = sqs.receive_message(QueueUrl=source, MaxNumberOfMessages=1, WaitTimeSeconds=0).get(
            "Messages", []
        )
        if got:
            receives.append((before, clock.now().timestamp()))
            if len(receives) == 1:  # what inspect sees meanwhile, without receiving (beside the polls)
                look.start()
        elif _visible(sqs, dlq):
            moved = (before, clock.now().timestamp())
        else:
            time.sleep(0.02)
    look.join(timeout=120)
    assert moved is not None, f"not in the DLQ after {receives}"
    first, last = receives[0], receives[-1]
    assert len(receives) == MAX_RECEIVES
    for k, (_, after) in enumerate(receives):
        assert after - first[0] >= k * VISIBILITY - 1, receives
    predicted = native_rows(VISIBILITY, MAX_RECEIVES)[-1]
    assert predicted.at_seconds + predicted.delay_seconds == MAX_RECEIVES * VISIBILITY
    assert moved[1] - first[0] >= MAX_RECEIVES * VISIBILITY - 1  # never the old (3 - 1) x V
    assert moved[1] - last[0] >= VISIBILITY - 1
    assert moved[0] - last[1] <= VISIBILITY * 1.5
    (result,) = looks
    assert result.returncode == 0, result.stderr
    backlog = json.loads(result.stdout)
    assert backlog["received"] is False
    assert backlog["backlog"]["in_flight"] + backlog["backlog"]["visible"] == 1
    assert backlog["backlog"]["dlq_after_seconds"] == MAX_RECEIVES * VISIBILITY
    # The look cost no receive: the message went to the DLQ after exactly MAX_RECEIVES receives.
    (dead,) = sqs.receive_message(
        QueueUrl=dlq, MessageSystemAttributeNames=["ApproximateReceiveCount"], VisibilityTimeout=0
    )["Messages"]
    assert int(dead["Attributes"]["ApproximateReceiveCount"]) >= MAX_RECEIVES


def _dead_letters(sqs: Any, name: str, count: int) -> tuple[str, str]:
    """A DLQ holding ``count`` messages SQS's redrive policy moved there (DeadLetterQueueSourceArn)."""
    source, dlq = _queues(sqs, name, visibility=0, max_receives=1)
    for i in range(count):
        sqs.send_message(QueueUrl=source, MessageBody=f"order {i}")
    for _ in range(count * 3):
        if _visible(sqs, dlq) >= count:
            break
        sqs.receive_message(QueueUrl=source, MaxNumberOfMessages=10, VisibilityTimeout=0)
    assert _visible(sqs, dlq) == count
    return source, dlq


def test_move_tasks_listed_and_cancelled(real_time: Emulator) -> None:
    emulator = real_time
    sqs = boto3.client("sqs", **emulator.client_kwargs())
    source, dlq = _dead_letters(sqs, "slow-move", MOVED)
    arn = sqs.get_queue_attributes(QueueUrl=dlq, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    sqs.start_message_move_task(SourceArn=arn, MaxNumberOfMessagesPerSecond=1)  # a minute
    listed = _cli(emulator, "move-tasks", "--queue-url", dlq, "--json")
    assert listed.returncode == 0, listed.stderr
    (task,) = json.loads(listed.stdout)["tasks"]
    assert task["Status"] == "RUNNING"
    refused = _cli(emulator, "move-tasks", "--queue-url", dlq, "--cancel")
    assert refused.returncode == 2
    assert "give --yes" in refused.stderr
    cancelled = _cli(emulator, "move-tasks", "--queue-url", dlq, "--cancel", "--yes", "--json")
    assert cancelled.returncode == 0, cancelled.stderr
    assert json.loads(cancelled.stdout)["tasks"][0]["Status"] in ("CANCELLING", "CANCELLED")
    time.sleep(0.5)
    assert _visible(sqs, dlq) > 0, "the rest stays in the DLQ"
    assert _visible(sqs, dlq) + _visible(sqs, source) == MOVED


def test_ctrl_c_cancels_the_move_task_redrive_native_started(real_time: Emulator) -> None:
    emulator = real_time
    sqs = boto3.client("sqs", **emulator.client_kwargs())
    _source, dlq = _dead_letters(sqs, "interrupted", MOVED)
    process = subprocess.Popen(
        [*WITH_SIGINT, CLI, "redrive", "--from-queue-url", dlq, "--native", "--rate", "1", "--yes"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=_env(emulator),
    )
    try:
        assert process.stderr is not None
        started = ""
        deadline = time.monotonic() + 60
        while "started StartMessageMoveTask" not in started and time.monotonic() < deadline:
            started += process.stderr.readline()
        assert "Ctrl-C cancels it" in started
        process.send_signal(signal.SIGINT)
        _out, err = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == 130, err
    assert "cancelled move task" in err
    arn = sqs.get_queue_attributes(QueueUrl=dlq, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    (task,) = sqs.list_message_move_tasks(SourceArn=arn)["Results"]
    assert task["Status"] in ("CANCELLING", "CANCELLED")
    time.sleep(0.5)
    assert _visible(sqs, dlq) > 0


def test_a_move_task_followed_to_its_end(real_time: Emulator) -> None:
    emulator = real_time
    sqs = boto3.client("sqs", **emulator.client_kwargs())
    source, dlq = _dead_letters(sqs, "followed", 5)
    arn = sqs.get_queue_attributes(QueueUrl=dlq, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    sqs.start_message_move_task(SourceArn=arn, MaxNumberOfMessagesPerSecond=1)  # 5 seconds
    followed = _cli(emulator, "move-tasks", "--queue-url", dlq, "--follow", "--wait", "60s")
    assert followed.returncode == 0, followed.stderr
    assert "COMPLETED" in followed.stdout
    assert "5/5" in followed.stdout
    assert (_visible(sqs, dlq), _visible(sqs, source)) == (0, 5)


def test_filters_that_apply_to_a_native_dlq(emulator: Emulator) -> None:
    """On a DLQ SQS's redrive policy fills, --source (DeadLetterQueueSourceArn) and the ages select;
    --outcome selects only "unknown" (no outcome was recorded), as the help says."""
    sqs = boto3.client("sqs", **emulator.client_kwargs())
    _dead_letters(sqs, "billing", 2)
    _source, dlq = _dead_letters(sqs, "shipping", 3)

    def selected(*filters: str) -> int:
        result = _cli(emulator, "inspect", "--queue-url", dlq, "--json", *filters)
        assert result.returncode == 0, result.stderr
        return int(json.loads(result.stdout)["scanned"])

    assert selected("--source", "shipping") == 3
    assert selected("--source", "billing") == 0
    assert selected("--outcome", "exhausted") == 0
    assert selected("--outcome", "unknown") == 3
    assert selected("--newer-than", "1d") == 3
    assert selected("--older-than", "1d") == 0


def test_a_native_dry_run_answers_json(emulator: Emulator) -> None:
    sqs = boto3.client("sqs", **emulator.client_kwargs())
    _source, dlq = _dead_letters(sqs, "planned", 2)
    result = _cli(emulator, "redrive", "--from-queue-url", dlq, "--native", "--dry-run", "--json")
    assert result.returncode == 0, result.stderr
    plan = json.loads(result.stdout)
    assert (plan["native"], plan["dry_run"], plan["approximate_messages"]) == (True, True, 2)
    assert _visible(sqs, dlq) == 2
