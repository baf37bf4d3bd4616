"""The outside-the-repository stack: what a user's own infra repository holds, prepared and applied to
a local emulator once per test run, in the background like the example stacks (tests/terraform/stack.py,
``StackSpec.applier``), for tests/integration/test_outside_the_repository.py.

Under the stack's temporary directory (outside the checkout):

- ``serverless-retry/``: the release a user pins, a `git clone` of this checkout tagged ``TAG``. Its
  ``modules/`` are this checkout's as they stand (committed first in the clone when they differ from
  HEAD), so the test checks the modules under development; from a fresh clone nothing differs.
- ``src/orders/`` and ``requirements.txt``: the user's processor (the quickstart's
  ``orders.process:handle``) with one third-party pure-Python requirement from the package index
  (``humanize``: nothing else here brings it, not even the runtime's boto3 directory).
- ``infra/``: the user's root. ``main.tf`` is the README's scheduled-retry quickstart, literally,
  except its module ``source``, rewritten from the public git URL to the local tagged clone
  (``git::file://<clone>//modules/scheduled-retry?ref=<TAG>``: Terraform's git getter, offline);
  ``layered.tf`` deploys the same processor once more, with serverless_retry in a layer
  (modules/layer, the ``layers`` input) and a function zip of the user's code only;
  ``providers.tf`` gives the provider dummy credentials (AWS_ENDPOINT_URL aims it at the emulator). ``build/`` holds the zips, each built by
  ``serverless-retry package``.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

from tests.support.readme import quickstarts
from tests.terraform.conftest import ROOT, ignore_state
from tests.terraform.stack import Applied, SharedStack

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
# The endpoint comes from AWS_ENDPOINT_URL (the stack's Terraform runs with the emulator's environment),
# as the SDKs and the AWS provider read it: no endpoints block, which provider 5.x checks at ~2 s of CPU
# each time it is configured. The dummy credentials keep the root away from any real account.
PROVIDER = """\
provider "aws" {
  region                      = "%(region)s"
  access_key                  = "testing"
  secret_key                  = "testing"
  skip_credentials_validation = true
  skip_requesting_account_id  = true
  skip_metadata_api_check     = true
}
"""
GIT = ["git", "-c", "user.name=outside-test", "-c", "user.email=outside-test@example.com"]


def run(args: list[str], cwd: Path, timeout: float = 600) -> str:
    done = subprocess.run(args, cwd=cwd, capture_output=True, text=True, timeout=timeout, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(args)}:\n{done.stdout}\n{done.stderr}")
    return done.stdout


def serverless_retry(*args: str, cwd: Path) -> str:
    """The command as installed with the tools (the virtualenv's console script)."""
    script = Path(sys.executable).with_name("serverless-retry")
    command = [str(script)] if script.is_file() else [sys.executable, "-m", "serverless_retry_tools.cli"]
    return run([*command, *args], cwd)


def user_repository(home: Path) -> Path:
    """The release a user pins: a clone of this checkout, its modules as they stand, tagged."""
    clone = home / "serverless-retry"
    run(["git", "clone", "--quiet", str(ROOT), str(clone)], home)
    shutil.rmtree(clone / "modules")
    shutil.copytree(ROOT / "modules", clone / "modules", ignore=ignore_state)
    if run(["git", "status", "--porcelain", "--", "modules"], clone).strip():
        run([*GIT, "add", "--all", "modules"], clone)
        run([*GIT, "commit", "--quiet", "--no-verify", "-m", "modules as in the checkout under test"], clone)
    run([*GIT, "tag", "--annotate", TAG, "--message", TAG], clone)
    return clone


def user_code(home: Path, build: Path) -> None:
    """The user's processor and requirements, packaged as a user does: once with serverless_retry in
    the function zip, once as a zip of their code plus the layer."""
    src = home / "src" / "orders"
    src.mkdir(parents=True)
    (src / "__init__.py").write_text("")
    (src / "process.py").write_text(PROCESSOR)
    (home / "requirements.txt").write_text(REQUIREMENT + "\n")
    # For the functions' runtime and architecture (the modules' defaults: python3.12 on arm64), as a
    # user deploying the quickstart must. The emulator's workers run on this machine: the one compiled
    # dependency (google-re2) is imported only for a policy with message regexes, and this has none.
    target = ["--python", "3.12", "--arch", "arm64"]
    common = [*target, "-r", "requirements.txt"]
    serverless_retry("package", "function", "src", *common, "--with-serverless-retry", "-o", str(build / "orders.zip"), cwd=home)  # fmt: skip
    serverless_retry("package", "function", "src", *common, "-o", str(build / "orders-code.zip"), cwd=home)  # fmt: skip
    serverless_retry("package", "layer", *target, "-o", str(build / "serverless-retry-layer.zip"), cwd=home)  # fmt: skip


def user_root(root: Path, clone: Path, region: str) -> None:
    quickstart = quickstarts()["scheduled-retry"]
    # The one change to the README's text: its public source becomes the local tagged clone.
    (public,) = PUBLIC_SOURCE.finditer(quickstart)
    local = quickstart.replace(public.group(0), f'"git::file://{clone}//modules/{public.group(1)}?ref={TAG}"')
    (root / "main.tf").write_text(local)
    (root / "layered.tf").write_text(LAYERED % {"clone": clone, "tag": TAG})
    (root / "providers.tf").write_text(PROVIDER % {"region": region})


class OutsideStack(SharedStack):
    def _apply(self) -> Applied:
        home = self._tmp / "outside"
        root = home / "infra"
        (root / "build").mkdir(parents=True)
        clone = user_repository(home)
        user_code(home, root / "build")
        self._emulator.start()
        user_root(root, clone, self._emulator.region)
        second_plan, outputs = self._deploy(root)
        return Applied(self.spec, self._emulator, root, {}, outputs, second_plan)
