# Plan-level tests of the self-healing module on the mock provider (shared defaults in
# tests/terraform/mocks): IAM scopes, the rules' patterns, the wiring, and every validation; then
# the failure records in S3 (failure_records.tf, orders has on_failure = "s3"): the bucket and its
# hardening, the notification to the failure queue and the queue's policy for it, the source roles'
# PutObject and the functions' GetObject scoped to each function's prefix, and their validations;
# last, how the two functions are deployed.
mock_provider "aws" {
  source = "../../tests/terraform/mocks"
}

override_resource {
  target          = module.failure_queue.aws_sqs_queue.source
  override_during = plan
  values = {
    arn  = "arn:aws:sqs:us-east-1:123456789012:heal-failures"
    url  = "https://sqs.us-east-1.amazonaws.com/123456789012/heal-failures"
    name = "heal-failures"
  }
}

override_resource {
  target          = module.failure_queue.aws_sqs_queue.dlq
  override_during = plan
  values = {
    arn = "arn:aws:sqs:us-east-1:123456789012:heal-failures-dlq"
    url = "https://sqs.us-east-1.amazonaws.com/123456789012/heal-failures-dlq"
  }
}

override_resource {
  target          = aws_sqs_queue.exhausted
  override_during = plan
  values = {
    arn = "arn:aws:sqs:us-east-1:123456789012:heal-exhausted"
    url = "https://sqs.us-east-1.amazonaws.com/123456789012/heal-exhausted"
  }
}

override_resource {
  target          = aws_sqs_queue.dlq["rules"]
  override_during = plan
  values = {
    arn = "arn:aws:sqs:us-east-1:123456789012:heal-rules-dlq"
    url = "https://sqs.us-east-1.amazonaws.com/123456789012/heal-rules-dlq"
  }
}

override_resource {
  target          = aws_sqs_queue.dlq["redrive"]
  override_during = plan
  values = {
    arn = "arn:aws:sqs:us-east-1:123456789012:heal-redrive-dlq"
    url = "https://sqs.us-east-1.amazonaws.com/123456789012/heal-redrive-dlq"
  }
}

override_resource {
  target          = aws_sqs_queue.dlq["schedule"]
  override_during = plan
  values = {
    arn = "arn:aws:sqs:us-east-1:123456789012:heal-schedule-dlq"
    url = "https://sqs.us-east-1.amazonaws.com/123456789012/heal-schedule-dlq"
  }
}

override_resource {
  target          = module.enrichment.aws_lambda_function.this
  override_during = plan
  values = {
    arn = "arn:aws:lambda:us-east-1:123456789012:function:heal-enrichment"
  }
}

override_resource {
  target          = module.redrive.aws_lambda_function.this
  override_during = plan
  values = {
    arn = "arn:aws:lambda:us-east-1:123456789012:function:heal-redrive"
  }
}

override_resource {
  target          = module.enrichment.aws_cloudwatch_log_group.this
  override_during = plan
  values = {
    arn = "arn:aws:logs:us-east-1:123456789012:log-group:/aws/lambda/heal-enrichment"
  }
}

override_resource {
  target          = module.redrive.aws_cloudwatch_log_group.this
  override_during = plan
  values = {
    arn = "arn:aws:logs:us-east-1:123456789012:log-group:/aws/lambda/heal-redrive"
  }
}

override_resource {
  target          = aws_cloudwatch_log_group.pipe
  override_during = plan
  values = {
    arn = "arn:aws:logs:us-east-1:123456789012:log-group:/aws/vendedlogs/pipes/heal-failures"
  }
}

override_resource {
  target          = aws_cloudwatch_event_bus.this
  override_during = plan
  values = {
    arn = "arn:aws:events:us-east-1:123456789012:event-bus/heal"
  }
}

override_resource {
  target          = aws_cloudwatch_event_rule.retry["orders"]
  override_during = plan
  values = {
    arn = "arn:aws:events:us-east-1:123456789012:rule/heal/heal-retry-orders"
  }
}

override_resource {
  target          = aws_cloudwatch_event_rule.retry["invoices"]
  override_during = plan
  values = {
    arn = "arn:aws:events:us-east-1:123456789012:rule/heal/heal-retry-invoices"
  }
}

override_resource {
  target          = aws_cloudwatch_event_rule.exhausted
  override_during = plan
  values = {
    arn = "arn:aws:events:us-east-1:123456789012:rule/heal/heal-exhausted-rule"
  }
}

override_resource {
  target          = module.scheduler.aws_scheduler_schedule_group.this
  override_during = plan
  values = {
    arn = "arn:aws:scheduler:us-east-1:123456789012:schedule-group/heal-redrive"
  }
}

override_resource {
  target          = module.scheduler.aws_iam_role.this
  override_during = plan
  values = {
    arn = "arn:aws:iam::123456789012:role/heal-redrive-scheduler"
  }
}

variables {
  name    = "heal"
  package = "../../tests/terraform/fixtures/empty.zip"
  sources = {
    orders = {
      function_name      = "orders-fn"
      function_role_name = "orders-fn-role"
      topic_arn          = "arn:aws:sns:us-east-1:123456789012:orders"
      on_failure         = "s3"
      # 1 + 5 retries at most: the 503 rule grants 6 attempts, more than the policy's 4.
      retry_policy = {
        max_attempts = 4
        backoff      = { strategy = "exponential", base_seconds = 10 }
        rules        = [{ http_status = [503], max_attempts = 6 }, { errors = ["ValueError"], retry = false, max_attempts = 9 }]
      }
    }
    invoices = {
      function_name      = "invoices-fn"
      function_role_name = "invoices-fn-role"
    }
  }
  do_not_retry = ["KeyError", "ValidationError"]
  tags         = { team = "orders" }
}

