# Plan-level tests of how the consumer is deployed: the code (local zip, S3 object, layers), the
# architecture, a VPC, a role of the user's own and extra statements.
mock_provider "aws" {
  source = "../../tests/terraform/mocks"
}

variables {
  name              = "orders"
  package           = "../../tests/terraform/fixtures/empty.zip"
  processor         = "orders.process:handle"
  retry_policy_json = "{\"max_attempts\":5}"
  queue = {
    arn                        = "arn:aws:sqs:us-east-1:123456789012:orders"
    url                        = "https://sqs.us-east-1.amazonaws.com/123456789012/orders"
    visibility_timeout_seconds = 180
    dlq_arn                    = "arn:aws:sqs:us-east-1:123456789012:orders-dlq"
    exhausted_queue_url        = "https://sqs.us-east-1.amazonaws.com/123456789012/orders-exhausted"
    exhausted_queue_arn        = "arn:aws:sqs:us-east-1:123456789012:orders-exhausted"
  }
  scheduler = {
    schedule_group_name = "orders-retries"
    schedule_group_arn  = "arn:aws:scheduler:us-east-1:123456789012:schedule-group/orders-retries"
    role_arn            = "arn:aws:iam::123456789012:role/orders-retries-scheduler"
  }
}

run "names_everything_once" {
  command = plan

  assert {
    condition     = module.function.iam.roles[0].name == "orders" && module.function.function.function_name == "orders"
    error_message = "The function and its role are both named after name, without a repeated suffix (was \"orders-consumer\")."
  }

  assert {
    condition     = output.role_created && output.role_name == "orders" && module.function.iam.policies[0].name == "serverless-retry-consumer"
    error_message = "The outputs give the role's name; the module attaches its policy to it."
  }

  assert {
    condition     = length(module.function.iam.extra_policies) == 0 && length(module.function.function.layers) == 0 && length(module.function.function.vpc_config) == 0
    error_message = "No extra policy, layers or VPC unless asked for."
  }
}

run "long_names_fit" {
  command = plan

  variables {
    name = "inventory-reservations-consumer-of-the-warehouse-events-eu-west1"
  }

  assert {
    condition     = module.function.iam.roles[0].name == module.function.function.function_name && length(module.function.iam.roles[0].name) == 64
    error_message = "A 64-character name fits both the function and its role."
  }
}

run "code_from_s3" {
  command = plan

  variables {
    package = null
    s3_package = {
      bucket           = "orders-artifacts"
      key              = "releases/1.2.0/orders.zip"
      object_version   = "3HL4kqtJlcpXroDTDmJ.rmSpXd3dIbrHY"
      source_code_hash = "47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU="
    }
  }

  assert {
    condition = alltrue([
      module.function.function.filename == null,
      module.function.function.s3_bucket == "orders-artifacts",
      module.function.function.s3_key == "releases/1.2.0/orders.zip",
      module.function.function.s3_object_version == "3HL4kqtJlcpXroDTDmJ.rmSpXd3dIbrHY",
      module.function.function.source_code_hash == "47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=",
    ])
    error_message = "An S3 package reaches the function as bucket, key, version and the hash given."
  }
}

run "code_from_s3_without_version_or_hash" {
  command = plan

  variables {
    package    = null
    s3_package = { bucket = "orders-artifacts", key = "orders.zip" }
  }

  assert {
    condition     = module.function.function.s3_object_version == null && module.function.function.filename == null
    error_message = "The version stays unset when not given, and no local file is read."
  }
}

run "s3_package_needs_a_bucket_name" {
  command = plan

  variables {
    package    = null
    s3_package = { bucket = "s3://orders-artifacts", key = "orders.zip" }
  }

  expect_failures = [var.s3_package]
}

run "s3_package_hash_is_base64_sha256" {
  command = plan

  variables {
    package    = null
    s3_package = { bucket = "orders-artifacts", key = "orders.zip", source_code_hash = "e3b0c44298fc1c149afbf4c8996fb924" }
  }

  expect_failures = [var.s3_package]
}

