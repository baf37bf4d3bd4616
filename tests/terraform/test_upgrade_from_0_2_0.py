"""An existing deployment of the v0.2.0 modules upgrades in place: no resource is destroyed or replaced.

The modules moved their functions into modules/function and self-healing's queues into modules/queue;
`moved` blocks carry each resource's state to its new address. This applies examples/scheduled-retry
(with the operator's redrive function on, so all four functions are covered) and examples/self-healing
as they were at 0.2.0, each on its own emulator, then swaps in today's modules/ beside the same root and
plans: the plan may update in place or create what is new, but must delete nothing.

0.2.0 is the commit whose CHANGELOG opens at the finished 0.2.0 entry (an empty Unreleased section above
``## [0.2.0]``) and whose package says ``__version__ = "0.2.0"``: the last commit before the next
release's work began (its modules are those of 40f7d52, the entry's last modules change). The two
applies run side by side (~90 s each, the provider's SQS waiters), then two plans.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import tarfile
import tempfile
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.terraform.conftest import ROOT, Terraform, ignore_state, terraform_env
from tests.terraform.conftest import init as terraform_init
from tests.terraform.stack import Applied, SharedStack, StackSpec

pytestmark = pytest.mark.integration

V0_2_0 = "b397109"
# The operator's redrive function is off by default: an override file (merged into the example's
# module block by Terraform) turns it on in both the old and the new configuration.
OPERATOR_ON = 'module "orders" {\n  operator_redrive = { enabled = true }\n}\n'
SPECS = (
    StackSpec("scheduled-retry", "", "examples/scheduled-retry/src/orders_example", {"function_timeout": 30}),
    StackSpec("self-healing", "", "examples/self-healing/src/self_healing_example", clock_scale=10.0),
)


def _git(*args: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, timeout=60, check=False)


def _release_commit() -> str:
    """V0_2_0, checked to be the 0.2.0 release (skips where the clone has no such history)."""
    if _git("cat-file", "-e", f"{V0_2_0}^{{commit}}").returncode != 0:
        pytest.skip(f"the clone has no commit {V0_2_0} (v0.2.0): a shallow clone cannot test the upgrade")
    version = _git("show", f"{V0_2_0}:lambda_src/serverless_retry/__init__.py").stdout.decode()
    changelog = _git("show", f"{V0_2_0}:CHANGELOG.md").stdout.decode()
    assert '__version__ = "0.2.0"' in version
    assert "## [Unreleased]\n\n## [0.2.0]" in changelog, "the commit is not the finished 0.2.0 entry"
    return V0_2_0


class OldStack(SharedStack):
    """A spec's example applied from the modules and examples of ``rev``, not the working tree's."""

    rev = V0_2_0

    def _apply(self) -> Applied:
        archive = _git("archive", "--format=tar", self.rev, "modules", "examples")
        assert archive.returncode == 0, archive.stderr.decode()
        tar = self._tmp / "old.tar"
        tar.write_bytes(archive.stdout)
        with tarfile.open(tar) as t:
            t.extractall(self._tmp, filter="data")
        tar.unlink()
        directory = self._tmp / self.spec.root
        if self.spec.name == "scheduled-retry":
            (directory / "upgrade_override.tf").write_text(OPERATOR_ON, encoding="utf-8")
        package = self._package()
        try:
            self._emulator.start()
        except Exception as exc:
            pytest.skip(f"the emulator did not start: {exc}")
        variables = {"aws_endpoint_url": self._emulator.url, "package": str(package), **self.spec.variables}
        tf_vars = [f"-var={k}={v}" for k, v in variables.items()]
        second_plan, outputs = self._deploy(directory, tf_vars)
        return Applied(self.spec, self._emulator, directory, variables, outputs, second_plan)


@dataclass(frozen=True)
class Upgrade:
    applied: Applied
    changes: list[dict[str, Any]]  # resource_changes of today's modules' plan against the old state


def _plan_with_todays_modules(terraform: Terraform, stack: OldStack, applied: Applied) -> Upgrade:
    modules = stack._tmp / "modules"
    shutil.rmtree(modules)
    shutil.copytree(ROOT / "modules", modules, ignore=ignore_state)
    directory = applied.directory
    env = applied.emulator.env()
    # Again: today's modules call modules the old ones did not (modules/function).
    init = terraform_init(terraform, directory)
    assert init.returncode == 0, init.stdout + init.stderr
    tf_vars = [f"-var={k}={v}" for k, v in applied.variables.items()]
    plan = terraform.run(
        ["plan", "-no-color", "-out=upgrade.tfplan", *tf_vars], directory, extra_env=env, timeout=300
    )
    assert plan.returncode == 0, plan.stdout + plan.stderr
    show = terraform.run(["show", "-json", "upgrade.tfplan"], directory, extra_env=env, timeout=120)
    assert show.returncode == 0, show.stderr
    return Upgrade(applied, json.loads(show.stdout).get("resource_changes", []))


@pytest.fixture(scope="module")
def upgrades() -> Iterator[dict[str, Upgrade]]:
    rev = _release_commit()
    if shutil.which("terraform") is None:
        pytest.skip("terraform is not on PATH")
    terraform = Terraform(terraform_env(), niced=False)
    tmp = Path(tempfile.mkdtemp(prefix="serverless-retry-upgrade-"))
    stacks: list[OldStack] = []
    for spec in SPECS:
        (tmp / spec.name).mkdir()
        stack = OldStack(spec, terraform, tmp / spec.name)
        stack.rev = rev
        stacks.append(stack)
    try:
        for stack in stacks:
            stack.start()

        def upgrade(stack: OldStack) -> Upgrade:
            return _plan_with_todays_modules(terraform, stack, stack.result(timeout=600))

        with ThreadPoolExecutor(len(stacks)) as pool:
            yield dict(zip((s.spec.name for s in stacks), pool.map(upgrade, stacks), strict=True))
    finally:
        for stack in stacks:
            stack.close()
        shutil.rmtree(tmp, ignore_errors=True)


def _deleted(upgrade: Upgrade) -> list[str]:
    return [
        f"{c['address']}: {'/'.join(c['change']['actions'])}"
        for c in upgrade.changes
        if "delete" in c["change"]["actions"]
    ]


@pytest.mark.parametrize("example", [s.name for s in SPECS])
def test_upgrading_from_0_2_0_destroys_and_replaces_nothing(
    upgrades: dict[str, Upgrade], example: str
) -> None:
    upgrade = upgrades[example]
    assert upgrade.applied.second_plan.returncode == 0, upgrade.applied.second_plan.stdout
    assert _deleted(upgrade) == []


def test_the_moved_functions_keep_their_state(upgrades: dict[str, Upgrade]) -> None:
    """Every function of 0.2.0 is still in the state, at its new address, and nothing is forgotten
    (a `removed` block would leave a real resource unmanaged)."""
    for upgrade in upgrades.values():
        forgotten = [c["address"] for c in upgrade.changes if "forget" in c["change"]["actions"]]
        assert forgotten == []
    moved = {
        c["previous_address"]: c["address"]
        for u in upgrades.values()
        for c in u.changes
        if c.get("previous_address") and c["type"] == "aws_lambda_function"
    }
    assert moved == {
        "module.orders.module.consumer.aws_lambda_function.this": "module.orders.module.consumer.module.function.aws_lambda_function.this",
        "module.orders.aws_lambda_function.operator[0]": "module.orders.module.operator[0].aws_lambda_function.this",
        "module.heal.aws_lambda_function.enrichment": "module.heal.module.enrichment.aws_lambda_function.this",
        "module.heal.aws_lambda_function.redrive": "module.heal.module.redrive.aws_lambda_function.this",
    }