run "limits_come_from_each_sources_policy" {
  command = plan

  assert {
    condition     = output.retry_limits["orders"] == 5 && output.retry_limits["invoices"] == 4 && length(output.retry_limits) == 2
    error_message = "L(s) = largest max_attempts of the policy and its retrying rules - 1 (orders: the 503 rule's 6; invoices: the default policy's 5), got ${jsonencode(output.retry_limits)}."
  }
}

run "rules_are_the_contract_table" {
  command = plan

  assert {
    condition = jsondecode(output.event_patterns["heal-retry-orders"]) == {
      source        = ["serverless-retry.self-healing"]
      "detail-type" = ["serverless-retry failure"]
      detail = { meta = {
        function_name = ["orders-fn"]
        error_type    = [{ anything-but = ["InvalidFailureRecord", "KeyError", "MissingErrorType", "ValidationError"] }]
        retry_count   = [{ numeric = ["<", 5] }]
      } }
    }
    error_message = "Retry rule of orders: ${output.event_patterns["heal-retry-orders"]}"
  }

  assert {
    condition = jsondecode(output.event_patterns["heal-budget-invoices"]) == {
      source        = ["serverless-retry.self-healing"]
      "detail-type" = ["serverless-retry failure"]
      detail = { meta = {
        function_name = ["invoices-fn"]
        error_type    = [{ anything-but = ["InvalidFailureRecord", "KeyError", "MissingErrorType", "ValidationError"] }]
        retry_count   = [{ numeric = [">=", 4] }]
      } }
    }
    error_message = "Budget rule of invoices: ${output.event_patterns["heal-budget-invoices"]}"
  }

  assert {
    condition = jsondecode(output.event_patterns["heal-do-not-retry"]) == {
      source        = ["serverless-retry.self-healing"]
      "detail-type" = ["serverless-retry failure"]
      detail = { meta = {
        function_name = ["invoices-fn", "orders-fn"]
        error_type    = ["KeyError", "MissingErrorType", "ValidationError"]
      } }
    }
    error_message = "Do-not-retry rule: ${output.event_patterns["heal-do-not-retry"]}"
  }

  assert {
    condition = jsondecode(output.event_patterns["heal-invalid-record"]) == {
      source        = ["serverless-retry.self-healing"]
      "detail-type" = ["serverless-retry failure"]
      detail        = { meta = { error_type = ["InvalidFailureRecord"] } }
    }
    error_message = "Invalid-record rule: ${output.event_patterns["heal-invalid-record"]}"
  }

  assert {
    condition = jsondecode(output.event_patterns["heal-unknown-source"]) == {
      source        = ["serverless-retry.self-healing"]
      "detail-type" = ["serverless-retry failure"]
      detail = { meta = {
        function_name = [{ anything-but = ["invoices-fn", "orders-fn"] }]
        error_type    = [{ anything-but = ["InvalidFailureRecord"] }]
      } }
    }
    error_message = "Unknown-source rule: ${output.event_patterns["heal-unknown-source"]}"
  }

  assert {
    condition     = length(output.event_patterns) == 7 && alltrue([for p in values(output.event_patterns) : strcontains(p, "\"<\"") || !strcontains(p, "\\u003c")])
    error_message = "2 rules per source + do-not-retry, invalid-record, unknown-source, with < and > written plainly."
  }

  assert {
    condition     = alltrue([for r in aws_cloudwatch_event_rule.retry : r.event_bus_name == "heal"]) && alltrue([for r in aws_cloudwatch_event_rule.exhausted : r.event_bus_name == "heal"])
    error_message = "Every rule is on the module's bus."
  }
}

run "targets_redrive_or_exhausted_with_a_dlq_each" {
  command = plan

  assert {
    condition     = alltrue([for t in aws_cloudwatch_event_target.retry : t.arn == "arn:aws:lambda:us-east-1:123456789012:function:heal-redrive" && t.dead_letter_config[0].arn == "arn:aws:sqs:us-east-1:123456789012:heal-rules-dlq"])
    error_message = "Each retry rule targets the redrive function, with the rules DLQ."
  }

  assert {
    condition     = alltrue([for t in aws_cloudwatch_event_target.exhausted : t.arn == "arn:aws:sqs:us-east-1:123456789012:heal-exhausted" && t.dead_letter_config[0].arn == "arn:aws:sqs:us-east-1:123456789012:heal-rules-dlq"])
    error_message = "Each exhausted rule targets the retry-exhausted queue, with the rules DLQ."
  }

  assert {
    condition = alltrue([
      for k, t in aws_cloudwatch_event_target.exhausted :
      t.input_transformer[0].input_paths == tomap({ detail = "$.detail" }) &&
      startswith(t.input_transformer[0].input_template, format("{\"outcome\": \"%s\", \"reason\": \"", lookup({ "do-not-retry" = "non-retryable", "invalid-record" = "invalid-failure-record", "unknown-source" = "unknown-source" }, k, "exhausted"))) &&
      endswith(t.input_transformer[0].input_template, "\", \"detail\": <detail>}")
    ])
    error_message = "Every exhausted target writes an ExhaustedRecord {outcome, reason, detail} with its rule's outcome."
  }

  assert {
    condition     = jsondecode(replace(aws_cloudwatch_event_target.exhausted["budget-orders"].input_transformer[0].input_template, "<detail>", "{}")).reason == "retry budget of orders-fn (5 retries) spent"
    error_message = "The budget rule's reason names the function and its limit, and the template is JSON once <detail> is filled."
  }

  assert {
    condition     = aws_lambda_function_event_invoke_config.redrive.maximum_retry_attempts == 2 && aws_lambda_function_event_invoke_config.redrive.destination_config[0].on_failure[0].destination == "arn:aws:sqs:us-east-1:123456789012:heal-redrive-dlq"
    error_message = "A failed redrive is retried twice by Lambda, then goes to the redrive DLQ."
  }

  assert {
    condition     = toset([for p in aws_lambda_permission.redrive : p.source_arn]) == toset(["arn:aws:events:us-east-1:123456789012:rule/heal/heal-retry-orders", "arn:aws:events:us-east-1:123456789012:rule/heal/heal-retry-invoices"]) && alltrue([for p in aws_lambda_permission.redrive : p.principal == "events.amazonaws.com"])
    error_message = "Only the retry rules may invoke the redrive function."
  }
}

