"""checkov on a real plan (terraform show -json) of scheduled-retry, as a security scanner in CI sees it.

Scanning the modules' source cannot tell what a user can configure: an unset optional input passes
there. A plan shows the resources as they would be created. The configuration plans the module twice
against a local moto server (a plan reads only the account and region): with the defaults, and
hardened with the security inputs (a KMS key for the queues, the log group and the environment).
Neither plan has a failed check: the default log group uses CloudWatch Logs' own encryption (its
CKV_AWS_158 skip says why), the hardened one a KMS key (CKV_AWS_158 passes); the default claims table
uses DynamoDB's AWS managed key, the hardened one a customer managed key. The modules' justified
inline skips apply to the plan through checkov's plan enrichment (--repo-root-for-plan-enrichment),
which maps plan resources back to the source.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from moto.server import ThreadedMotoServer

from tests.terraform.checkov import checkov_executable, run_checkov
from tests.terraform.conftest import Workspace, attached_provider, init

KEY = "arn:aws:kms:us-east-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab"
SUBNET = "subnet-0a1b2c3d4e5f60718"
SECURITY_GROUP = "sg-0123456789abcdef0"
CONFIGURATION = f"""
terraform {{
  required_providers {{
    aws = {{ source = "hashicorp/aws" }}
  }}
}}

# Aimed at the moto server by AWS_ENDPOINT_URL (the plan's environment), not an endpoints block, which
# AWS provider 5.x checks at ~2 s of CPU each time it is configured.
provider "aws" {{
  region                      = "us-east-1"
  access_key                  = "testing"
  secret_key                  = "testing"
  skip_credentials_validation = true
  skip_requesting_account_id  = true
  skip_metadata_api_check     = true
  skip_region_validation      = true
}}

module "default" {{
  source    = "../modules/scheduled-retry"
  name      = "orders"
  package   = "../tests/terraform/fixtures/empty.zip"
  processor = "orders.process:handle"
}}

module "hardened" {{
  source                  = "../modules/scheduled-retry"
  name                    = "payments"
  package                 = "../tests/terraform/fixtures/empty.zip"
  processor               = "payments.process:handle"
  kms_key_arn             = "{KEY}"
  logs_kms_key_arn        = "{KEY}"
  environment_kms_key_arn = "{KEY}"
  claims                  = {{ kms_key_arn = "{KEY}" }}
}}

# How teams deploy: serverless_retry in a layer, the processor from S3, in a VPC, with the operator's
# function and extra statements; every deployment input a scanner could object to, hardened.
module "layer" {{
  source  = "../modules/layer"
  name    = "serverless-retry"
  package = "../tests/terraform/fixtures/empty.zip"
}}

