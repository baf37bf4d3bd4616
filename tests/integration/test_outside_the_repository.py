"""What a user does, from a directory outside this checkout: pin the modules to a release tag of the
repository, package their own processor with `serverless-retry package`, apply, and watch one order
fail once and succeed on its retry while another goes to the retry-exhausted queue with its reason.
The user's repository (a tagged clone of this one, the README's scheduled-retry quickstart as their
root with only its module source rewritten to that clone, their processor with one third-party
requirement) is prepared and applied once per run in the background: tests/integration/outside_stack.py.
The local runtime runs both deployments, each from what Terraform deployed (the layered one with the
layer extracted at its /opt).
"""

from __future__ import annotations

import json
import time
import zipfile
from pathlib import Path
from typing import Any

import pytest
from serverless_retry.terminal import read_terminal
from serverless_retry_tools.local.runtime.runtime import Runtime

from tests.integration.outside_stack import TAG
from tests.terraform.conftest import ROOT
from tests.terraform.stack import Applied

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(not (ROOT / ".git").exists(), reason="not a git checkout: nothing to clone and tag"),
]


def _receive_all(sqs: Any, url: str) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    for _ in range(20):
        got = sqs.receive_message(
            QueueUrl=url, MaxNumberOfMessages=10, VisibilityTimeout=43_200, MessageAttributeNames=["All"]
        ).get("Messages", [])
        if not got:
            break
        found += got
    return found


def test_the_users_root_plans_no_change_after_its_apply(outside_stack: Applied) -> None:
    # -detailed-exitcode: 0 = no changes, 2 = changes, 1 = error.
    plan = outside_stack.second_plan
    assert plan.returncode == 0, plan.stdout + plan.stderr


def test_the_modules_come_from_the_tagged_clone_and_the_packages_hold_what_they_should(
    outside_stack: Applied,
) -> None:
    modules = json.loads((outside_stack.directory / ".terraform" / "modules" / "modules.json").read_text())
    sources = {m["Key"]: m["Source"] for m in modules["Modules"] if m["Key"]}
    assert (
        sources["orders"]
        == f"git::file://{outside_stack.directory.parent / 'serverless-retry'}//modules/scheduled-retry?ref={TAG}"
    )
    assert sources["layer"].endswith(f"//modules/layer?ref={TAG}")
    build = outside_stack.directory / "build"

    def tops(name: str) -> set[str]:
        with zipfile.ZipFile(build / name) as zf:
            return {n.split("/")[0] for n in zf.namelist() if not n.split("/")[0].endswith(".dist-info")}

    assert {"orders", "humanize", "serverless_retry"} <= tops("orders.zip")
    assert "boto3" not in tops("orders.zip")  # the Lambda runtime provides it
    assert tops("orders-code.zip") == {"orders", "humanize"}  # a plain zip: serverless_retry is in the layer
    assert tops("serverless-retry-layer.zip") == {"python"}
    lam = outside_stack.client("lambda")
    (layer,) = lam.get_function(FunctionName="orders-layered")["Configuration"]["Layers"]
    assert layer["Arn"].split(":")[-2] == "serverless-retry"
    assert not lam.get_function(FunctionName="orders")["Configuration"].get("Layers")


@pytest.mark.parametrize(
    ("queue", "exhausted", "function"),
    [
        ("orders_queue_url", "orders_exhausted_queue_url", "orders"),
        ("layered_queue_url", "layered_exhausted_queue_url", "orders-layered"),
    ],
)
def test_an_order_is_retried_once_and_succeeds_and_a_bad_one_is_exhausted_with_its_reason(
    outside_stack: Applied, tmp_path: Path, queue: str, exhausted: str, function: str
) -> None:
    sqs = outside_stack.client("sqs")
    out = outside_stack.outputs
    sqs.send_message(
        QueueUrl=out[queue], MessageBody=json.dumps({"sku": "A-1", "amount": 1234567, "flaky": True})
    )
    bad_id = sqs.send_message(QueueUrl=out[queue], MessageBody=json.dumps({"amount": 5}))["MessageId"]
    lines: list[str] = []

    def log(name: str, line: str) -> None:
        if name == function:
            lines.append(line)

    def done() -> bool:
        charged = any(line.startswith("charged A-1") for line in lines)
        attrs = sqs.get_queue_attributes(
            QueueUrl=out[exhausted], AttributeNames=["ApproximateNumberOfMessages"]
        )
        return charged and attrs["Attributes"]["ApproximateNumberOfMessages"] == "1"

    runtime = Runtime(
        outside_stack.emulator.url, region=outside_stack.emulator.region, work_dir=tmp_path, log_tap=log
    )
    started = time.monotonic()
    assert runtime.run(until=done, deadline_seconds=120, check_every=0.3), "\n".join(lines[-40:])
    assert time.monotonic() - started < 120
    # Failed once (the ConnectionError), then retried by the policy and charged on its second attempt,
    # with the third-party requirement doing its part.
    assert [line for line in lines if line.startswith("charged")] == ["charged A-1 1,234,567 attempt 2"]
    (message,) = _receive_all(sqs, out[exhausted])
    view = read_terminal(message["Body"], message.get("MessageAttributes"), message_id=message["MessageId"])
    assert (view.outcome, view.error_type, view.error, view.id) == (
        "non-retryable",
        "NonRetryableError",
        "no sku",
        bad_id,
    )
    assert view.reason
    assert json.loads(view.body) == {"amount": 5}