run "sources_send_failures_to_the_failure_queue" {
  command = plan

  # Both sources on the default on_failure (the file's orders writes to S3).
  variables {
    sources = {
      orders   = { function_name = "orders-fn", function_role_name = "orders-fn-role" }
      invoices = { function_name = "invoices-fn", function_role_name = "invoices-fn-role" }
    }
  }

  assert {
    condition = alltrue([
      for k, c in aws_lambda_function_event_invoke_config.source :
      c.maximum_retry_attempts == 0 && c.maximum_event_age_in_seconds == 21600 && c.destination_config[0].on_failure[0].destination == "arn:aws:sqs:us-east-1:123456789012:heal-failures"
    ]) && toset([for c in aws_lambda_function_event_invoke_config.source : c.function_name]) == toset(["orders-fn", "invoices-fn"])
    error_message = "Each source: no Lambda retries by default, on failure -> the failure queue."
  }

  assert {
    condition     = toset([for p in aws_iam_role_policy.source : p.role]) == toset(["orders-fn-role", "invoices-fn-role"])
    error_message = "The grant goes on each source's own role."
  }

  assert {
    condition     = jsonencode([for s in data.aws_iam_policy_document.source.statement : "${s.sid} | ${join(",", sort(s.actions))} | ${join(",", sort(s.resources))}"]) == jsonencode(["SendFailureRecords | sqs:SendMessage | arn:aws:sqs:us-east-1:123456789012:heal-failures"])
    error_message = "A source's role may only send to the failure queue."
  }
}

run "every_role_is_scoped_to_exact_arns" {
  command = plan

  assert {
    condition = toset([for s in data.aws_iam_policy_document.pipe.statement : "${s.sid} | ${join(",", sort(s.actions))} | ${join(",", sort(s.resources))}"]) == toset([
      "ReadFailureQueue | sqs:DeleteMessage,sqs:GetQueueAttributes,sqs:ReceiveMessage | arn:aws:sqs:us-east-1:123456789012:heal-failures",
      "InvokeEnrichment | lambda:InvokeFunction | arn:aws:lambda:us-east-1:123456789012:function:heal-enrichment",
      "PutOnBus | events:PutEvents | arn:aws:events:us-east-1:123456789012:event-bus/heal",
      "WritePipeLogs | logs:CreateLogStream,logs:PutLogEvents | arn:aws:logs:us-east-1:123456789012:log-group:/aws/vendedlogs/pipes/heal-failures:log-stream:*",
    ])
    error_message = "The pipe role: read its queue, invoke the enrichment, put on its bus, write its logs."
  }

  assert {
    condition = toset([for c in data.aws_iam_policy_document.pipe_trust.statement[0].condition : "${c.test} ${c.variable} ${join(",", c.values)}"]) == toset([
      "StringEquals aws:SourceAccount 123456789012",
      "ArnEquals aws:SourceArn arn:aws:pipes:us-east-1:123456789012:pipe/heal-failures",
    ]) && jsonencode(data.aws_iam_policy_document.pipe_trust.statement[0].principals) == jsonencode([{ identifiers = ["pipes.amazonaws.com"], type = "Service" }])
    error_message = "Only EventBridge Pipes, for this pipe of this account, may assume the pipe role."
  }

  assert {
    condition = toset(flatten([
      for d in [data.aws_iam_policy_document.enrichment_send, module.enrichment.iam.documents.logs, data.aws_iam_policy_document.kms["enrichment"], module.enrichment.iam.documents.xray] :
      [for s in d.statement : "${s.sid} | ${join(",", sort(s.actions))} | ${join(",", sort(s.resources))}"]
      ])) == toset([
      "SendExhaustedAndDeferred | sqs:SendMessage | arn:aws:sqs:us-east-1:123456789012:heal-exhausted,arn:aws:sqs:us-east-1:123456789012:heal-failures",
      "WriteOwnLogs | logs:CreateLogStream,logs:PutLogEvents | arn:aws:logs:us-east-1:123456789012:log-group:/aws/lambda/heal-enrichment:log-stream:*",
    ])
    error_message = "The enrichment role: send to the exhausted and failure queues, write its logs."
  }

  assert {
    condition = toset(flatten([
      for d in [data.aws_iam_policy_document.redrive_deliver, data.aws_iam_policy_document.redrive_schedule, data.aws_iam_policy_document.redrive_send, module.redrive.iam.documents.logs, data.aws_iam_policy_document.kms["redrive"], module.enrichment.iam.documents.xray] :
      [for s in d.statement : "${s.sid} | ${join(",", sort(s.actions))} | ${join(",", sort(s.resources))}"]
      ])) == toset([
      "InvokeSourceFunctions | lambda:InvokeFunction | arn:aws:lambda:us-east-1:123456789012:function:invoices-fn,arn:aws:lambda:us-east-1:123456789012:function:orders-fn",
      "CreateRetrySchedules | scheduler:CreateSchedule | arn:aws:scheduler:us-east-1:123456789012:schedule/heal-redrive/*",
      "PassSchedulerRole | iam:PassRole | arn:aws:iam::123456789012:role/heal-redrive-scheduler",
      "SendExhaustedAndOwnFailures | sqs:SendMessage | arn:aws:sqs:us-east-1:123456789012:heal-exhausted,arn:aws:sqs:us-east-1:123456789012:heal-redrive-dlq",
      "WriteOwnLogs | logs:CreateLogStream,logs:PutLogEvents | arn:aws:logs:us-east-1:123456789012:log-group:/aws/lambda/heal-redrive:log-stream:*",
    ])
    error_message = "The redrive role: invoke the sources, schedule in its group as the scheduler role, send to the exhausted queue and its own DLQ, write its logs. No topic without topic mode."
  }

  assert {
    condition     = jsonencode(data.aws_iam_policy_document.redrive_schedule.statement[1].condition) == jsonencode([{ test = "StringEquals", values = ["scheduler.amazonaws.com"], variable = "iam:PassedToService" }])
    error_message = "The scheduler role may only be passed to EventBridge Scheduler."
  }

  assert {
    # modules/scheduler scopes its role to exactly these (its own tests prove it).
    condition = jsonencode(local.scheduler_targets) == jsonencode({
      function_arns          = ["arn:aws:lambda:us-east-1:123456789012:function:invoices-fn", "arn:aws:lambda:us-east-1:123456789012:function:orders-fn"]
      topic_arns             = []
      dead_letter_queue_arns = ["arn:aws:sqs:us-east-1:123456789012:heal-schedule-dlq"]
      kms_key_arns           = []
    })
    error_message = "The scheduler role may only invoke the source functions and dead-letter to the schedule DLQ: ${jsonencode(local.scheduler_targets)}"
  }

  assert {
    # Every Allow of every role the module writes: exact actions, never a wildcard.
    condition = alltrue(flatten([
      for d in [
        data.aws_iam_policy_document.pipe, data.aws_iam_policy_document.enrichment_send, data.aws_iam_policy_document.redrive_deliver,
        data.aws_iam_policy_document.redrive_schedule, data.aws_iam_policy_document.redrive_send, data.aws_iam_policy_document.source,
        module.enrichment.iam.documents.logs, module.redrive.iam.documents.logs,
        data.aws_iam_policy_document.exhausted_queue, data.aws_iam_policy_document.rules_dlq,
      ] : [for s in d.statement : [for a in s.actions : !strcontains(a, "*")] if s.effect != "Deny"]
    ]))
    error_message = "No Allow statement may use a wildcard action."
  }
}

