"""The provider Terraform attaches to instead of starting its own (conftest.attached_provider): the
stacks' apply, plan and output and the checkov plan use one, so it must really be the one they use,
configure like a provider Terraform starts, and be gone after the block."""

from __future__ import annotations

import ssl
from pathlib import Path

import pytest

from tests.terraform.conftest import Workspace, attached_provider, init

# A configured provider (plan configures it) that calls nothing: the partition is computed locally.
OFFLINE_ROOT = """
terraform {
  required_providers {
    aws = { source = "hashicorp/aws" }
  }
}

provider "aws" {
  region                      = "us-east-1"
  access_key                  = "offline"
  secret_key                  = "offline"
  skip_credentials_validation = true
  skip_requesting_account_id  = true
  skip_metadata_api_check     = true
  skip_region_validation      = true
}

data "aws_partition" "current" {}

output "partition" {
  value = data.aws_partition.current.partition
}
"""


def test_terraform_uses_the_attached_provider_until_it_is_closed(workspace: Workspace) -> None:
    directory = workspace.dir("modules/queue")
    with attached_provider(directory, workspace.terraform.env) as attached:
        assert set(attached) == {"TF_REATTACH_PROVIDERS"}
        used = workspace.terraform.run(["validate", "-no-color"], directory, extra_env=attached)
        assert used.returncode == 0, used.stdout + used.stderr
    # The same variable once the provider is closed: Terraform fails to reach it rather than start
    # one of its own, so the validate above was served by the attached provider.
    gone = workspace.terraform.run(["validate", "-no-color"], directory, extra_env=attached)
    assert gone.returncode != 0, gone.stdout


def test_it_configures_with_a_ca_bundle_in_the_environment(workspace: Workspace) -> None:
    """Many machines set AWS_CA_BUNDLE (this one does). A -debug provider given it fails to configure
    a second time ("unable to add custom RootCAs HTTPClient"), as every stack's plan after its apply
    then would."""
    paths = ssl.get_default_verify_paths()
    bundle = next((f for f in (paths.cafile, paths.openssl_cafile) if f and Path(f).is_file()), None)
    if bundle is None:
        pytest.skip("no CA bundle on this machine")
    directory = workspace.root / "attached-offline"
    directory.mkdir()
    (directory / "main.tf").write_text(OFFLINE_ROOT, encoding="utf-8")
    initialised = init(workspace.terraform, directory, "-backend=false")
    assert initialised.returncode == 0, initialised.stdout + initialised.stderr
    # The endpoint from the environment, not an endpoints block (~2 s of CPU per configure): closed.
    env = {**workspace.terraform.env, "AWS_CA_BUNDLE": bundle, "AWS_ENDPOINT_URL": "http://127.0.0.1:9"}
    with attached_provider(directory, env) as attached:
        # One apply configures the provider twice, in its plan and in its apply, as a stack's apply
        # and the plan after it do: the second configure is the one that failed. (Two plans showed the
        # same for one Terraform process and one provider walk more, ~3 s of CPU.)
        applied = workspace.terraform.run(
            ["apply", "-auto-approve", "-no-color", "-input=false"],
            directory,
            extra_env={"AWS_CA_BUNDLE": bundle, **attached},
        )
    assert applied.returncode == 0, applied.stdout + applied.stderr
    assert 'partition = "aws"' in applied.stdout


def test_nothing_is_attached_before_init(tmp_path: Path, workspace: Workspace) -> None:
    with attached_provider(tmp_path, workspace.terraform.env) as attached:
        assert attached == {}
