"""``local apply`` takes the state file, TF_DATA_DIR, CLI configuration and variables from the ready
file, never from the caller's environment or the source (a stand-in ``terraform`` records each call)."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest
from serverless_retry_tools.local.emulator_contract import talk_environment
from serverless_retry_tools.local.sandbox.ready_file import ReadyFileError
from serverless_retry_tools.local.sandbox.reapply import apply_to_sandbox

FAKE_TERRAFORM = """#!/bin/sh
echo "$TF_DATA_DIR|$TF_CLI_CONFIG_FILE|$AWS_ENDPOINT_URL|$AWS_DEFAULT_REGION|$*" >> "$CALLS"
case "$*" in *" output "*) echo '{"release": {"value": "fixed"}}' ;; esac
"""


@pytest.fixture
def terraform_calls(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    script = bin_dir / "terraform"
    script.write_text(FAKE_TERRAFORM)
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    calls = tmp_path / "calls.txt"
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("CALLS", str(calls))
    # The caller's own settings must not count.
    monkeypatch.setenv("TF_DATA_DIR", str(tmp_path / "elsewhere"))
    monkeypatch.setenv("AWS_ENDPOINT_URL", "https://sqs.eu-west-1.amazonaws.com")
    return calls


def _ready(tmp_path: Path, *, pid: int) -> Path:
    root = tmp_path / "root"
    root.mkdir()
    (root / "main.tf").write_text(
        'variable "aws_endpoint_url" {}\nvariable "aws_endpoint_url_in_environment" {}\nvariable "release" {}\n'
    )
    rc = tmp_path / "sandbox" / "terraformrc"
    rc.parent.mkdir()
    rc.write_text("")
    info = {
        "endpoint": "http://127.0.0.1:4566",
        "region": "eu-central-1",
        "state": str(tmp_path / "sandbox" / "terraform.tfstate"),
        "outputs": {"release": "buggy"},
        "clock": {"epoch": 0.0, "scale": 6.0},
        "work_dir": str(tmp_path / "sandbox"),
        "pid": pid,
        "terraform": {
            "root": str(root),
            "state": str(tmp_path / "sandbox" / "terraform.tfstate"),
            "variables": {"aws_endpoint_url": "http://127.0.0.1:4566", "release": "buggy", "name": "a b"},
            "env": {"TF_DATA_DIR": str(tmp_path / "sandbox" / ".terraform"), "TF_CLI_CONFIG_FILE": str(rc)},
        },
    }
    path = tmp_path / "ready.json"
    path.write_text(json.dumps(info))
    return path


def test_everything_comes_from_the_ready_file(tmp_path: Path, terraform_calls: Path) -> None:
    ready = _ready(tmp_path, pid=os.getpid())
    info = apply_to_sandbox(ready, overrides={"release": "fixed"})
    sandbox = tmp_path / "sandbox"
    calls = [line.split("|") for line in terraform_calls.read_text().splitlines()]
    assert [c[4].split()[1] for c in calls] == ["init", "apply", "output"]
    for data_dir, rc, endpoint, region, _ in calls:
        assert (data_dir, rc) == (str(sandbox / ".terraform"), str(sandbox / "terraformrc"))
        assert (endpoint, region) == ("http://127.0.0.1:4566", "eu-central-1")
    apply = calls[1][4]
    assert f"-state={sandbox / 'terraform.tfstate'}" in apply
    assert "-var=release=fixed" in apply
    assert "-var=name=a b" in apply
    assert "-var=aws_endpoint_url=http://127.0.0.1:4566" in apply
    assert "-var=aws_endpoint_url_in_environment=true" in apply  # AWS_ENDPOINT_URL is the sandbox's
    assert info["outputs"] == {"release": "fixed"}
    assert json.loads(ready.read_text())["terraform"]["variables"]["release"] == "fixed"


def test_a_ready_file_whose_sandbox_ended_is_refused(tmp_path: Path, terraform_calls: Path) -> None:
    ready = _ready(tmp_path, pid=2**22 + 12345)  # above Linux's pid_max default: never running
    with pytest.raises(ReadyFileError, match="no longer running"):
        apply_to_sandbox(ready)
    assert not terraform_calls.exists()


def test_the_talk_line_names_the_region_for_boto3_and_the_aws_cli() -> None:
    line = talk_environment("http://127.0.0.1:4566", "eu-central-1")
    pairs = dict(pair.split("=", 1) for pair in line.split())
    assert pairs["AWS_DEFAULT_REGION"] == pairs["AWS_REGION"] == "eu-central-1"
    assert pairs["AWS_ENDPOINT_URL"] == "http://127.0.0.1:4566"


def test_local_without_a_root_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    from serverless_retry_tools.cli import main

    assert main(["local"]) == 2
    assert (
        "serverless-retry local needs --root DIR (or: local apply --ready-file F)" in capsys.readouterr().err
    )