module "networked" {{
  source                  = "../modules/scheduled-retry"
  name                    = "shipments"
  s3_package              = {{ bucket = "shipments-artifacts", key = "shipments.zip", object_version = "4" }}
  layers                  = [module.layer.arn]
  architectures           = ["x86_64"]
  processor               = "shipments.process:handle"
  kms_key_arn             = "{KEY}"
  logs_kms_key_arn        = "{KEY}"
  environment_kms_key_arn = "{KEY}"
  vpc                     = {{ subnet_ids = ["{SUBNET}"], security_group_ids = ["{SECURITY_GROUP}"] }}
  policy_statements = [{{
    sid       = "ReadCarriers"
    actions   = ["dynamodb:GetItem"]
    resources = ["arn:aws:dynamodb:us-east-1:123456789012:table/carriers"]
  }}]
  operator_redrive = {{
    enabled                 = true
    logs_kms_key_arn        = "{KEY}"
    environment_kms_key_arn = "{KEY}"
  }}
}}
"""


@pytest.fixture(scope="module")
def moto_server() -> Iterator[str]:
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    yield f"http://{host}:{port}"
    server.stop()


@pytest.fixture(scope="module")
def plan_json(workspace: Workspace, moto_server: str) -> Path:
    directory = workspace.root / "plan-scan"
    directory.mkdir(exist_ok=True)
    (directory / "main.tf").write_text(CONFIGURATION, encoding="utf-8")
    terraform = workspace.terraform
    result = init(terraform, directory)
    assert result.returncode == 0, result.stdout + result.stderr
    with attached_provider(directory, {**terraform.env, "AWS_ENDPOINT_URL": moto_server}) as attached:
        result = terraform.run(
            ["plan", "-no-color", "-input=false", "-out=plan.tfplan"], directory, extra_env=attached
        )
        assert result.returncode == 0, result.stdout + result.stderr
        shown = terraform.run(["show", "-json", "plan.tfplan"], directory, extra_env=attached)
    assert shown.returncode == 0, shown.stderr
    path = directory / "plan.json"
    path.write_text(shown.stdout, encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def scan(workspace: Workspace, plan_json: Path) -> dict[str, Any]:
    checkov = checkov_executable()
    if checkov is None:
        pytest.skip("checkov is not installed (./build.sh test installs it into .venv-checkov)")
    reports = run_checkov(
        checkov,
        [
            "--file",
            str(plan_json),
            "--framework",
            "terraform_plan",
            "--repo-root-for-plan-enrichment",
            str(workspace.root),
        ],
        workspace.root,
        quiet=False,
    )
    (report,) = reports
    assert report["summary"]["parsing_errors"] == 0, report["summary"]
    return report["results"]


def _planned_values(module: dict[str, Any]) -> dict[str, Any]:
    """Every planned resource's values by address, in modules at any depth (the functions are in
    modules/function, two calls below the root)."""
    values = {r["address"]: r.get("values", {}) for r in module.get("resources", [])}
    for child in module.get("child_modules", []):
        values.update(_planned_values(child))
    return values


def _checks(results: dict[str, Any], kind: str) -> set[tuple[str, str]]:
    return {(c["check_id"], c["resource"]) for c in results.get(kind, [])}


def test_the_plan_holds_the_security_inputs(plan_json: Path) -> None:
    plan = json.loads(plan_json.read_text())
    values = _planned_values(plan["planned_values"]["root_module"])
    hardened = "module.hardened.module.consumer"
    function = f"{hardened}.module.function"
    assert values[f"{function}.aws_cloudwatch_log_group.this"]["kms_key_id"] == KEY
    assert values[f"{function}.aws_lambda_function.this"]["kms_key_arn"] == KEY
    assert (
        values["module.default.module.consumer.module.function.aws_cloudwatch_log_group.this"]["kms_key_id"]
        is None
    )
    hardened_sse = values[f"{hardened}.aws_dynamodb_table.claims[0]"]["server_side_encryption"]
    assert hardened_sse == [{"enabled": True, "kms_key_arn": KEY}]
    default_sse = values["module.default.module.consumer.aws_dynamodb_table.claims[0]"][
        "server_side_encryption"
    ]
    assert [s["enabled"] for s in default_sse] == [True]


def test_no_check_fails_on_the_default_or_the_hardened_plan(scan: dict[str, Any]) -> None:
    assert _checks(scan, "failed_checks") == set()
    assert (
        "CKV_AWS_158",
        "module.hardened.module.consumer.module.function.aws_cloudwatch_log_group.this",
    ) in _checks(scan, "passed_checks")
    table = "module.hardened.module.consumer.aws_dynamodb_table.claims[0]"
    assert ("CKV_AWS_119", table) in _checks(scan, "passed_checks") | _checks(scan, "skipped_checks")


def test_the_plan_holds_the_deployment_inputs(plan_json: Path) -> None:
    plan = json.loads(plan_json.read_text())
    values = _planned_values(plan["planned_values"]["root_module"])
    functions = [
        values["module.networked.module.consumer.module.function.aws_lambda_function.this"],
        values["module.networked.module.operator[0].aws_lambda_function.this"],
    ]
    for function in functions:
        assert (function["s3_bucket"], function["s3_key"], function["s3_object_version"]) == (
            "shipments-artifacts",
            "shipments.zip",
            "4",
        )
        assert function["filename"] is None
        assert function["architectures"] == ["x86_64"]
        (vpc,) = function["vpc_config"]
        assert (vpc["subnet_ids"], vpc["security_group_ids"]) == ([SUBNET], [SECURITY_GROUP])
    # Named once: the consumer's role is the function's name, not "<name>-consumer".
    assert (
        values["module.networked.module.consumer.module.function.aws_iam_role.this[0]"]["name"] == "shipments"
    )
    extra = json.loads(
        values["module.networked.module.consumer.module.function.aws_iam_role_policy.extra[0]"]["policy"]
    )
    assert [s["Sid"] for s in extra["Statement"]] == ["ReadCarriers"]
    assert values["module.layer.aws_lambda_layer_version.this"]["layer_name"] == "serverless-retry"


def test_the_default_log_group_and_claims_table_are_skipped_with_their_reasons(scan: dict[str, Any]) -> None:
    reasons = {
        (c["check_id"], c["resource"]): c["check_result"].get("suppress_comment", "")
        for c in scan.get("skipped_checks", [])
    }
    log_group = reasons[
        ("CKV_AWS_158", "module.default.module.consumer.module.function.aws_cloudwatch_log_group.this")
    ]
    assert "logs_kms_key_arn" in log_group
    table = "module.default.module.consumer.aws_dynamodb_table.claims[0]"
    assert "claims.kms_key_arn" in reasons[("CKV_AWS_119", table)]
    assert "Point-in-time recovery" in reasons[("CKV_AWS_28", table)]


def test_inline_skips_reach_the_plan_with_their_reasons(scan: dict[str, Any]) -> None:
    skipped = {
        c["check_id"]: c["check_result"].get("suppress_comment", "")
        for c in scan.get("skipped_checks", [])
        if c["resource"] == "module.default.module.consumer.module.function.aws_lambda_function.this"
    }
    assert {"CKV_AWS_116", "CKV_AWS_117", "CKV_AWS_272"} <= set(skipped), skipped
    assert "code_signing_config_arn" in skipped["CKV_AWS_272"]
    assert "vpc input" in skipped["CKV_AWS_117"]
    # Every skip anywhere in the plan says why (the same rule test_modules_checkov applies to the sources).
    assert all(len(c["check_result"].get("suppress_comment", "")) >= 30 for c in scan["skipped_checks"])