run "queues_let_only_their_rules_in" {
  command = plan

  assert {
    condition = (
      data.aws_iam_policy_document.exhausted_queue.statement[0].resources == toset(["arn:aws:sqs:us-east-1:123456789012:heal-exhausted"]) &&
      jsonencode(data.aws_iam_policy_document.exhausted_queue.statement[0].principals) == jsonencode([{ identifiers = ["events.amazonaws.com"], type = "Service" }]) &&
      jsonencode([for c in data.aws_iam_policy_document.exhausted_queue.statement[0].condition : "${c.test} ${c.variable} ${join(",", distinct(c.values))}"]) == jsonencode(["ArnEquals aws:SourceArn arn:aws:events:us-east-1:123456789012:rule/heal/heal-exhausted-rule"])
    )
    error_message = "The retry-exhausted queue accepts EventBridge only for the exhausted rules."
  }

  assert {
    condition = toset(flatten([for c in data.aws_iam_policy_document.rules_dlq.statement[0].condition : c.values])) == toset([
      "arn:aws:events:us-east-1:123456789012:rule/heal/heal-retry-orders",
      "arn:aws:events:us-east-1:123456789012:rule/heal/heal-retry-invoices",
      "arn:aws:events:us-east-1:123456789012:rule/heal/heal-exhausted-rule",
    ])
    error_message = "The rules DLQ accepts EventBridge for every rule of the module, no other."
  }

  assert {
    condition     = length(data.aws_iam_policy_document.tls_only) == 4 && alltrue([for d in data.aws_iam_policy_document.tls_only : d.statement[0].effect == "Deny" && jsonencode([for c in d.statement[0].condition : "${c.test} ${c.variable} ${join(",", c.values)}"]) == jsonencode(["Bool aws:SecureTransport false"])])
    error_message = "Every queue refuses plain HTTP."
  }

  assert {
    condition = alltrue([
      for q in concat([aws_sqs_queue.exhausted], values(aws_sqs_queue.dlq)) :
      q.sqs_managed_sse_enabled == true && q.tags == tomap({ team = "orders" })
    ])
    error_message = "Every queue is encrypted and tagged."
  }

  assert {
    condition     = module.failure_queue.dlq_arn == "arn:aws:sqs:us-east-1:123456789012:heal-failures-dlq" && module.failure_queue.max_receive_count == 5 && module.failure_queue.visibility_timeout_seconds == 180
    error_message = "The failure queue redrives to its DLQ after 5 receives; its visibility timeout is 6 x the enrichment's 30 s."
  }
}