run "layers_and_architecture" {
  command = plan

  variables {
    layers = [
      "arn:aws:lambda:us-east-1:123456789012:layer:serverless-retry:4",
      "arn:aws:lambda:us-east-1:017000801446:layer:AWSLambdaPowertoolsPythonV3-python312-x86_64:7",
    ]
    architectures = ["x86_64"]
  }

  assert {
    condition     = module.function.function.layers == tolist(["arn:aws:lambda:us-east-1:123456789012:layer:serverless-retry:4", "arn:aws:lambda:us-east-1:017000801446:layer:AWSLambdaPowertoolsPythonV3-python312-x86_64:7"])
    error_message = "The layers reach the function in order."
  }

  assert {
    condition     = module.function.function.architectures == tolist(["x86_64"])
    error_message = "architectures reaches the function."
  }
}

run "layer_needs_its_version" {
  command = plan

  variables {
    layers = ["arn:aws:lambda:us-east-1:123456789012:layer:serverless-retry"]
  }

  expect_failures = [var.layers]
}

run "at_most_five_layers" {
  command = plan

  variables {
    layers = [for v in range(1, 7) : "arn:aws:lambda:us-east-1:123456789012:layer:l:${v}"]
  }

  expect_failures = [var.layers]
}

run "one_architecture" {
  command = plan

  variables {
    architectures = ["arm64", "x86_64"]
  }

  expect_failures = [var.architectures]
}

run "known_architectures_only" {
  command = plan

  variables {
    architectures = ["amd64"]
  }

  expect_failures = [var.architectures]
}

run "vpc" {
  command = plan

  variables {
    vpc = {
      subnet_ids         = ["subnet-0a1b2c3d4e5f60718", "subnet-0b1b2c3d4e5f60718"]
      security_group_ids = ["sg-0123456789abcdef0"]
    }
  }

  assert {
    condition     = module.function.function.vpc_config[0].subnet_ids == toset(["subnet-0a1b2c3d4e5f60718", "subnet-0b1b2c3d4e5f60718"]) && module.function.function.vpc_config[0].security_group_ids == toset(["sg-0123456789abcdef0"])
    error_message = "The VPC settings reach the function."
  }

  assert {
    condition = [for s in output.role_permissions : s if s.sid == "CreateNetworkInterfacesInSubnets"][0].resources == sort([
      "arn:aws:ec2:us-east-1:123456789012:network-interface/*",
      "arn:aws:ec2:us-east-1:*:subnet/subnet-0a1b2c3d4e5f60718",
      "arn:aws:ec2:us-east-1:*:subnet/subnet-0b1b2c3d4e5f60718",
      "arn:aws:ec2:us-east-1:*:security-group/sg-0123456789abcdef0",
    ])
    error_message = "Network interfaces may be created only in the given subnets, with the given security groups: ${jsonencode(output.role_permissions)}"
  }

  assert {
    condition     = [for s in output.role_permissions : s if s.sid == "ManageOwnNetworkInterfaces"][0].resources == tolist(["arn:aws:ec2:us-east-1:123456789012:network-interface/*"])
    error_message = "Deleting and re-addressing interfaces is limited to this account's and region's."
  }

  assert {
    # "*" only where EC2 accepts nothing else (the Describe actions), and never as an action.
    condition = alltrue([for s in output.role_permissions : (
      contains(s.resources, "*") ? s.actions == tolist(["ec2:DescribeNetworkInterfaces", "ec2:DescribeSubnets"]) || s.actions == tolist(["xray:PutTelemetryRecords", "xray:PutTraceSegments"]) : true
    ) && !anytrue([for a in s.actions : endswith(a, "*")])])
    error_message = "A \"*\" resource only for the Describe actions; no wildcard action: ${jsonencode(output.role_permissions)}"
  }

  assert {
    condition = jsonencode(one([for s in module.function.iam.documents.network.statement : s.condition if s.sid == "DescribeNetwork"])) == jsonencode([{
      test     = "StringEquals"
      variable = "aws:RequestedRegion"
      values   = ["us-east-1"]
    }])
    error_message = "The Describe actions are limited to the function's region."
  }
}

run "vpc_needs_security_groups" {
  command = plan

  variables {
    vpc = { subnet_ids = ["subnet-0a1b2c3d4e5f60718"], security_group_ids = [] }
  }

  expect_failures = [var.vpc]
}

run "vpc_needs_subnets" {
  command = plan

  variables {
    vpc = { subnet_ids = [], security_group_ids = ["sg-0123456789abcdef0"] }
  }

  expect_failures = [var.vpc]
}

