# Plan-level tests of the layer module on the mock provider (shared defaults in tests/terraform/mocks).
mock_provider "aws" {
  source = "../../tests/terraform/mocks"
}

override_resource {
  target          = aws_lambda_layer_version.this
  override_during = plan
  values = {
    arn       = "arn:aws:lambda:us-east-1:123456789012:layer:serverless-retry:3"
    layer_arn = "arn:aws:lambda:us-east-1:123456789012:layer:serverless-retry"
    version   = "3"
  }
}

variables {
  name    = "serverless-retry"
  package = "../../tests/terraform/fixtures/empty.zip"
}

run "from_a_local_zip" {
  command = plan

  assert {
    condition = alltrue([
      aws_lambda_layer_version.this.layer_name == "serverless-retry",
      aws_lambda_layer_version.this.filename == "../../tests/terraform/fixtures/empty.zip",
      aws_lambda_layer_version.this.source_code_hash == filebase64sha256("../../tests/terraform/fixtures/empty.zip"),
      aws_lambda_layer_version.this.s3_bucket == null,
    ])
    error_message = "A local zip is published with its hash, so a new build publishes a new version."
  }

  assert {
    condition     = aws_lambda_layer_version.this.compatible_runtimes == toset(["python3.11", "python3.12", "python3.13"]) && aws_lambda_layer_version.this.compatible_architectures == toset(["arm64", "x86_64"])
    error_message = "By default the layer is for every supported Python runtime and both architectures."
  }

  assert {
    condition     = output.arn == "arn:aws:lambda:us-east-1:123456789012:layer:serverless-retry:3" && output.layer_arn == "arn:aws:lambda:us-east-1:123456789012:layer:serverless-retry" && output.version == "3"
    error_message = "arn is the version's ARN, the one the other modules' layers input takes."
  }

  assert {
    condition     = !aws_lambda_layer_version.this.skip_destroy
    error_message = "Replaced versions are deleted unless kept."
  }
}

run "from_s3_for_one_architecture" {
  command = plan

  variables {
    package                  = null
    s3_package               = { bucket = "platform-artifacts", key = "layers/serverless-retry-1.0.0-arm64.zip", object_version = "5", source_code_hash = "47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=" }
    compatible_runtimes      = ["python3.12"]
    compatible_architectures = ["arm64"]
    license_info             = "Apache-2.0"
    keep_replaced_versions   = true
  }

  assert {
    condition = alltrue([
      aws_lambda_layer_version.this.filename == null,
      aws_lambda_layer_version.this.s3_bucket == "platform-artifacts",
      aws_lambda_layer_version.this.s3_key == "layers/serverless-retry-1.0.0-arm64.zip",
      aws_lambda_layer_version.this.s3_object_version == "5",
      aws_lambda_layer_version.this.source_code_hash == "47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=",
    ])
    error_message = "An S3 object is published as bucket, key, version and the hash given."
  }

  assert {
    condition     = aws_lambda_layer_version.this.compatible_runtimes == toset(["python3.12"]) && aws_lambda_layer_version.this.compatible_architectures == toset(["arm64"]) && aws_lambda_layer_version.this.license_info == "Apache-2.0" && aws_lambda_layer_version.this.skip_destroy
    error_message = "Runtimes, architectures, license and keep_replaced_versions reach the layer version."
  }
}

run "needs_a_zip" {
  command = plan

  variables {
    package = null
  }

  expect_failures = [aws_lambda_layer_version.this]
}

run "one_zip_only" {
  command = plan

  variables {
    s3_package = { bucket = "platform-artifacts", key = "layer.zip" }
  }

  expect_failures = [aws_lambda_layer_version.this]
}

run "package_must_exist" {
  command = plan

  variables {
    package = "../../dist/no-such-layer.zip"
  }

  expect_failures = [var.package]
}

run "python_runtimes_only" {
  command = plan

  variables {
    compatible_runtimes = ["nodejs20.x"]
  }

  expect_failures = [var.compatible_runtimes]
}

run "known_architectures_only" {
  command = plan

  variables {
    compatible_architectures = ["arm64", "arm64"]
  }

  expect_failures = [var.compatible_architectures]
}

run "layer_name_rules" {
  command = plan

  variables {
    name = "serverless retry"
  }

  expect_failures = [var.name]
}