run "pipe_and_functions_are_wired" {
  command = plan

  assert {
    condition = (
      aws_pipes_pipe.failures.source == "arn:aws:sqs:us-east-1:123456789012:heal-failures" &&
      aws_pipes_pipe.failures.enrichment == "arn:aws:lambda:us-east-1:123456789012:function:heal-enrichment" &&
      aws_pipes_pipe.failures.target == "arn:aws:events:us-east-1:123456789012:event-bus/heal" &&
      aws_pipes_pipe.failures.source_parameters[0].sqs_queue_parameters[0].batch_size == 10 &&
      aws_pipes_pipe.failures.target_parameters[0].eventbridge_event_bus_parameters[0].source == "serverless-retry.self-healing" &&
      aws_pipes_pipe.failures.target_parameters[0].eventbridge_event_bus_parameters[0].detail_type == "serverless-retry failure" &&
      aws_pipes_pipe.failures.log_configuration[0].level == "ERROR" &&
      aws_pipes_pipe.failures.log_configuration[0].cloudwatch_logs_log_destination[0].log_group_arn == "arn:aws:logs:us-east-1:123456789012:log-group:/aws/vendedlogs/pipes/heal-failures"
    )
    error_message = "The pipe reads the failure queue, enriches, and puts on the bus with the contract's Source and DetailType, logging errors."
  }

  assert {
    condition = jsonencode(output.enrichment_environment) == jsonencode({
      SERVERLESS_RETRY_EXHAUSTED_QUEUE_URL         = "https://sqs.us-east-1.amazonaws.com/123456789012/heal-exhausted"
      SERVERLESS_RETRY_EXHAUSTED_MAX_MESSAGE_BYTES = "262144"
      SERVERLESS_RETRY_FAILURE_QUEUE_URL           = "https://sqs.us-east-1.amazonaws.com/123456789012/heal-failures"
      POWERTOOLS_SERVICE_NAME                      = "heal-enrichment"
      POWERTOOLS_METRICS_NAMESPACE                 = "ServerlessRetry"
      POWERTOOLS_LOG_LEVEL                         = "INFO"
    })
    error_message = "Enrichment environment per the contract: ${jsonencode(output.enrichment_environment)}"
  }

  assert {
    condition = alltrue([
      output.redrive_environment["SERVERLESS_RETRY_REDRIVE_TO"] == "function",
      output.redrive_environment["SERVERLESS_RETRY_EXHAUSTED_QUEUE_URL"] == "https://sqs.us-east-1.amazonaws.com/123456789012/heal-exhausted",
      output.redrive_environment["SERVERLESS_RETRY_EXHAUSTED_MAX_MESSAGE_BYTES"] == "262144",
      output.redrive_environment["SERVERLESS_RETRY_SCHEDULE_GROUP"] == "heal-redrive",
      output.redrive_environment["SERVERLESS_RETRY_SCHEDULER_ROLE_ARN"] == "arn:aws:iam::123456789012:role/heal-redrive-scheduler",
      output.redrive_environment["SERVERLESS_RETRY_DLQ_ARN"] == "arn:aws:sqs:us-east-1:123456789012:heal-schedule-dlq",
      jsondecode(output.redrive_environment["SERVERLESS_RETRY_POLICY"]) == {},
    ])
    error_message = "Redrive environment per the contract: ${jsonencode(output.redrive_environment)}"
  }

  assert {
    condition = jsondecode(output.redrive_environment["SERVERLESS_RETRY_SOURCES"]) == {
      "orders-fn" = {
        function_arn = "arn:aws:lambda:us-east-1:123456789012:function:orders-fn"
        topic_arn    = "arn:aws:sns:us-east-1:123456789012:orders"
        policy = {
          max_attempts = 4
          backoff      = { strategy = "exponential", base_seconds = 10 }
          rules        = [{ http_status = [503], max_attempts = 6 }, { errors = ["ValueError"], retry = false, max_attempts = 9 }]
        }
      }
      "invoices-fn" = { function_arn = "arn:aws:lambda:us-east-1:123456789012:function:invoices-fn" }
    }
    error_message = "SERVERLESS_RETRY_SOURCES: by function name, a policy only where the source has its own: ${output.redrive_environment["SERVERLESS_RETRY_SOURCES"]}"
  }

  assert {
    condition     = local.redrive_environment_bytes.planned == local.redrive_environment_bytes.applied
    error_message = "The plan-time size estimate of the environment is exact on AWS (URLs and ARNs predicted from names)."
  }

  assert {
    condition     = module.redrive.function.handler == "serverless_retry.handlers.redrive.handler" && module.enrichment.function.handler == "serverless_retry.handlers.enrichment.handler"
    error_message = "The functions run the package's handlers."
  }
}

run "topic_mode_may_publish_to_the_topics" {
  command = plan

  variables {
    redrive_to         = "topic"
    topic_kms_key_arns = ["arn:aws:kms:us-east-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab"]
  }

  assert {
    condition = toset([for s in data.aws_iam_policy_document.redrive_deliver.statement : "${s.sid} | ${join(",", sort(s.resources))}"]) == toset([
      "InvokeSourceFunctions | arn:aws:lambda:us-east-1:123456789012:function:invoices-fn,arn:aws:lambda:us-east-1:123456789012:function:orders-fn",
      "PublishToSourceTopics | arn:aws:sns:us-east-1:123456789012:orders",
    ])
    error_message = "Topic mode: publish to the configured topics only (and invoke, the fallback)."
  }

  assert {
    condition     = jsonencode(local.scheduler_targets.topic_arns) == jsonencode(["arn:aws:sns:us-east-1:123456789012:orders"]) && jsonencode(local.scheduler_targets.kms_key_arns) == jsonencode(["arn:aws:kms:us-east-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab"])
    error_message = "Topic mode: the scheduler (universal target sns:publish) may publish to the source topics with their key."
  }

  assert {
    condition     = output.redrive_environment["SERVERLESS_RETRY_REDRIVE_TO"] == "topic"
    error_message = "The redrive function is told the mode."
  }
}

