"""What a user does, from a directory outside this checkout: pin the modules to a release tag of the
repository, package their own processor with `serverless-retry package`, apply, and watch one order
fail once and succeed on its retry while another goes to the retry-exhausted queue with its reason.

- The repository: a `git clone` of this checkout (its committed HEAD), tagged here with ``TAG``.
- The user's infra root: the README's scheduled-retry quickstart, literally, except its module
  `source`, rewritten from the public git URL to the local tagged clone
  (``git::file://<clone>//modules/scheduled-retry?ref=<TAG>``: Terraform's git getter, offline);
  beside it the same processor deployed once more with serverless_retry in a layer (modules/layer,
  the `layers` input) and a function zip holding only the user's code; and a provider aimed at the
  local emulator.
- The user's processor: their own source directory (``orders/process.py``, the quickstart's
  ``orders.process:handle``) with one third-party pure-Python requirement from the package index
  (``humanize``, which nothing else here brings: the runtime's boto3 directory does not hold it).
- The local runtime runs both functions, each from what Terraform deployed (the layered one with
  the layer extracted at its /opt).
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import boto3
import pytest
from serverless_retry.terminal import read_terminal
from serverless_retry_tools.local.emulator import Emulator
from serverless_retry_tools.local.runtime import Runtime

from tests.support.readme import quickstarts
from tests.terraform.conftest import ROOT, Terraform, terraform_env
from tests.terraform.conftest import init as terraform_init

pytestmark = pytest.mark.integration

TAG = "v0.2.0-test"
PUBLIC_SOURCE = re.compile(
    r'"git::https://github\.com/serverless-retry/serverless-retry\.git//modules/([\w-]+)\?ref=[^"]+"'
)
REQUIREMENT = "humanize==4.16.0"
PROCESSOR = """\
import humanize
from serverless_retry import NonRetryableError
from serverless_retry.message import Message


def handle(message: Message) -> None:
    order = message.json()
    if "sku" not in order:
        raise NonRetryableError("no sku")
    if order.get("flaky") and message.attempt == 1:
        raise ConnectionError("payment gateway reset the connection")
    print("charged", order["sku"], humanize.intcomma(order["amount"]), "attempt", message.attempt)
"""
# The same processor once more, its code in a zip of its own and serverless_retry in a layer.
LAYERED = """\
module "layer" {
  source = "git::file://%(clone)s//modules/layer?ref=%(tag)s"

  name    = "serverless-retry"
  package = "${path.module}/build/serverless-retry-layer.zip"
}

module "orders_layered" {
  source = "git::file://%(clone)s//modules/scheduled-retry?ref=%(tag)s"

  name      = "orders-layered"
  package   = "${path.module}/build/orders-code.zip"
  layers    = [module.layer.arn]
  processor = "orders.process:handle"
  timeout   = 30
}

output "layered_queue_url" {
  value = module.orders_layered.queue_url
}

