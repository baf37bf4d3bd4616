# Plan-level tests of the composed module on the mock provider (shared defaults in tests/terraform/mocks).
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

run "default_policy_is_the_python_default" {
  command = plan

  assert {
    condition = jsonencode(jsondecode(output.retry_policy_json)) == jsonencode({
      max_attempts      = 5
      backoff           = { strategy = "exponential", base_seconds = 10, multiplier = 2, max_seconds = 3600, jitter = "none" }
      rules             = []
      unmatched         = "retry"
      transport         = "auto"
      honor_retry_after = true
    })
    error_message = "Default policy rendered as ${output.retry_policy_json}"
  }

  assert {
    condition     = module.consumer.environment["SERVERLESS_RETRY_POLICY"] == output.retry_policy_json
    error_message = "The rendered policy is what the function receives."
  }
}

run "policy_rendered_without_unset_fields" {
  command = plan

  variables {
    retry_policy = {
      max_attempts    = 5
      max_age_seconds = 86400
      backoff         = { strategy = "exponential", base_seconds = 10, max_seconds = 3600, jitter = "full" }
      rules = [
        { errors = ["ThrottlingError"], http_status = [429, 503], honor_retry_after = true, backoff = { strategy = "fixed", base_seconds = 60 } },
        { errors = ["TimeoutError", "ConnectionError"], max_attempts = 6, backoff = { strategy = "fixed", base_seconds = 30 } },
        { errors = ["ValidationError"], retry = false },
        { message_regex = "^quota exceeded", backoff = { jitter = "equal" } },
      ]
      unmatched = "dead-letter"
    }
  }

  assert {
    condition = jsonencode(jsondecode(output.retry_policy_json)) == jsonencode({
      max_attempts    = 5
      max_age_seconds = 86400
      backoff         = { strategy = "exponential", base_seconds = 10, multiplier = 2, max_seconds = 3600, jitter = "full" }
      rules = [
        { errors = ["ThrottlingError"], http_status = [429, 503], honor_retry_after = true, backoff = { strategy = "fixed", base_seconds = 60 } },
        { errors = ["TimeoutError", "ConnectionError"], max_attempts = 6, backoff = { strategy = "fixed", base_seconds = 30 } },
        { errors = ["ValidationError"], retry = false },
        { message_regex = "^quota exceeded", backoff = { jitter = "equal" } },
      ]
      unmatched         = "dead-letter"
      transport         = "auto"
      honor_retry_after = true
    })
    error_message = "Policy rendered as ${output.retry_policy_json}"
  }
}

run "composition_wiring" {
  command = plan

  variables {
    timeout = 20
  }

  assert {
    condition     = module.queue.visibility_timeout_seconds == 120
    error_message = "The visibility timeout defaults to 6 x the function timeout."
  }

  assert {
    condition = alltrue([
      module.consumer.environment["SERVERLESS_RETRY_QUEUE_ARN"] == "arn:aws:sqs:us-east-1:123456789012:orders",
      module.consumer.environment["SERVERLESS_RETRY_QUEUE_URL"] == "https://sqs.us-east-1.amazonaws.com/123456789012/orders",
      module.consumer.environment["SERVERLESS_RETRY_DLQ_ARN"] == "arn:aws:sqs:us-east-1:123456789012:orders-dlq",
      module.consumer.environment["SERVERLESS_RETRY_EXHAUSTED_QUEUE_URL"] == "https://sqs.us-east-1.amazonaws.com/123456789012/orders-exhausted",
      module.consumer.environment["SERVERLESS_RETRY_SCHEDULE_GROUP"] == "orders-retries",
      module.consumer.environment["SERVERLESS_RETRY_SCHEDULER_ROLE_ARN"] == "arn:aws:iam::123456789012:role/orders-retries-scheduler",
    ])
    error_message = "The consumer is wired to this module's queues and scheduler: ${jsonencode(module.consumer.environment)}"
  }

  assert {
    condition = alltrue([
      output.queue_url == "https://sqs.us-east-1.amazonaws.com/123456789012/orders",
      output.queue_arn == "arn:aws:sqs:us-east-1:123456789012:orders",
      output.dlq_arn == "arn:aws:sqs:us-east-1:123456789012:orders-dlq",
      output.exhausted_queue_url == "https://sqs.us-east-1.amazonaws.com/123456789012/orders-exhausted",
      output.schedule_group_name == "orders-retries",
      output.scheduler_role_arn == "arn:aws:iam::123456789012:role/orders-retries-scheduler",
    ])
    error_message = "Outputs are named per DESIGN section 6."
  }
}

