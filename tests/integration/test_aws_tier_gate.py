"""``./build.sh test-aws`` without the opt-in or without credentials: it explains itself, prints the
expected time and cost, and exits 0 having called nothing."""

from __future__ import annotations

import io
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
from serverless_retry_tools.aws_tier import runner
from serverless_retry_tools.aws_tier.estimate import estimate
from serverless_retry_tools.aws_tier.targets import OPT_IN_ENV, opt_in

from tests.terraform.conftest import ROOT


@pytest.fixture(autouse=True)
def no_aws(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No request may leave: botocore's endpoint refuses, and no credential or profile is around."""

    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("the gate made a request")

    monkeypatch.setattr("botocore.endpoint.Endpoint.make_request", refuse)
    for key in [k for k in os.environ if k.startswith("AWS_")] + [OPT_IN_ENV]:
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")


def _run(*argv: str) -> tuple[int, str]:
    stream = io.StringIO()
    return runner.main(list(argv), stream), stream.getvalue()


def test_without_opt_in_it_explains_and_runs_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIAEXAMPLEEXAMPLE00")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "not-a-real-secret")
    code, text = _run("--region", "eu-west-1")
    assert code == 0
    assert "NOT run; nothing was called" in text
    assert f"{OPT_IN_ENV}=yes is not set" in text
    assert f"{OPT_IN_ENV}=yes ./build.sh test-aws --region" in text
    assert "expected wall time: about" in text
    assert "ESTIMATE" in text
    for example in ("scheduled-retry", "native-retry", "self-healing"):
        assert f"examples/{example}" in text


def test_opted_in_without_credentials_explains_and_runs_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(OPT_IN_ENV, "yes")
    code, text = _run("--region", "eu-west-1")
    assert code == 0
    assert "finds no credentials" in text


def test_opt_in_needs_a_region(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIAEXAMPLEEXAMPLE00")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "not-a-real-secret")
    gate = opt_in({OPT_IN_ENV: "yes"}, None)
    assert not gate.open
    assert gate.reasons == ("no --region given",)
    assert opt_in({OPT_IN_ENV: "yes"}, "eu-west-1").open
    assert not opt_in({OPT_IN_ENV: "true"}, "eu-west-1").open


def test_cleanup_refuses_a_prefix_that_is_not_a_runs() -> None:
    code, text = _run("--cleanup", "orders")
    assert code == 2
    assert "srt- and 8 hex digits" in text


def test_the_estimate_is_small_and_monitoring_adds_its_worst_case() -> None:
    plain, monitored = estimate(), estimate(with_monitoring=True)
    assert 0 < plain.dollars < 0.25
    assert monitored.dollars > plain.dollars + 8  # three dashboards at their full month
    assert 30 < plain.minutes < 90


def test_build_sh_test_aws_without_opt_in_exits_0() -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_") and k != OPT_IN_ENV}
    env.update(
        AWS_CONFIG_FILE=os.devnull, AWS_SHARED_CREDENTIALS_FILE=os.devnull, AWS_EC2_METADATA_DISABLED="true"
    )
    proc = subprocess.run(
        ["bash", str(ROOT / "build.sh"), "test-aws", "--region", "eu-west-1"],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "NOT run; nothing was called" in proc.stdout
