# Plan-level tests of how the enrichment and redrive functions are deployed: code from S3 and layers,
# the architecture, a VPC, roles of the user's own and extra statements.
mock_provider "aws" {
  source = "../../tests/terraform/mocks"
}

variables {
  name    = "heal"
  package = "../../tests/terraform/fixtures/empty.zip"
  sources = {
    orders = {
      function_name      = "orders-fn"
      function_role_name = "orders-fn-role"
    }
  }
}

run "names_and_outputs" {
  command = plan

  assert {
    condition     = output.enrichment_role_name == "heal-enrichment" && output.redrive_role_name == "heal-redrive" && output.pipe_role_name == "heal-pipe" && output.scheduler_role_name == "heal-redrive-scheduler"
    error_message = "Every role a user wires to is named once, and in the outputs."
  }

  assert {
    condition     = output.enrichment_log_group_name == "/aws/lambda/heal-enrichment" && output.redrive_log_group_name == "/aws/lambda/heal-redrive"
    error_message = "The functions' log groups are in the outputs."
  }

  assert {
    condition     = length(module.enrichment.iam.extra_policies) == 0 && length(module.redrive.iam.extra_policies) == 0 && length(module.redrive.function.vpc_config) == 0
    error_message = "No extra policy or VPC unless asked for."
  }
}

run "deployment_reaches_both_functions" {
  command = plan

  variables {
    package       = null
    s3_package    = { bucket = "platform-artifacts", key = "serverless-retry/1.0.0/function.zip", object_version = "9" }
    layers        = ["arn:aws:lambda:us-east-1:123456789012:layer:serverless-retry:2"]
    architectures = ["x86_64"]
    vpc = {
      subnet_ids         = ["subnet-0a1b2c3d4e5f60718", "subnet-0b1b2c3d4e5f60718"]
      security_group_ids = ["sg-0123456789abcdef0"]
    }
  }

  assert {
    condition = alltrue([for f in [module.enrichment.function, module.redrive.function] : (
      f.s3_bucket == "platform-artifacts" && f.s3_key == "serverless-retry/1.0.0/function.zip" && f.s3_object_version == "9" && f.filename == null &&
      f.layers == tolist(["arn:aws:lambda:us-east-1:123456789012:layer:serverless-retry:2"]) &&
      f.architectures == tolist(["x86_64"]) &&
      f.vpc_config[0].subnet_ids == toset(["subnet-0a1b2c3d4e5f60718", "subnet-0b1b2c3d4e5f60718"]) &&
      f.vpc_config[0].security_group_ids == toset(["sg-0123456789abcdef0"])
    )])
    error_message = "Both functions run from the S3 object, the layers, the architecture and the VPC given."
  }

  assert {
    condition = [for s in module.enrichment.iam.documents.network.statement : s.resources if s.sid == "CreateNetworkInterfacesInSubnets"][0] == toset([
      "arn:aws:ec2:us-east-1:123456789012:network-interface/*",
      "arn:aws:ec2:us-east-1:*:subnet/subnet-0a1b2c3d4e5f60718",
      "arn:aws:ec2:us-east-1:*:subnet/subnet-0b1b2c3d4e5f60718",
      "arn:aws:ec2:us-east-1:*:security-group/sg-0123456789abcdef0",
    ])
    error_message = "Interfaces may be created only in the given subnets, with the given security groups."
  }

  assert {
    condition     = alltrue([for s in module.enrichment.iam.documents.network.statement : contains(s.resources, "*") ? s.actions == toset(["ec2:DescribeNetworkInterfaces", "ec2:DescribeSubnets"]) : true])
    error_message = "A \"*\" resource only for the Describe actions, which accept nothing else."
  }
}

run "own_roles" {
  command = plan

  variables {
    enrichment_role_arn = "arn:aws:iam::123456789012:role/platform/heal-enrichment-runtime"
    redrive_role_arn    = "arn:aws:iam::123456789012:role/heal-redrive-runtime"
  }

  assert {
    condition     = length(module.enrichment.iam.roles) == 0 && length(module.redrive.iam.roles) == 0 && length(module.enrichment.iam.policies) == 0 && length(module.redrive.iam.policies) == 0
    error_message = "With the role ARNs given, the module creates no function role."
  }

  assert {
    condition     = module.enrichment.function.role == var.enrichment_role_arn && module.redrive.function.role == var.redrive_role_arn
    error_message = "Each function runs as the role given."
  }

  assert {
    condition     = output.enrichment_role_name == "heal-enrichment-runtime" && output.redrive_role_name == "heal-redrive-runtime" && output.redrive_role_arn == var.redrive_role_arn
    error_message = "The outputs name the roles given."
  }
}

run "extra_statements" {
  command = plan

  variables {
    redrive_policy_statements = [{
      sid       = "ReadFeatureFlags"
      actions   = ["appconfig:GetLatestConfiguration"]
      resources = ["arn:aws:appconfig:us-east-1:123456789012:application/abc/environment/def/configuration/ghi"]
    }]
  }

  assert {
    condition     = module.redrive.iam.extra_policies[0].name == "extra" && length(module.enrichment.iam.extra_policies) == 0 && module.redrive.iam.documents.extra.statement[0].sid == "ReadFeatureFlags"
    error_message = "Extra statements go in their own inline policy, on the function they are given for."
  }
}

run "extra_statements_name_their_actions" {
  command = plan

  variables {
    redrive_policy_statements = [{ actions = ["lambda:*"], resources = ["arn:aws:lambda:us-east-1:123456789012:function:x"] }]
  }

  expect_failures = [var.redrive_policy_statements]
}

run "vpc_needs_both" {
  command = plan

  variables {
    vpc = { subnet_ids = ["subnet-0a1b2c3d4e5f60718"], security_group_ids = [] }
  }

  expect_failures = [var.vpc]
}

run "one_architecture" {
  command = plan

  variables {
    architectures = ["arm64", "x86_64"]
  }

  expect_failures = [var.architectures]
}

run "own_role_must_be_a_role_arn" {
  command = plan

  variables {
    redrive_role_arn = "heal-redrive-runtime"
  }

  expect_failures = [var.redrive_role_arn]
}