run "vpc_takes_ids_not_arns" {
  command = plan

  variables {
    vpc = { subnet_ids = ["arn:aws:ec2:us-east-1:123456789012:subnet/subnet-0a1b2c3d4e5f60718"], security_group_ids = ["sg-0123456789abcdef0"] }
  }

  expect_failures = [var.vpc]
}

run "own_role" {
  command = plan

  variables {
    role_arn = "arn:aws:iam::123456789012:role/platform/orders-runtime"
  }

  assert {
    condition     = length(module.function.iam.roles) == 0 && length(module.function.iam.policies) == 0 && length(module.function.iam.extra_policies) == 0
    error_message = "With role_arn the module creates no role and attaches nothing."
  }

  assert {
    condition     = module.function.function.role == "arn:aws:iam::123456789012:role/platform/orders-runtime"
    error_message = "The function runs as the role given."
  }

  assert {
    condition     = output.role_arn == var.role_arn && output.role_name == "orders-runtime" && !output.role_created
    error_message = "The outputs name the role given (its name without the path)."
  }

  assert {
    condition     = contains([for s in output.role_permissions : s.sid], "ConsumeSourceQueue")
    error_message = "policy_json carries what the function needs, to attach to the role given."
  }
}

run "own_role_must_be_a_role_arn" {
  command = plan

  variables {
    role_arn = "orders-runtime"
  }

  expect_failures = [var.role_arn]
}

run "extra_statements" {
  command = plan

  variables {
    policy_statements = [
      {
        sid       = "ReadOrders"
        actions   = ["dynamodb:GetItem", "dynamodb:Query"]
        resources = ["arn:aws:dynamodb:us-east-1:123456789012:table/orders"]
      },
      {
        effect    = "Deny"
        actions   = ["s3:DeleteObject"]
        resources = ["arn:aws:s3:::orders-archive/*"]
        conditions = [{
          test     = "StringNotEquals"
          variable = "aws:PrincipalTag/team"
          values   = ["orders"]
        }]
      },
    ]
  }

  assert {
    condition     = module.function.iam.extra_policies[0].name == "extra" && module.function.iam.policies[0].name == "serverless-retry-consumer"
    error_message = "Extra statements go in their own inline policy, beside the module's."
  }

  assert {
    condition = alltrue([
      module.function.iam.documents.extra.statement[0].sid == "ReadOrders",
      module.function.iam.documents.extra.statement[0].effect == "Allow",
      module.function.iam.documents.extra.statement[0].actions == toset(["dynamodb:GetItem", "dynamodb:Query"]),
      module.function.iam.documents.extra.statement[1].effect == "Deny",
      jsonencode(module.function.iam.documents.extra.statement[1].condition) == jsonencode([{ test = "StringNotEquals", variable = "aws:PrincipalTag/team", values = ["orders"] }]),
    ])
    error_message = "Each extra statement keeps its sid, effect, actions, resources and conditions."
  }

  assert {
    condition     = !contains([for s in output.role_permissions : s.sid], "ReadOrders")
    error_message = "policy_json and role_permissions hold the module's statements only."
  }
}

run "extra_statements_name_their_actions" {
  command = plan

  variables {
    policy_statements = [{ actions = ["dynamodb:*"], resources = ["arn:aws:dynamodb:us-east-1:123456789012:table/orders"] }]
  }

  expect_failures = [var.policy_statements]
}

run "extra_statements_refuse_a_bare_star" {
  command = plan

  variables {
    policy_statements = [{ actions = ["*"], resources = ["arn:aws:dynamodb:us-east-1:123456789012:table/orders"] }]
  }

  expect_failures = [var.policy_statements]
}

run "extra_statements_need_resources" {
  command = plan

  variables {
    policy_statements = [{ actions = ["dynamodb:GetItem"], resources = [] }]
  }

  expect_failures = [var.policy_statements]
}

run "extra_statement_sids_are_alphanumeric" {
  command = plan

  variables {
    policy_statements = [{ sid = "read-orders", actions = ["dynamodb:GetItem"], resources = ["arn:aws:dynamodb:us-east-1:123456789012:table/orders"] }]
  }

  expect_failures = [var.policy_statements]
}

run "extra_statement_effect_is_allow_or_deny" {
  command = plan

  variables {
    policy_statements = [{ effect = "allow", actions = ["dynamodb:GetItem"], resources = ["arn:aws:dynamodb:us-east-1:123456789012:table/orders"] }]
  }

  expect_failures = [var.policy_statements]
}
