# Plan-level tests of the consumer's recursive loop detection setting (Lambda developer guide, "Use Lambda
# recursive loop detection to prevent infinite loops"), on the mock provider.
mock_provider "aws" {
  source = "../../tests/terraform/mocks"
}

override_resource {
  target          = module.function.aws_cloudwatch_log_group.this
  override_during = plan
  values = {
    arn = "arn:aws:logs:us-east-1:123456789012:log-group:/aws/lambda/orders"
  }
}

override_resource {
  target          = module.function.aws_iam_role.this
  override_during = plan
  values = {
    arn = "arn:aws:iam::123456789012:role/orders"
  }
}

override_resource {
  target          = aws_dynamodb_table.claims
  override_during = plan
  values = {
    arn = "arn:aws:dynamodb:us-east-1:123456789012:table/orders-claims"
  }
}

override_resource {
  target          = module.function.aws_lambda_function.this
  override_during = plan
  values = {
    arn = "arn:aws:lambda:us-east-1:123456789012:function:orders"
  }
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
  tags = { team = "orders" }
}

# The default policy (transport auto): SQS-delay retries go back to the source queue.
run "consumer_sending_retries_to_its_queue_allows_recursion" {
  command = plan

  assert {
    condition     = length(aws_lambda_function_recursion_config.this) == 1 && aws_lambda_function_recursion_config.this[0].recursive_loop == "Allow"
    error_message = "A consumer that sends its retries to its own trigger queue must set recursive_loop = Allow, or Lambda stops its chains after 16 sends."
  }

  assert {
    condition     = aws_lambda_function_recursion_config.this[0].function_name == "orders"
    error_message = "The recursion config must name the module's function."
  }

  assert {
    condition     = output.recursive_loop == "Allow"
    error_message = "The recursive_loop output must say Allow."
  }
}

run "every_transport_that_sends_allows_recursion" {
  command = plan

  variables {
    retry_policy_json = "{\"transport\": \"sqs-hops\", \"max_attempts\": 40, \"backoff\": {\"strategy\": \"fixed\", \"base_seconds\": 900, \"max_seconds\": 900}}"
  }

  assert {
    condition     = length(aws_lambda_function_recursion_config.this) == 1 && output.recursive_loop == "Allow"
    error_message = "Delay hops re-send each message to its own queue: the function must allow recursion."
  }
}

run "visibility_transport_keeps_lambdas_default" {
  command = plan

  variables {
    retry_policy_json = "{\"transport\": \"visibility\"}"
  }

  assert {
    condition     = length(aws_lambda_function_recursion_config.this) == 0 && output.recursive_loop == "Terminate"
    error_message = "Retries in place send nothing to the queue: the function keeps Lambda's default (Terminate, nothing set)."
  }
}

run "plain_handler_keeps_lambdas_default" {
  command = plan

  variables {
    processor         = null
    retry_policy_json = null
    handler           = "payments.app.handler"
    scheduler         = null
  }

  assert {
    condition     = length(aws_lambda_function_recursion_config.this) == 0
    error_message = "A plain handler of the user's (processor = null) must keep Lambda's default: no recursion config."
  }

  assert {
    condition     = output.recursive_loop == "Terminate"
    error_message = "The recursive_loop output of a plain handler must say Terminate."
  }
}

run "plain_handler_may_opt_in" {
  command = plan

  variables {
    processor         = null
    retry_policy_json = null
    handler           = "payments.app.handler"
    scheduler         = null
    recursive_loop    = "Allow"
  }

  assert {
    condition     = length(aws_lambda_function_recursion_config.this) == 1 && aws_lambda_function_recursion_config.this[0].recursive_loop == "Allow"
    error_message = "recursive_loop = Allow must set it, also for a plain handler."
  }
}

run "consumer_may_opt_out" {
  command = plan

  variables {
    recursive_loop = "Terminate"
  }

  assert {
    condition     = length(aws_lambda_function_recursion_config.this) == 0 && output.recursive_loop == "Terminate"
    error_message = "recursive_loop = Terminate must leave Lambda's default in place."
  }
}

run "recursive_loop_is_checked" {
  command = plan

  variables {
    recursive_loop = "allow"
  }

  expect_failures = [var.recursive_loop]
}
