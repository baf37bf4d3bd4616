"""The self-healing example of docs/patterns/self-healing.md, kept runnable: the page shows this file's ``example`` block
verbatim (a test below checks that), so the documented example cannot rot."""

from __future__ import annotations

import re
from pathlib import Path

# --- example ---
from serverless_retry import RetryContext, self_healing
from serverless_retry.selfheal import attach
from serverless_retry.testing import lambda_context

seen = []


@self_healing
def handler(event, context, retry: RetryContext):
    order_id = event["Records"][0]["Sns"]["Message"]  # the event exactly as it first arrived
    seen.append((order_id, retry.id, retry.attempt))  # retry.id: stable across attempts (idempotency key)
    if order_id == "o-broken":
        raise ValueError("no such order")  # the source's retry policy classifies it


def test_a_redrive_runs_the_same_code_on_the_same_event() -> None:
    sns = {"Type": "Notification", "MessageId": "m-1", "Message": "o-1", "MessageAttributes": {}}
    event = {"Records": [{"EventSource": "aws:sns", "Sns": sns}]}
    handler(event, lambda_context("orders-fn"))  # the first delivery
    state = {
        "v": 1,
        "id": "m-1",
        "attempt": 2,
        "first_failed_at": "2026-11-30T10:00:00Z",
        "previous_delay_seconds": 30,
    }
    handler(attach(event, "sns", state), lambda_context("orders-fn"))  # what a redrive delivers
    assert seen == [("o-1", "m-1", 1), ("o-1", "m-1", 2)]


# --- end example ---


def test_the_readme_shows_this_example_verbatim() -> None:
    source = Path(__file__).read_text()
    example = re.search(r"# --- example ---\n(.*?)\n\n# --- end example ---\n", source, re.DOTALL)
    assert example is not None
    page = (Path(__file__).resolve().parents[2] / "docs" / "patterns" / "self-healing.md").read_text()
    assert example.group(1) in page