output "layered_exhausted_queue_url" {
  value = module.orders_layered.exhausted_queue_url
}
"""
PROVIDER = """\
provider "aws" {
  region                      = "%(region)s"
  access_key                  = "testing"
  secret_key                  = "testing"
  skip_credentials_validation = true
  skip_requesting_account_id  = true
  skip_metadata_api_check     = true

  endpoints {
%(endpoints)s
  }
}
"""
SERVICES = ("cloudwatch", "cloudwatchlogs", "dynamodb", "iam", "lambda", "scheduler", "sqs", "sts")
# Logical seconds per real second: the quickstart's visibility timeout (6 x 30 s) is 9 real seconds.
CLOCK_SCALE = 20.0


def _run(args: list[str], cwd: Path, timeout: float = 600) -> str:
    done = subprocess.run(args, cwd=cwd, capture_output=True, text=True, timeout=timeout, check=False)
    assert done.returncode == 0, f"{' '.join(args)}:\n{done.stdout}\n{done.stderr}"
    return done.stdout


def _serverless_retry(*args: str, cwd: Path) -> str:
    """The command as installed with the tools (the virtualenv's console script)."""
    script = Path(sys.executable).with_name("serverless-retry")
    command = [str(script)] if script.is_file() else [sys.executable, "-m", "serverless_retry_tools.cli"]
    return _run([*command, *args], cwd)


@dataclass(frozen=True)
class Deployed:
    emulator: Emulator
    home: Path
    outputs: dict[str, Any]

    def client(self, service: str) -> Any:
        return boto3.client(service, **self.emulator.client_kwargs())  # type: ignore[call-overload]


def _user_repository(home: Path) -> Path:
    """The release a user pins: a clone of this checkout, tagged."""
    if not (ROOT / ".git").exists():
        pytest.skip("not a git checkout: nothing to clone and tag")
    clone = home / "serverless-retry"
    _run(["git", "clone", "--quiet", str(ROOT), str(clone)], home)
    _run(
        ["git", "-c", "user.name=test", "-c", "user.email=test@example.com", "tag", "-a", TAG, "-m", TAG],
        clone,
    )
    return clone


def _user_code(home: Path) -> None:
    """The user's processor and its requirements, packaged twice with `serverless-retry package`."""
    src = home / "src" / "orders"
    src.mkdir(parents=True)
    (src / "__init__.py").write_text("")
    (src / "process.py").write_text(PROCESSOR)
    (home / "requirements.txt").write_text(REQUIREMENT + "\n")
    infra_build = home / "infra" / "build"
    common = ["--python", "3.12", "-r", "requirements.txt"]
    _serverless_retry("package", "function", "src", *common, "--with-serverless-retry", "-o", str(infra_build / "orders.zip"), cwd=home)  # fmt: skip
    _serverless_retry("package", "function", "src", *common, "-o", str(infra_build / "orders-code.zip"), cwd=home)  # fmt: skip
    _serverless_retry("package", "layer", "--python", "3.12", "-o", str(infra_build / "serverless-retry-layer.zip"), cwd=home)  # fmt: skip


def _user_root(home: Path, clone: Path, emulator: Emulator) -> Path:
    root = home / "infra"
    quickstart = quickstarts()["scheduled-retry"]
    # The one change to the README's text: its public source becomes the local tagged clone.
    (public,) = PUBLIC_SOURCE.finditer(quickstart)
    local = quickstart.replace(public.group(0), f'"git::file://{clone}//modules/{public.group(1)}?ref={TAG}"')
    (root / "main.tf").write_text(local)
    (root / "layered.tf").write_text(LAYERED % {"clone": clone, "tag": TAG})
    endpoints = "\n".join(f'    {s} = "{emulator.url}"' for s in SERVICES)
    (root / "providers.tf").write_text(PROVIDER % {"region": emulator.region, "endpoints": endpoints})
    return root


@pytest.fixture(scope="module")
def deployed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Deployed]:
    home = tmp_path_factory.mktemp("outside")
    assert ROOT not in home.parents
    clone = _user_repository(home)
    _user_code(home)
    with Emulator(clock_scale=CLOCK_SCALE, log_path=home / "emulator.log") as emulator:
        root = _user_root(home, clone, emulator)
        terraform = Terraform(terraform_env(), niced=False)
        env = emulator.env()
        initialised = terraform_init(terraform, root)
        assert initialised.returncode == 0, initialised.stdout + initialised.stderr
        applied = terraform.run(["apply", "-auto-approve", "-no-color"], root, extra_env=env, timeout=600)
        assert applied.returncode == 0, applied.stdout + applied.stderr
        output = terraform.run(["output", "-json"], root, extra_env=env)
        outputs = {k: v["value"] for k, v in json.loads(output.stdout).items()}
        yield Deployed(emulator, home, outputs)


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


def test_the_modules_come_from_the_tagged_clone_and_the_packages_hold_what_they_should(
    deployed: Deployed,
) -> None:
    modules = json.loads((deployed.home / "infra" / ".terraform" / "modules" / "modules.json").read_text())
    sources = {m["Key"]: m["Source"] for m in modules["Modules"] if m["Key"]}
    assert (
        sources["orders"]
        == f"git::file://{deployed.home / 'serverless-retry'}//modules/scheduled-retry?ref={TAG}"
    )
    assert sources["layer"].endswith(f"//modules/layer?ref={TAG}")
    build = deployed.home / "infra" / "build"

    def tops(name: str) -> set[str]:
        with zipfile.ZipFile(build / name) as zf:
            return {n.split("/")[0] for n in zf.namelist() if not n.split("/")[0].endswith(".dist-info")}

    assert {"orders", "humanize", "serverless_retry"} <= tops("orders.zip")
    assert "boto3" not in tops("orders.zip")  # the Lambda runtime provides it
    assert tops("orders-code.zip") == {"orders", "humanize"}  # a plain zip: serverless_retry is in the layer
    assert tops("serverless-retry-layer.zip") == {"python"}
    lam = deployed.client("lambda")
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
    deployed: Deployed, tmp_path: Path, queue: str, exhausted: str, function: str
) -> None:
    sqs = deployed.client("sqs")
    out = deployed.outputs
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

    runtime = Runtime(deployed.emulator.url, region=deployed.emulator.region, work_dir=tmp_path, log_tap=log)
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
