"""Pure parts of the terraform driver: which variables a root declares, the ones that point it at the
emulator, and the CLI environment."""

from __future__ import annotations

from pathlib import Path

from serverless_retry_tools.local.sandbox.terraform import (
    cli_environment,
    declared_variables,
    emulator_variables,
)


def test_declared_variables_reads_every_tf_file(tmp_path: Path) -> None:
    (tmp_path / "variables.tf").write_text('variable "aws_endpoint_url" {\n  type = string\n}\n')
    (tmp_path / "more.tf").write_text(
        '  variable "name" {}\nresource "x" "variable" {}\n# variable "commented"\n'
    )
    (tmp_path / "notes.txt").write_text('variable "ignored" {}')
    assert declared_variables(tmp_path) == {"aws_endpoint_url", "name"}


def test_emulator_variables_are_only_those_the_root_declares(tmp_path: Path) -> None:
    url = "http://127.0.0.1:4566"
    assert emulator_variables(tmp_path, url) == {}
    (tmp_path / "variables.tf").write_text('variable "aws_endpoint_url" {}\n')
    assert emulator_variables(tmp_path, url) == {"aws_endpoint_url": url}
    # The examples': Terraform runs with AWS_ENDPOINT_URL=url, so they can leave out the endpoints block.
    (tmp_path / "more.tf").write_text('variable "aws_endpoint_url_in_environment" {}\n')
    assert emulator_variables(tmp_path, url) == {
        "aws_endpoint_url": url,
        "aws_endpoint_url_in_environment": True,
    }


def test_every_example_declares_both_emulator_variables() -> None:
    examples = Path(__file__).resolve().parents[2] / "examples"
    for root in sorted(p for p in examples.iterdir() if (p / "providers.tf").is_file()):
        assert set(emulator_variables(root, "http://127.0.0.1:1")) == {
            "aws_endpoint_url",
            "aws_endpoint_url_in_environment",
        }, root.name


def test_cli_environment_uses_the_offline_mirror_when_present(tmp_path: Path) -> None:
    mirror = tmp_path / "mirror"
    mirror.mkdir()
    env = cli_environment(tmp_path / "work", {"PATH": "/bin", "SERVERLESS_RETRY_TF_MIRROR": str(mirror)})
    rc = Path(env["TF_CLI_CONFIG_FILE"]).read_text()
    assert f'path    = "{mirror}"' in rc
    assert 'exclude = ["registry.terraform.io/hashicorp/*"]' in rc
    assert env["TF_IN_AUTOMATION"] == "1"
    assert Path(env["TF_PLUGIN_CACHE_DIR"]).is_dir()


def test_cli_environment_keeps_an_existing_config_and_drops_a_missing_one(tmp_path: Path) -> None:
    mine = tmp_path / "my.tfrc"
    mine.write_text("")
    kept = cli_environment(
        tmp_path / "w1", {"TF_CLI_CONFIG_FILE": str(mine), "SERVERLESS_RETRY_TF_MIRROR": "/nope"}
    )
    assert kept["TF_CLI_CONFIG_FILE"] == str(mine)
    dropped = cli_environment(
        tmp_path / "w2",
        {"TF_CLI_CONFIG_FILE": str(tmp_path / "missing"), "SERVERLESS_RETRY_TF_MIRROR": "/nope"},
    )
    assert "TF_CLI_CONFIG_FILE" not in dropped
