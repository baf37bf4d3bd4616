# Plan-level tests of the optional operator redrive function on the mock provider (shared defaults in tests/terraform/mocks).
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

run "operator_redrive_is_off_by_default" {
  command = plan

  assert {
    condition     = length(module.operator) == 0
    error_message = "The operator's redrive function must not exist unless operator_redrive.enabled is true."
  }

  assert {
    condition     = output.operator_function_name == null
    error_message = "operator_function_name must be null when the operator function is off."
  }
}

run "operator_redrive_on_least_privilege" {
  command = plan

  variables {
    operator_redrive = { enabled = true, timeout = 120 }
  }

  assert {
    condition     = module.operator[0].function.handler == "serverless_retry.handlers.redrive_queue.handler"
    error_message = "The operator function runs the package's redrive_queue handler."
  }

  assert {
    condition     = module.operator[0].function.reserved_concurrent_executions == 1 && module.operator[0].function.timeout == 120
    error_message = "One redrive pass at a time, with the given timeout."
  }

  assert {
    condition = module.operator[0].function.environment[0].variables == tomap({
      SERVERLESS_RETRY_REDRIVE_FROM_QUEUE_URLS = "https://sqs.us-east-1.amazonaws.com/123456789012/orders-exhausted,https://sqs.us-east-1.amazonaws.com/123456789012/orders-dlq"
      SERVERLESS_RETRY_REDRIVE_TO_QUEUE_URL    = "https://sqs.us-east-1.amazonaws.com/123456789012/orders"
      POWERTOOLS_SERVICE_NAME                  = "orders-redrive"
      POWERTOOLS_LOG_LEVEL                     = "INFO"
    })
    error_message = "The function is confined to the exhausted queue and DLQ as sources and the source queue as destination."
  }

  assert {
    condition = alltrue(flatten([
      for d in [data.aws_iam_policy_document.operator_read[0], data.aws_iam_policy_document.operator_send[0], data.aws_iam_policy_document.operator_native[0], module.operator[0].iam.documents.logs] : [
        for st in d.statement : !contains(tolist(st.resources), "*") && !anytrue([for a in st.actions : endswith(a, "*")])
      ]
    ]))
    error_message = "Every statement names exact resources and actions."
  }

  assert {
    condition     = data.aws_iam_policy_document.operator_send[0].statement[0].resources == toset(["arn:aws:sqs:us-east-1:123456789012:orders"])
    error_message = "The operator function may send to the source queue only."
  }

  assert {
    condition     = data.aws_iam_policy_document.operator_read[0].statement[0].resources == toset(["arn:aws:sqs:us-east-1:123456789012:orders-exhausted", "arn:aws:sqs:us-east-1:123456789012:orders-dlq"])
    error_message = "The operator function may receive and delete only in the exhausted queue and the DLQ."
  }

  assert {
    condition = [for st in data.aws_iam_policy_document.operator_native[0].statement : { actions = st.actions, resources = st.resources }] == [
      { actions = toset(["sqs:ListDeadLetterSourceQueues"]), resources = toset(["arn:aws:sqs:us-east-1:123456789012:orders-exhausted", "arn:aws:sqs:us-east-1:123456789012:orders-dlq"]) },
      { actions = toset(["sqs:StartMessageMoveTask"]), resources = toset(["arn:aws:sqs:us-east-1:123456789012:orders-dlq"]) },
    ]
    error_message = "StartMessageMoveTask only on the DLQ (the only queue a redrive policy feeds); its sources are checked on either queue; no task is listed or cancelled."
  }

  assert {
    condition     = length(data.aws_iam_policy_document.operator_kms[0].statement) == 0
    error_message = "No KMS statement without a kms_key_arn."
  }
}

run "operator_redrive_timeout_is_validated" {
  command = plan

  variables {
    operator_redrive = { enabled = true, timeout = 10 }
  }

  expect_failures = [var.operator_redrive]
}