run "customer_managed_key_is_granted_where_used" {
  command = plan

  variables {
    kms_key_arn = "arn:aws:kms:us-east-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab"
  }

  assert {
    condition = alltrue([
      for q in concat([aws_sqs_queue.exhausted], values(aws_sqs_queue.dlq)) :
      q.kms_master_key_id == "arn:aws:kms:us-east-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab"
    ])
    error_message = "Every queue uses the key."
  }

  assert {
    condition = alltrue([
      for d in [data.aws_iam_policy_document.source, data.aws_iam_policy_document.kms["enrichment"], data.aws_iam_policy_document.kms["redrive"], data.aws_iam_policy_document.pipe] :
      anytrue([for s in d.statement : contains(s.resources, "arn:aws:kms:us-east-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab") && contains(s.actions, "kms:Decrypt")])
    ])
    error_message = "Sources, pipe, enrichment and redrive may use the key."
  }

  assert {
    condition     = jsonencode(local.scheduler_targets.kms_key_arns) == jsonencode(["arn:aws:kms:us-east-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab"])
    error_message = "The scheduler may use the key (its dead-letter queue is encrypted with it)."
  }
}

# --- validations -------------------------------------------------------------------------------------
run "name_too_long" {
  command = plan
  variables {
    name = "a-name-that-is-longer-than-32-chars"
  }
  expect_failures = [var.name]
}

run "name_default_is_the_default_bus" {
  command = plan
  variables {
    name = "default"
  }
  expect_failures = [var.name]
}

run "no_sources" {
  command = plan
  variables {
    sources = {}
  }
  expect_failures = [var.sources]
}

run "source_key_too_long" {
  command = plan
  variables {
    sources = { a-key-longer-than-twenty-four = { function_name = "f", function_role_name = "r" } }
  }
  expect_failures = [var.sources]
}

run "unknown_source_field" {
  command = plan
  variables {
    sources = { orders = { function_name = "f", function_role_name = "r", topic = "arn:aws:sns:us-east-1:123456789012:orders" } }
  }
  expect_failures = [var.sources]
}

run "function_arn_instead_of_name" {
  command = plan
  variables {
    sources = { orders = { function_name = "arn:aws:lambda:us-east-1:123456789012:function:f", function_role_name = "r" } }
  }
  expect_failures = [var.sources]
}

run "missing_role_name" {
  command = plan
  variables {
    sources = { orders = { function_name = "f" } }
  }
  expect_failures = [var.sources]
}

run "fifo_topic" {
  command = plan
  variables {
    sources = { orders = { function_name = "f", function_role_name = "r", topic_arn = "arn:aws:sns:us-east-1:123456789012:orders.fifo" } }
  }
  expect_failures = [var.sources]
}

run "one_function_twice" {
  command = plan
  variables {
    sources = { a = { function_name = "f", function_role_name = "r" }, b = { function_name = "f", function_role_name = "r" } }
  }
  expect_failures = [var.sources]
}

run "module_qualified_error_name" {
  command = plan
  variables {
    do_not_retry = ["builtins.KeyError"]
  }
  expect_failures = [var.do_not_retry]
}

run "bad_redrive_to" {
  command = plan
  variables {
    redrive_to = "queue"
  }
  expect_failures = [var.redrive_to]
}

run "too_many_lambda_retries" {
  command = plan
  variables {
    maximum_retry_attempts = 3
  }
  expect_failures = [var.maximum_retry_attempts]
}

run "event_age_below_a_minute" {
  command = plan
  variables {
    maximum_event_age_in_seconds = 30
  }
  expect_failures = [var.maximum_event_age_in_seconds]
}

run "batch_larger_than_put_events" {
  command = plan
  variables {
    pipe_batch_size = 11
  }
  expect_failures = [var.pipe_batch_size]
}

run "bad_pipe_log_level" {
  command = plan
  variables {
    pipe_log_level = "DEBUG"
  }
  expect_failures = [var.pipe_log_level]
}

run "package_is_not_a_zip" {
  command = plan
  variables {
    package = "../../tests/terraform/fixtures/missing.zip"
  }
  expect_failures = [var.package]
}

run "wired_environment_cannot_be_overridden" {
  command = plan
  variables {
    environment = { SERVERLESS_RETRY_REDRIVE_TO = "topic" }
  }
  expect_failures = [var.environment]
}

run "enrichment_timeout_above_the_pipe_limit" {
  command = plan
  variables {
    timeout = 301
  }
  expect_failures = [var.timeout]
}

run "exhausted_queue_smaller_than_failure_queue" {
  command = plan
  variables {
    max_message_size           = 262144
    exhausted_max_message_size = 131072
  }
  expect_failures = [aws_sqs_queue.exhausted]
}

# The failure queue and its DLQ are modules/queue's: their attributes, policies and the DLQ retention
# guard are checked on the plan in tests/terraform/test_self_healing_queues.py.

run "a_source_that_would_never_retry" {
  command = plan
  variables {
    sources = { orders = { function_name = "orders-fn", function_role_name = "r", retry_policy = { max_attempts = 1 } } }
  }
  expect_failures = [aws_cloudwatch_event_rule.retry]
}

run "sqs_transport_cannot_self_heal" {
  command = plan
  variables {
    sources = { orders = { function_name = "orders-fn", function_role_name = "r", retry_policy = { transport = "sqs-delay" } } }
  }
  expect_failures = [aws_cloudwatch_event_rule.retry]
}

run "default_policy_transport" {
  command = plan
  variables {
    retry_policy = { transport = "visibility" }
  }
  # The default policy reaches the redrive function and every source without a policy of its own.
  expect_failures = [aws_lambda_function_event_invoke_config.redrive, aws_cloudwatch_event_rule.retry]
}

run "pattern_longer_than_eventbridge_allows" {
  command = plan
  variables {
    do_not_retry = [for i in range(40) : "AVeryLongExceptionClassNameNumber${i}ThatNobodyWouldWrite"]
  }
  expect_failures = [aws_cloudwatch_event_rule.retry, aws_cloudwatch_event_rule.exhausted]
}