run "no_scheduler_when_every_delay_fits_sqs" {
  command = plan

  variables {
    retry_policy = { backoff = { max_seconds = 900 } }
  }

  assert {
    condition     = output.schedule_group_name == null && output.scheduler_role_arn == null && !contains(keys(module.consumer.environment), "SERVERLESS_RETRY_SCHEDULE_GROUP")
    error_message = "auto transport with every cap <= 900 s never schedules, so no scheduler is created or granted."
  }
}

run "scheduler_when_a_rule_cap_exceeds_sqs" {
  command = plan

  variables {
    retry_policy = {
      backoff = { max_seconds = 900 }
      rules   = [{ http_status = [503], backoff = { max_seconds = 7200 } }]
    }
  }

  assert {
    condition     = output.schedule_group_name == "orders-retries"
    error_message = "A rule that can wait past 15 minutes needs the Scheduler."
  }
}

run "no_scheduler_for_forced_sqs_delay" {
  command = plan

  variables {
    retry_policy = { transport = "sqs-delay" }
  }

  assert {
    condition     = output.schedule_group_name == null
    error_message = "transport sqs-delay on a standard queue never schedules."
  }
}

run "fifo_queues_retry_through_the_scheduler" {
  command = plan

  variables {
    fifo         = true
    retry_policy = { transport = "sqs-delay", backoff = { max_seconds = 60 } }
  }

  assert {
    condition     = output.schedule_group_name == "orders-retries"
    error_message = "A FIFO queue has no per-message delay, so even sqs-delay needs the Scheduler."
  }
}

run "bad_strategy" {
  command = plan

  variables {
    retry_policy = { backoff = { strategy = "fibonacci" } }
  }

  expect_failures = [var.retry_policy]
}

run "bad_jitter" {
  command = plan

  variables {
    retry_policy = { backoff = { jitter = "some" } }
  }

  expect_failures = [var.retry_policy]
}

run "cap_below_base" {
  command = plan

  variables {
    retry_policy = { backoff = { base_seconds = 600, max_seconds = 60 } }
  }

  expect_failures = [var.retry_policy]
}

run "negative_seconds" {
  command = plan

  variables {
    retry_policy = { backoff = { base_seconds = -1 } }
  }

  expect_failures = [var.retry_policy]
}

run "zero_attempts" {
  command = plan

  variables {
    retry_policy = { max_attempts = 0 }
  }

  expect_failures = [var.retry_policy]
}

run "bad_transport" {
  command = plan

  variables {
    retry_policy = { transport = "carrier-pigeon" }
  }

  expect_failures = [var.retry_policy]
}

run "bad_unmatched" {
  command = plan

  variables {
    retry_policy = { unmatched = "drop" }
  }

  expect_failures = [var.retry_policy]
}

run "rule_without_a_matcher" {
  command = plan

  variables {
    retry_policy = { rules = [{ retry = false }] }
  }

  expect_failures = [var.retry_policy]
}

run "rule_with_a_bad_status" {
  command = plan

  variables {
    retry_policy = { rules = [{ http_status = [429, 700] }] }
  }

  expect_failures = [var.retry_policy]
}

run "rule_with_a_bad_error_name" {
  command = plan

  variables {
    retry_policy = { rules = [{ errors = ["Timeout Error"] }] }
  }

  expect_failures = [var.retry_policy]
}

run "rule_cap_below_inherited_base" {
  command = plan

  variables {
    retry_policy = { backoff = { base_seconds = 120 }, rules = [{ errors = ["TimeoutError"], backoff = { max_seconds = 60 } }] }
  }

  expect_failures = [var.retry_policy]
}

run "rule_with_a_bad_strategy" {
  command = plan

  variables {
    retry_policy = { rules = [{ errors = ["TimeoutError"], backoff = { strategy = "random" } }] }
  }

  expect_failures = [var.retry_policy]
}

run "rule_with_zero_attempts" {
  command = plan

  variables {
    retry_policy = { rules = [{ errors = ["TimeoutError"], max_attempts = 0 }] }
  }

  expect_failures = [var.retry_policy]
}
