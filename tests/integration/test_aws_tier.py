"""The AWS tier's code (``./build.sh test-aws``) run against the emulator, so it cannot rot: deploy
examples/scheduled-retry under a fresh prefix, its scenario with the demo's accounting, the
fidelity checks, destroy; then nothing named with the prefix is left, and ``terraform destroy``
alone removed it all (the sweep by prefix found nothing to delete).

One example here (about 100 s); the real tier runs all three. ``SERVERLESS_RETRY_AWS_TIER_ALL=1``
runs all three here too (about 6 minutes).
"""

from __future__ import annotations

import io
import os
import shutil
from pathlib import Path

import pytest
from serverless_retry_tools.aws_tier.cleanup import inventory
from serverless_retry_tools.aws_tier.runner import new_prefix, run_tier
from serverless_retry_tools.aws_tier.targets import EmulatorTarget
from serverless_retry_tools.local.demos.demo_frame import ProgressLines

from tests.terraform.conftest import ROOT, terraform_env

EXAMPLES = (
    ["scheduled-retry", "native-retry", "self-healing"]
    if os.environ.get("SERVERLESS_RETRY_AWS_TIER_ALL") == "1"
    else ["scheduled-retry"]
)


@pytest.mark.skipif(shutil.which("terraform") is None, reason="terraform is not on PATH")
@pytest.mark.skipif(
    not (ROOT / "dist" / "examples" / "scheduled-retry.zip").is_file(), reason="run ./build.sh package first"
)
def test_tier_on_the_emulator_deploys_runs_checks_and_leaves_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for key, value in terraform_env().items():
        if key.startswith(("TF_", "SERVERLESS_RETRY_TF")) or key == "PATH":
            monkeypatch.setenv(key, value)
    stream = io.StringIO()
    prefix = new_prefix()
    with EmulatorTarget(tmp_path / "emulator") as target:
        report = run_tier(
            target, examples=EXAMPLES, prefix=prefix, work_dir=tmp_path, repo=ROOT, out=ProgressLines(stream)
        )
        left, errors = inventory(target, prefix)
        # The emulator itself still runs: nothing of the run is there.
        assert target.emulator.running
    log = stream.getvalue()
    assert not errors, errors
    assert left == {}, left
    assert report.ok, log
    assert [o.example for o in report.outcomes] == EXAMPLES
    rows = {c.row for c in report.checks}
    assert any("DelaySeconds above 900" in r for r in rows)
    assert any("FIFO send without a deduplication id" in r for r in rows)
    assert any("FIFO queue as a schedule's dead-letter queue" in r for r in rows)
    assert any("recursive loop detection" in r for r in rows)
    # terraform destroy removed what it applied, and the probes removed themselves.
    assert "cleanup: deleted" not in log, log
