"""``serverless-retry demo stream`` end to end on the emulator, with fewer records: it exits 0, its
accounting balances for both streams (unordered and its blocking twin), and both modes' figures are
printed: the poison record's attempts and reason, the waits, how far each shard got."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(shutil.which("terraform") is None, reason="terraform is not on PATH"),
]

ORDERS = 40
RECORDS = ORDERS + 2  # one poison record and one invalid one


def test_the_stream_demo_accounts_for_every_record_of_both_streams(tmp_path: Path) -> None:
    cli = Path(sys.executable).with_name("serverless-retry")
    work = tmp_path / "demo"
    # The emulator goes away with the run, so the test skips the destroy (a minute of Terraform).
    command = [str(cli), "demo", "--orders", str(ORDERS), "--work-dir", str(work), "--skip-destroy", "stream"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=420, check=False)
    printed = done.stdout + done.stderr
    print(printed)  # shown when an assertion fails
    assert done.returncode == 0, printed[-4000:]

    for mode, places in (
        ("unordered", r"processed 40, exhausted 2, on-failure 0"),
        ("blocking", r"processed \d+, exhausted 0, on-failure \d+"),
    ):
        assert re.search(rf"accounting {mode}: {RECORDS} records = {places}: balanced", printed), printed[
            -3000:
        ]
    assert "OK: every record of both streams is accounted for" in printed
    # The poison record under each mode: ours retries it by the policy (4 attempts) then exhausts it;
    # Lambda's native behaviour retries it MaximumRetryAttempts times and gives up on it.
    assert re.search(
        r"unordered\s+4 attempts; retried through the retry queue after \d+ > \d+ > \d+ logical s", printed
    )
    assert re.search(r"unordered .*exhausted: attempt 4 >= max_attempts 4", printed)
    assert re.search(
        r"blocking\s+3 invocations with it \(MaximumRetryAttempts 2.*RetryAttemptsExhausted", printed
    )
    for mode in ("unordered", "blocking"):
        assert re.search(
            rf"{mode}\s+after the poison record, in its shard's lane\s+\d+\s+[\d.]+\s+[\d.]+", printed
        )
        assert (
            len(re.findall(rf"^  {mode}\s+shardId-\d+", printed, re.MULTILINE)) == 2
        )  # how far each shard got

    assert re.search(
        r"unordered\s+the poison record held its lane [\d.]+ logical s \([\d.]+ real\); \d+ later records",
        printed,
    )
    assert re.search(
        r"blocking\s+the poison record held its lane [\d.]+ logical s \([\d.]+ real\); \d+ later records",
        printed,
    )

    rows = json.loads((work / "accounting.json").read_text())
    assert Counter(r["mode"] for r in rows) == {"unordered": RECORDS, "blocking": RECORDS}
    outcomes = {(r["mode"], r["kind"]): set() for r in rows}
    for r in rows:
        outcomes[(r["mode"], r["kind"])].add(r["outcome"])
    assert outcomes[("unordered", "ok")] == {"processed"}
    assert outcomes[("unordered", "poison")] == outcomes[("unordered", "invalid")] == {"exhausted"}
    assert outcomes[("blocking", "poison")] == outcomes[("blocking", "invalid")] == {"on-failure"}
    assert outcomes[("blocking", "ok")] <= {"processed", "on-failure"}