run "environment_larger_than_lambda_allows" {
  command = plan
  variables {
    sources = {
      for i in range(14) : "s${i}" => {
        function_name      = "a-rather-long-function-name-for-source-number-${i}"
        function_role_name = "r"
        retry_policy       = { rules = [{ errors = ["ConnectionError", "TimeoutError", "ThrottlingError"], backoff = { strategy = "fixed", base_seconds = 30 } }] }
      }
    }
  }
  expect_failures = [aws_lambda_function_event_invoke_config.redrive]
}

# Failure records in S3 (failure_records.tf): orders writes there, invoices to the failure queue.
run "the_bucket_is_made_hardened" {
  command = plan

  assert {
    condition     = module.failure_records[0].resources.bucket.bucket == "heal-failure-records-123456789012-us-east-1" && module.failure_records[0].resources.bucket.tags["team"] == "orders"
    error_message = "The bucket the module makes: <name>-failure-records-<account>-<region>, tagged."
  }

  assert {
    condition = alltrue([
      module.failure_records[0].resources.public_access_block.block_public_acls,
      module.failure_records[0].resources.public_access_block.block_public_policy,
      module.failure_records[0].resources.public_access_block.ignore_public_acls,
      module.failure_records[0].resources.public_access_block.restrict_public_buckets,
    ]) && module.failure_records[0].resources.ownership_controls.rule[0].object_ownership == "BucketOwnerEnforced"
    error_message = "Public access blocked, ACLs off."
  }

  assert {
    condition     = one([for r in module.failure_records[0].resources.encryption.rule : one(r.apply_server_side_encryption_by_default).sse_algorithm]) == "AES256"
    error_message = "SSE-S3 by default."
  }

  assert {
    condition     = length(module.failure_records[0].resources.versioning) == 0
    error_message = "Versioning is off by default."
  }

  assert {
    condition = [for r in module.failure_records[0].resources.lifecycle.rule : {
      id = r.id, prefix = one(r.filter).prefix, days = one(r.expiration).days, noncurrent = length(r.noncurrent_version_expiration)
    } if r.id == "expire-failure-records"] == [{ id = "expire-failure-records", prefix = "aws/lambda/async/", days = 30, noncurrent = 0 }]
    error_message = "Records expire after 30 days by default, under Lambda's prefix."
  }

  assert {
    condition     = alltrue([for r in module.failure_records[0].resources.lifecycle.rule : one(r.abort_incomplete_multipart_upload).days_after_initiation == 1]) && length(module.failure_records[0].resources.lifecycle.rule) == 2
    error_message = "Every rule aborts incomplete uploads after a day."
  }

  assert {
    condition = jsondecode(module.failure_records[0].resources.policy.policy).Statement == [{
      Sid       = "DenyInsecureTransport"
      Effect    = "Deny"
      Principal = "*"
      Action    = "s3:*"
      Resource  = ["arn:aws:s3:::heal-failure-records-123456789012-us-east-1", "arn:aws:s3:::heal-failure-records-123456789012-us-east-1/*"]
      Condition = { Bool = { "aws:SecureTransport" = "false" } }
    }]
    error_message = "The bucket refuses plain HTTP."
  }

  assert {
    condition     = output.failure_records_bucket == { name = "heal-failure-records-123456789012-us-east-1", arn = "arn:aws:s3:::heal-failure-records-123456789012-us-east-1", prefix = "aws/lambda/async/" }
    error_message = "The output names the bucket and Lambda's prefix."
  }
}

run "only_the_s3_source_writes_to_the_bucket" {
  command = plan

  assert {
    condition     = aws_lambda_function_event_invoke_config.source["orders"].destination_config[0].on_failure[0].destination == "arn:aws:s3:::heal-failure-records-123456789012-us-east-1"
    error_message = "orders (on_failure = s3): on failure -> the bucket."
  }

  assert {
    condition     = aws_lambda_function_event_invoke_config.source["invoices"].destination_config[0].on_failure[0].destination == "arn:aws:sqs:us-east-1:123456789012:heal-failures"
    error_message = "invoices (the default): on failure -> the failure queue, as before."
  }

  assert {
    condition = [for s in data.aws_iam_policy_document.source_s3["orders"].statement : "${s.sid} | ${join(",", sort(s.actions))} | ${join(",", sort(s.resources))}"] == [
      "WriteFailureRecords | s3:PutObject | arn:aws:s3:::heal-failure-records-123456789012-us-east-1/aws/lambda/async/orders-fn/*",
      "ListFailureRecordsBucket | s3:ListBucket | arn:aws:s3:::heal-failure-records-123456789012-us-east-1",
    ]
    error_message = "The S3 source's role may write under its own function's prefix only (and list the bucket, as Lambda requires)."
  }

  assert {
    condition     = keys(data.aws_iam_policy_document.source_s3) == ["orders"]
    error_message = "Only the S3 source gets S3 permissions."
  }

  assert {
    condition = [for s in data.aws_iam_policy_document.read_records.statement : "${s.sid} | ${join(",", sort(s.actions))} | ${join(",", sort(s.resources))}"] == [
      "ReadFailureRecords | s3:GetObject | arn:aws:s3:::heal-failure-records-123456789012-us-east-1/aws/lambda/async/orders-fn/*",
    ]
    error_message = "Enrichment and redrive may read exactly the S3 sources' records."
  }

  assert {
    condition = alltrue([
      contains(data.aws_iam_policy_document.enrichment.source_policy_documents, data.aws_iam_policy_document.read_records.json),
      contains(data.aws_iam_policy_document.redrive.source_policy_documents, data.aws_iam_policy_document.read_records.json),
    ])
    error_message = "Both functions' policies include the read."
  }

  assert {
    condition     = output.failure_records_read_policy_json == data.aws_iam_policy_document.read_records.json
    error_message = "An operator who redrives records whose payload is in S3 gets the same read, and nothing more."
  }
}

