# Plan-level tests of the private function module on the mock provider (shared defaults in tests/terraform/mocks).
mock_provider "aws" {
  source = "../../tests/terraform/mocks"
}

override_resource {
  target          = aws_cloudwatch_log_group.this
  override_during = plan
  values = {
    arn = "arn:aws:logs:us-east-1:123456789012:log-group:/aws/lambda/orders"
  }
}

variables {
  function = {
    name          = "orders"
    description   = "test"
    handler       = "orders.handler"
    runtime       = "python3.12"
    architectures = ["arm64"]
    memory_size   = 256
    timeout       = 30
  }
  code = { package = "../../tests/terraform/fixtures/empty.zip" }
  logs = { retention_days = 30 }
  role = {
    policy_name = "serverless-retry-test"
    policy_json = "{\"Version\":\"2012-10-17\",\"Statement\":[{\"Sid\":\"Caller\",\"Effect\":\"Allow\",\"Action\":\"sqs:SendMessage\",\"Resource\":\"arn:aws:sqs:us-east-1:123456789012:orders\"}]}"
  }
  tags = { team = "orders" }
}

run "one_function_its_log_group_and_role" {
  command = plan

  assert {
    condition     = aws_lambda_function.this.function_name == "orders" && aws_cloudwatch_log_group.this.name == "/aws/lambda/orders" && aws_iam_role.this[0].name == "orders"
    error_message = "The function, its log group /aws/lambda/<name> and its role <name>."
  }

  assert {
    condition     = aws_iam_role_policy.this[0].name == "serverless-retry-test" && length(aws_iam_role_policy.extra) == 0
    error_message = "The caller's policy under its name; no extra policy without extra statements."
  }

  assert {
    condition     = data.aws_iam_policy_document.this.source_policy_documents[0] == var.role.policy_json && [for s in output.permissions : s.sid] == ["WriteOwnLogs"]
    error_message = "The role's policy is the caller's statements and the function's own logs (no traces, no VPC by default)."
  }

  assert {
    condition     = alltrue([for t in [aws_lambda_function.this.tags, aws_cloudwatch_log_group.this.tags, aws_iam_role.this[0].tags] : t == tomap({ team = "orders" })])
    error_message = "Everything taggable carries the tags."
  }

  assert {
    condition     = aws_lambda_function.this.tracing_config[0].mode == "PassThrough" && length(aws_lambda_function.this.vpc_config) == 0
    error_message = "No tracing and no VPC unless asked."
  }
}

run "a_brought_role_creates_nothing" {
  command = plan

  variables {
    role = {
      arn         = "arn:aws:iam::123456789012:role/team/orders-runtime"
      policy_name = "unused"
      policy_json = "{}"
    }
  }

  assert {
    condition     = length(aws_iam_role.this) == 0 && length(aws_iam_role_policy.this) == 0 && output.role_name == "orders-runtime" && aws_lambda_function.this.role == "arn:aws:iam::123456789012:role/team/orders-runtime"
    error_message = "With role.arn the function runs as that role and nothing IAM is created."
  }
}

run "vpc_and_tracing_add_their_statements" {
  command = plan

  variables {
    function = {
      name          = "orders"
      description   = "test"
      handler       = "orders.handler"
      runtime       = "python3.12"
      architectures = ["arm64"]
      memory_size   = 256
      timeout       = 30
      tracing       = true
      vpc           = { subnet_ids = ["subnet-0a1b2c3d4e5f60718"], security_group_ids = ["sg-0123456789abcdef0"] }
    }
  }

  assert {
    condition     = sort([for s in output.permissions : s.sid]) == sort(["WriteOwnLogs", "WriteTraces", "CreateNetworkInterfacesInSubnets", "ManageOwnNetworkInterfaces", "DescribeNetwork"])
    error_message = "Tracing and a VPC add their statements: ${jsonencode(output.permissions)}"
  }

  assert {
    condition = [for s in output.permissions : s if s.sid == "CreateNetworkInterfacesInSubnets"][0].resources == sort([
      "arn:aws:ec2:us-east-1:123456789012:network-interface/*",
      "arn:aws:ec2:us-east-1:*:subnet/subnet-0a1b2c3d4e5f60718",
      "arn:aws:ec2:us-east-1:*:security-group/sg-0123456789abcdef0",
    ])
    error_message = "Network interfaces only in the given subnets, with the given security groups."
  }
}

# Moved from modules/consumer/tests/deployment.tftest.hcl: the checks live with the function now.
run "code_needs_a_source" {
  command = plan

  variables {
    code = {}
  }

  expect_failures = [aws_lambda_function.this]
}

run "code_given_twice_is_refused" {
  command = plan

  variables {
    code = { package = "../../tests/terraform/fixtures/empty.zip", s3_package = { bucket = "orders-artifacts", key = "orders.zip" } }
  }

  expect_failures = [aws_lambda_function.this]
}

run "extra_statements_with_own_role_are_refused" {
  command = plan

  variables {
    role = {
      arn              = "arn:aws:iam::123456789012:role/orders-runtime"
      policy_name      = "unused"
      policy_json      = "{}"
      extra_statements = [{ actions = ["dynamodb:GetItem"], resources = ["arn:aws:dynamodb:us-east-1:123456789012:table/orders"] }]
    }
  }

  expect_failures = [aws_lambda_function.this]
}

run "extra_statements_go_in_their_own_policy" {
  command = plan

  variables {
    role = {
      policy_name      = "serverless-retry-test"
      policy_json      = "{}"
      extra_statements = [{ sid = "ReadOrders", actions = ["dynamodb:GetItem"], resources = ["arn:aws:dynamodb:us-east-1:123456789012:table/orders"] }]
    }
  }

  assert {
    condition     = aws_iam_role_policy.extra[0].name == "extra" && data.aws_iam_policy_document.extra.statement[0].sid == "ReadOrders"
    error_message = "Extra statements go in the policy `extra`."
  }
}
