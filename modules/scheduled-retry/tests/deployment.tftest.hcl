# Plan-level tests of how scheduled-retry deploys its functions: code from S3 and layers, the
# architecture, a VPC, roles of the user's own and extra statements, for the consumer and the operator.
mock_provider "aws" {
  source = "../../tests/terraform/mocks"
}

override_resource {
  target          = module.queue.aws_sqs_queue.source
  override_during = plan
  values = {
    arn = "arn:aws:sqs:us-east-1:123456789012:orders"
    url = "https://sqs.us-east-1.amazonaws.com/123456789012/orders"
  }
}

override_resource {
  target          = module.queue.aws_sqs_queue.dlq
  override_during = plan
  values = {
    arn = "arn:aws:sqs:us-east-1:123456789012:orders-dlq"
    url = "https://sqs.us-east-1.amazonaws.com/123456789012/orders-dlq"
  }
}

override_resource {
  target          = module.queue.aws_sqs_queue.exhausted
  override_during = plan
  values = {
    arn = "arn:aws:sqs:us-east-1:123456789012:orders-exhausted"
    url = "https://sqs.us-east-1.amazonaws.com/123456789012/orders-exhausted"
  }
}

override_resource {
  target          = module.scheduler[0].aws_scheduler_schedule_group.this
  override_during = plan
  values = {
    arn = "arn:aws:scheduler:us-east-1:123456789012:schedule-group/orders-retries"
  }
}

override_resource {
  target          = module.scheduler[0].aws_iam_role.this
  override_during = plan
  values = {
    arn = "arn:aws:iam::123456789012:role/orders-retries-scheduler"
  }
}

variables {
  name      = "orders"
  package   = "../../tests/terraform/fixtures/empty.zip"
  processor = "orders.process:handle"
  tags      = { team = "orders" }
}

run "deployment_reaches_both_functions" {
  command = plan

  variables {
    package          = null
    s3_package       = { bucket = "orders-artifacts", key = "orders.zip", object_version = "7" }
    layers           = ["arn:aws:lambda:us-east-1:123456789012:layer:serverless-retry:4"]
    architectures    = ["x86_64"]
    operator_redrive = { enabled = true }
    vpc = {
      subnet_ids         = ["subnet-0a1b2c3d4e5f60718"]
      security_group_ids = ["sg-0123456789abcdef0"]
    }
  }

  assert {
    # The consumer's own function is checked in the plan that tests/terraform/test_checkov_plan.py scans.
    condition = alltrue([for f in [module.operator[0].function] : (
      f.s3_bucket == "orders-artifacts" && f.s3_key == "orders.zip" && f.s3_object_version == "7" && f.filename == null &&
      f.layers == tolist(["arn:aws:lambda:us-east-1:123456789012:layer:serverless-retry:4"]) &&
      f.architectures == tolist(["x86_64"]) &&
      f.vpc_config[0].subnet_ids == toset(["subnet-0a1b2c3d4e5f60718"]) && f.vpc_config[0].security_group_ids == toset(["sg-0123456789abcdef0"])
    )])
    error_message = "The operator's function runs from the consumer's code, layers, architecture and VPC."
  }

  assert {
    condition = [for s in module.operator[0].iam.documents.network.statement : s.resources if s.sid == "CreateNetworkInterfacesInSubnets"][0] == toset([
      "arn:aws:ec2:us-east-1:123456789012:network-interface/*",
      "arn:aws:ec2:us-east-1:*:subnet/subnet-0a1b2c3d4e5f60718",
      "arn:aws:ec2:us-east-1:*:security-group/sg-0123456789abcdef0",
    ])
    error_message = "The operator's role may create interfaces only in the given subnets, with the given security groups."
  }

  assert {
    condition     = contains([for s in output.consumer_permissions : s.sid], "CreateNetworkInterfacesInSubnets")
    error_message = "The consumer's role gets the network-interface permissions too."
  }
}

run "names_each_role_once" {
  command = plan

  variables {
    operator_redrive = { enabled = true }
  }

  assert {
    condition     = output.consumer_role_name == "orders" && module.operator[0].iam.roles[0].name == "orders-redrive"
    error_message = "The consumer's role is <name> (was <name>-consumer), the operator's <name>-redrive."
  }

  assert {
    condition     = output.operator_role_name == "orders-redrive" && output.operator_log_group_name == "/aws/lambda/orders-redrive" && output.scheduler_role_name == "orders-retries-scheduler"
    error_message = "Every role a user wires to has its name in the outputs."
  }
}

run "own_roles" {
  command = plan

  variables {
    role_arn = "arn:aws:iam::123456789012:role/orders-consumer-runtime"
    operator_redrive = {
      enabled  = true
      role_arn = "arn:aws:iam::123456789012:role/ops/orders-redrive-runtime"
    }
  }

  assert {
    condition     = length(module.operator[0].iam.roles) == 0 && length(module.operator[0].iam.policies) == 0 && output.consumer_role_arn == var.role_arn
    error_message = "With role_arn and operator_redrive.role_arn no role is created (the consumer's module reports the role given)."
  }

  assert {
    condition     = module.operator[0].function.role == "arn:aws:iam::123456789012:role/ops/orders-redrive-runtime"
    error_message = "Each function runs as the role given."
  }

  assert {
    condition     = output.consumer_role_name == "orders-consumer-runtime" && output.operator_role_name == "orders-redrive-runtime" && output.operator_role_arn == "arn:aws:iam::123456789012:role/ops/orders-redrive-runtime"
    error_message = "The outputs name the roles given."
  }
}

run "operator_extra_statements" {
  command = plan

  variables {
    operator_redrive = {
      enabled           = true
      policy_statements = [{ sid = "ReadRunbook", actions = ["ssm:GetParameter"], resources = ["arn:aws:ssm:us-east-1:123456789012:parameter/orders/runbook"] }]
    }
  }

  assert {
    condition     = module.operator[0].iam.extra_policies[0].name == "extra" && module.operator[0].iam.documents.extra.statement[0].sid == "ReadRunbook"
    error_message = "The operator's extra statements go in their own inline policy."
  }
}

run "operator_extra_statements_name_their_actions" {
  command = plan

  variables {
    operator_redrive = {
      enabled           = true
      policy_statements = [{ actions = ["ssm:*"], resources = ["arn:aws:ssm:us-east-1:123456789012:parameter/orders/runbook"] }]
    }
  }

  expect_failures = [var.operator_redrive]
}

run "operator_extra_statements_not_with_own_role" {
  command = plan

  variables {
    operator_redrive = {
      enabled           = true
      role_arn          = "arn:aws:iam::123456789012:role/orders-redrive-runtime"
      policy_statements = [{ actions = ["ssm:GetParameter"], resources = ["arn:aws:ssm:us-east-1:123456789012:parameter/orders/runbook"] }]
    }
  }

  expect_failures = [var.operator_redrive]
}

run "one_architecture" {
  command = plan

  variables {
    architectures = ["x86_64", "arm64"]
  }

  expect_failures = [var.architectures]
}