run "new_records_notify_the_failure_queue" {
  command = plan

  assert {
    condition = jsonencode([for q in aws_s3_bucket_notification.failure_records[0].queue : {
      id = q.id, queue_arn = q.queue_arn, events = sort(q.events), prefix = q.filter_prefix
      }]) == jsonencode([{
      id = "serverless-retry-heal-orders", queue_arn = "arn:aws:sqs:us-east-1:123456789012:heal-failures", events = ["s3:ObjectCreated:*"], prefix = "aws/lambda/async/orders-fn/"
    }])
    error_message = "One notification per S3 source, on its function's prefix, to the failure queue."
  }

  assert {
    condition = jsonencode([for s in data.aws_iam_policy_document.failure_queue_from_s3[0].statement : {
      sid        = s.sid
      actions    = sort(s.actions)
      resources  = sort(s.resources)
      principals = [for p in s.principals : "${p.type}:${join(",", sort(p.identifiers))}"]
      conditions = sort([for c in s.condition : "${c.test} ${c.variable} ${join(",", c.values)}"])
      }]) == jsonencode([{
      sid        = "S3SendsFailureRecordEvents"
      actions    = ["sqs:SendMessage"]
      resources  = ["arn:aws:sqs:us-east-1:123456789012:heal-failures"]
      principals = ["Service:s3.amazonaws.com"]
      conditions = ["ArnEquals aws:SourceArn arn:aws:s3:::heal-failure-records-123456789012-us-east-1", "StringEquals aws:SourceAccount 123456789012"]
    }])
    error_message = "Only this bucket of this account may send to the failure queue as S3."
  }
}

run "without_an_s3_source_nothing_is_made" {
  command = plan

  variables {
    sources = {
      orders = { function_name = "orders-fn", function_role_name = "orders-fn-role" }
    }
  }

  assert {
    condition = alltrue([
      length(module.failure_records) == 0,
      length(aws_s3_bucket_notification.failure_records) == 0,
      length(data.aws_iam_policy_document.failure_queue_from_s3) == 0,
      length(data.aws_iam_policy_document.source_s3) == 0,
      length(data.aws_iam_policy_document.read_records.statement) == 0,
      output.failure_records_bucket == null,
      output.failure_records_read_policy_json == null,
    ])
    error_message = "The default keeps today's behaviour: no bucket, no S3 permission."
  }
}

run "your_own_bucket" {
  command = plan

  variables {
    failure_records = { bucket = "my-records" }
  }

  assert {
    condition     = length(module.failure_records) == 0
    error_message = "With your bucket the module makes none."
  }

  assert {
    condition     = aws_s3_bucket_notification.failure_records[0].bucket == "my-records" && aws_lambda_function_event_invoke_config.source["orders"].destination_config[0].on_failure[0].destination == "arn:aws:s3:::my-records"
    error_message = "Your bucket gets the records and the notification."
  }

  assert {
    condition     = one([for s in data.aws_iam_policy_document.read_records.statement : s.resources]) == toset(["arn:aws:s3:::my-records/aws/lambda/async/orders-fn/*"])
    error_message = "The reads are scoped to your bucket's prefix of the function."
  }
}

run "your_own_bucket_without_managed_notifications" {
  command = plan

  variables {
    failure_records = { bucket = "my-records", manage_notifications = false }
  }

  assert {
    condition     = length(aws_s3_bucket_notification.failure_records) == 0 && length(data.aws_iam_policy_document.failure_queue_from_s3) == 1
    error_message = "manage_notifications = false leaves the notification to you (the queue still lets the bucket in)."
  }
}

run "versioned_and_encrypted_with_your_key" {
  command = plan

  variables {
    failure_records = {
      versioning  = true
      kms_key_arn = "arn:aws:kms:us-east-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab"
    }
  }

  assert {
    condition     = module.failure_records[0].resources.versioning[0].versioning_configuration[0].status == "Enabled" && one(one([for r in module.failure_records[0].resources.lifecycle.rule : r if r.id == "expire-failure-records"]).noncurrent_version_expiration).noncurrent_days == 7
    error_message = "Versioning on, noncurrent versions expire after 7 days."
  }

  assert {
    condition     = one([for r in module.failure_records[0].resources.encryption.rule : r.bucket_key_enabled && one(r.apply_server_side_encryption_by_default).sse_algorithm == "aws:kms"])
    error_message = "SSE-KMS with a Bucket Key."
  }

  assert {
    condition = alltrue([
      contains([for s in data.aws_iam_policy_document.source_s3["orders"].statement : "${s.sid} | ${join(",", s.actions)} | ${join(",", s.resources)}"], "EncryptFailureRecords | kms:GenerateDataKey | arn:aws:kms:us-east-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab"),
      contains([for s in data.aws_iam_policy_document.read_records.statement : "${s.sid} | ${join(",", s.actions)} | ${join(",", s.resources)}"], "DecryptFailureRecords | kms:Decrypt | arn:aws:kms:us-east-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab"),
    ])
    error_message = "The writer may encrypt, the readers decrypt, with that key only."
  }
}

run "unknown_on_failure" {
  command = plan

  variables {
    sources = { orders = { function_name = "orders-fn", function_role_name = "orders-fn-role", on_failure = "sqs" } }
  }

  expect_failures = [var.sources]
}

run "bucket_given_as_an_arn" {
  command = plan

  variables {
    failure_records = { bucket = "arn:aws:s3:::my-records" }
  }

  expect_failures = [var.failure_records]
}

run "records_expire_before_their_exhausted_pointer" {
  command = plan

  variables {
    failure_records = { expiration_days = 7 }
  }

  expect_failures = [aws_sqs_queue.exhausted]
}

# How the enrichment and redrive functions are deployed: code from S3 and layers, the architecture,
# a VPC, roles of the user's own and extra statements.
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
