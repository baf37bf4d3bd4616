# Plan-level tests of the consumer module on the mock provider (shared defaults in tests/terraform/mocks).
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

run "function_wiring" {
  command = plan

  assert {
    condition     = module.function.function.handler == "serverless_retry.handlers.consumer.handler"
    error_message = "The handler must be serverless_retry.handlers.consumer.handler."
  }

  assert {
    condition     = module.function.function.source_code_hash == filebase64sha256("../../tests/terraform/fixtures/empty.zip")
    error_message = "source_code_hash must come from the package file, so a new zip redeploys."
  }

  assert {
    condition = module.function.function.environment[0].variables == tomap({
      SERVERLESS_RETRY_PROCESSOR                   = "orders.process:handle"
      SERVERLESS_RETRY_POLICY                      = "{\"max_attempts\":5}"
      SERVERLESS_RETRY_QUEUE_URL                   = "https://sqs.us-east-1.amazonaws.com/123456789012/orders"
      SERVERLESS_RETRY_QUEUE_ARN                   = "arn:aws:sqs:us-east-1:123456789012:orders"
      SERVERLESS_RETRY_EXHAUSTED_QUEUE_URL         = "https://sqs.us-east-1.amazonaws.com/123456789012/orders-exhausted"
      SERVERLESS_RETRY_DLQ_ARN                     = "arn:aws:sqs:us-east-1:123456789012:orders-dlq"
      SERVERLESS_RETRY_SCHEDULE_GROUP              = "orders-retries"
      SERVERLESS_RETRY_SCHEDULER_ROLE_ARN          = "arn:aws:iam::123456789012:role/orders-retries-scheduler"
      SERVERLESS_RETRY_MAX_MESSAGE_BYTES           = "260096"
      SERVERLESS_RETRY_EXHAUSTED_MAX_MESSAGE_BYTES = "260096"
      SERVERLESS_RETRY_QUEUE_RETENTION_SECONDS     = "345600"
      SERVERLESS_RETRY_VISIBILITY_TIMEOUT_SECONDS  = "180"
      SERVERLESS_RETRY_CLAIMS_TABLE                = "orders-claims"
      POWERTOOLS_SERVICE_NAME                      = "orders"
      POWERTOOLS_METRICS_NAMESPACE                 = "ServerlessRetry"
      POWERTOOLS_LOG_LEVEL                         = "INFO"
    })
    error_message = "Environment wiring differs from the shared contract: ${jsonencode(module.function.function.environment[0].variables)}"
  }

  assert {
    condition     = module.function.function.runtime == "python3.12" && module.function.function.architectures[0] == "arm64" && module.function.function.timeout == 30
    error_message = "Default runtime, architecture or timeout changed."
  }

  assert {
    condition     = module.function.function.tracing_config[0].mode == "PassThrough"
    error_message = "Tracing is off by default."
  }

  assert {
    condition     = module.function.log_group.name == "/aws/lambda/orders" && module.function.log_group.retention_in_days == 30
    error_message = "The log group must be the function's own, with the retention input."
  }

  assert {
    condition = alltrue([
      module.function.function.tags == tomap({ team = "orders" }),
      module.function.iam.roles[0].tags == tomap({ team = "orders" }),
      module.function.log_group.tags == tomap({ team = "orders" }),
      aws_lambda_event_source_mapping.this.tags == tomap({ team = "orders" }),
    ])
    error_message = "Every taggable resource carries the tags."
  }
}

run "own_handler_override" {
  command = plan

  variables {
    handler = "orders.lambda_handler.handler"
  }

  assert {
    condition     = module.function.function.handler == "orders.lambda_handler.handler"
    error_message = "A handler override must reach the function."
  }

  assert {
    condition     = module.function.function.environment[0].variables["SERVERLESS_RETRY_PROCESSOR"] == "orders.process:handle"
    error_message = "The SERVERLESS_RETRY_* environment must be wired with an own handler too."
  }
}

run "bad_handler_is_refused" {
  command = plan

  variables {
    handler = "orders:handle"
  }

  expect_failures = [var.handler]
}

run "event_source_mapping" {
  command = plan

  assert {
    condition     = aws_lambda_event_source_mapping.this.function_response_types == toset(["ReportBatchItemFailures"])
    error_message = "The mapping must use ReportBatchItemFailures so only failed records come back."
  }

  assert {
    condition     = aws_lambda_event_source_mapping.this.event_source_arn == var.queue.arn && aws_lambda_event_source_mapping.this.function_name == "arn:aws:lambda:us-east-1:123456789012:function:orders"
    error_message = "The mapping must connect the source queue to this function."
  }

  assert {
    condition     = aws_lambda_event_source_mapping.this.batch_size == 10 && aws_lambda_event_source_mapping.this.maximum_batching_window_in_seconds == null && length(aws_lambda_event_source_mapping.this.scaling_config) == 0
    error_message = "Defaults: batch 10, no batching window, no concurrency cap."
  }
}

run "event_source_mapping_scaling" {
  command = plan

  variables {
    batch_size                      = 100
    maximum_batching_window_seconds = 5
    maximum_concurrency             = 20
  }

  assert {
    condition     = aws_lambda_event_source_mapping.this.batch_size == 100 && aws_lambda_event_source_mapping.this.maximum_batching_window_in_seconds == 5
    error_message = "batch_size and the batching window pass through."
  }

  assert {
    condition     = aws_lambda_event_source_mapping.this.scaling_config[0].maximum_concurrency == 20
    error_message = "maximum_concurrency becomes the mapping's scaling_config."
  }
}

run "role_is_exactly_design_section_6" {
  command = plan

  assert {
    # Every statement of every concern, as "sid | actions | resources"; nothing more may appear.
    condition = toset(flatten([
      for d in [
        data.aws_iam_policy_document.consume,
        data.aws_iam_policy_document.in_place,
        data.aws_iam_policy_document.send,
        data.aws_iam_policy_document.schedule,
        data.aws_iam_policy_document.pass_role,
        module.function.iam.documents.logs,
        data.aws_iam_policy_document.kms,
        module.function.iam.documents.xray,
        data.aws_iam_policy_document.claims,
        data.aws_iam_policy_document.claims_kms,
        data.aws_iam_policy_document.idempotency,
        ] : [
        for s in d.statement : "${s.sid} | ${join(",", sort(s.actions))} | ${join(",", sort(s.resources))}"
      ]
      ])) == toset([
      "ConsumeSourceQueue | sqs:DeleteMessage,sqs:GetQueueAttributes,sqs:ReceiveMessage | arn:aws:sqs:us-east-1:123456789012:orders",
      "SendRetriesAndExhausted | sqs:SendMessage | arn:aws:sqs:us-east-1:123456789012:orders,arn:aws:sqs:us-east-1:123456789012:orders-exhausted",
      "CreateRetrySchedules | scheduler:CreateSchedule,scheduler:GetSchedule | arn:aws:scheduler:us-east-1:123456789012:schedule/orders-retries/*",
      "PassSchedulerRole | iam:PassRole | arn:aws:iam::123456789012:role/orders-retries-scheduler",
      "WriteOwnLogs | logs:CreateLogStream,logs:PutLogEvents | arn:aws:logs:us-east-1:123456789012:log-group:/aws/lambda/orders:log-stream:*",
      "RetryClaims | dynamodb:UpdateItem | arn:aws:dynamodb:us-east-1:123456789012:table/orders-claims",
    ])
    error_message = "The consumer role's statements differ from the least-privilege set its README lists."
  }

  assert {
    condition = alltrue(flatten([
      for d in [data.aws_iam_policy_document.consume, data.aws_iam_policy_document.send, data.aws_iam_policy_document.schedule, data.aws_iam_policy_document.pass_role, module.function.iam.documents.logs] :
      [for s in d.statement : coalesce(s.effect, "Allow") == "Allow" && !contains(s.actions, "*") && alltrue([for a in s.actions : !endswith(a, ":*")]) && !contains(s.resources, "*")]
    ]))
    error_message = "No wildcard actions or resources."
  }

  assert {
    condition     = jsonencode(module.function.iam.documents.trust.statement[0].principals) == jsonencode([{ identifiers = ["lambda.amazonaws.com"], type = "Service" }])
    error_message = "Only Lambda may assume the consumer role."
  }

  assert {
    # The code never deletes a schedule: each deletes itself after it ran (ActionAfterCompletion).
    condition = !anytrue(flatten([
      for d in [data.aws_iam_policy_document.schedule, data.aws_iam_policy_document.consume, data.aws_iam_policy_document.send] :
      [for s in d.statement : contains(s.actions, "scheduler:DeleteSchedule")]
    ]))
    error_message = "The consumer role must not hold scheduler:DeleteSchedule."
  }
}

run "pass_role_only_the_scheduler_role_to_the_scheduler" {
  command = plan

  assert {
    condition     = length(data.aws_iam_policy_document.pass_role.statement) == 1 && data.aws_iam_policy_document.pass_role.statement[0].resources == toset([var.scheduler.role_arn])
    error_message = "iam:PassRole must name exactly the scheduler role."
  }

  assert {
    condition = jsonencode(data.aws_iam_policy_document.pass_role.statement[0].condition) == jsonencode([{
      test     = "StringEquals"
      values   = ["scheduler.amazonaws.com"]
      variable = "iam:PassedToService"
    }])
    error_message = "iam:PassRole must be limited to iam:PassedToService = scheduler.amazonaws.com."
  }
}

run "without_scheduler_no_scheduler_permissions" {
  command = plan

  variables {
    scheduler         = null
    retry_policy_json = "{\"backoff\": {\"max_seconds\": 900}}"
  }

  assert {
    condition     = length(data.aws_iam_policy_document.schedule.statement) == 0 && length(data.aws_iam_policy_document.pass_role.statement) == 0
    error_message = "Without a scheduler the role may neither create schedules nor pass a role."
  }

  assert {
    condition     = !contains(keys(module.function.function.environment[0].variables), "SERVERLESS_RETRY_SCHEDULE_GROUP") && !contains(keys(module.function.function.environment[0].variables), "SERVERLESS_RETRY_SCHEDULER_ROLE_ARN")
    error_message = "Without a scheduler the function gets no schedule group."
  }
}

run "kms_key_and_tracing_add_their_statements" {
  command = plan

  variables {
    tracing = true
    queue = {
      arn                        = "arn:aws:sqs:us-east-1:123456789012:orders"
      url                        = "https://sqs.us-east-1.amazonaws.com/123456789012/orders"
      visibility_timeout_seconds = 180
      dlq_arn                    = "arn:aws:sqs:us-east-1:123456789012:orders-dlq"
      exhausted_queue_url        = "https://sqs.us-east-1.amazonaws.com/123456789012/orders-exhausted"
      exhausted_queue_arn        = "arn:aws:sqs:us-east-1:123456789012:orders-exhausted"
      max_message_size           = 65536
      kms_key_arn                = "arn:aws:kms:us-east-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab"
    }
  }

  assert {
    condition     = data.aws_iam_policy_document.kms.statement[0].actions == toset(["kms:Decrypt", "kms:GenerateDataKey"]) && data.aws_iam_policy_document.kms.statement[0].resources == toset(["arn:aws:kms:us-east-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab"])
    error_message = "A queue key adds kms:Decrypt and kms:GenerateDataKey on exactly that key."
  }

  assert {
    condition     = module.function.iam.documents.xray.statement[0].actions == toset(["xray:PutTelemetryRecords", "xray:PutTraceSegments"]) && module.function.function.tracing_config[0].mode == "Active"
    error_message = "Tracing turns on X-Ray and only its two write actions."
  }

  assert {
    condition     = module.function.function.environment[0].variables["SERVERLESS_RETRY_MAX_MESSAGE_BYTES"] == "65536"
    error_message = "The queue's maximum message size reaches the envelope size guard."
  }
}

run "idempotency_table" {
  command = plan

  variables {
    idempotency_table_arn = "arn:aws:dynamodb:us-east-1:123456789012:table/orders-idempotency"
  }

  assert {
    condition     = module.function.function.environment[0].variables["SERVERLESS_RETRY_IDEMPOTENCY_TABLE"] == "orders-idempotency"
    error_message = "The handler gets the table's name."
  }

  assert {
    condition     = data.aws_iam_policy_document.idempotency.statement[0].actions == toset(["dynamodb:DeleteItem", "dynamodb:PutItem", "dynamodb:UpdateItem"]) && data.aws_iam_policy_document.idempotency.statement[0].resources == toset([var.idempotency_table_arn])
    error_message = "Powertools' item writes (no GetItem: a failed conditional put returns the record) on exactly the idempotency table."
  }

  assert {
    condition     = data.aws_iam_policy_document.claims.statement[0].resources == toset(["arn:aws:dynamodb:us-east-1:123456789012:table/orders-claims"]) && module.function.function.environment[0].variables["SERVERLESS_RETRY_CLAIMS_TABLE"] == "orders-claims"
    error_message = "The idempotency table is Powertools' only: the claims stay in their own table."
  }
}

run "archive_for_claim_check_payloads" {
  command = plan

  variables {
    archive = {
      bucket_arn  = "arn:aws:s3:::orders-archive"
      kms_key_arn = "arn:aws:kms:us-east-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab"
    }
  }

  assert {
    condition     = module.function.function.environment[0].variables["SERVERLESS_RETRY_ARCHIVE_BUCKET"] == "orders-archive" && module.function.function.environment[0].variables["SERVERLESS_RETRY_ARCHIVE_PREFIX"] == "serverless-retry/"
    error_message = "The handler gets the archive's bucket name and prefix."
  }

  assert {
    condition     = data.aws_iam_policy_document.payloads.statement[0].actions == toset(["s3:PutObject"]) && data.aws_iam_policy_document.payloads.statement[0].resources == toset(["arn:aws:s3:::orders-archive/serverless-retry/payloads/*"])
    error_message = "PutObject only, on the archive's payloads/ prefix only."
  }

  assert {
    condition     = data.aws_iam_policy_document.payloads.statement[1].actions == toset(["kms:GenerateDataKey"]) && data.aws_iam_policy_document.payloads.statement[1].resources == toset([var.archive.kms_key_arn])
    error_message = "The bucket's key for writing only, through S3."
  }
}

run "no_archive_no_payload_grant" {
  command = plan

  assert {
    condition     = length(data.aws_iam_policy_document.payloads.statement) == 0 && !contains(keys(module.function.function.environment[0].variables), "SERVERLESS_RETRY_ARCHIVE_BUCKET")
    error_message = "Without an archive the consumer gets no S3 permission and no archive setting."
  }
}

run "archive_bucket_must_be_an_s3_arn" {
  command = plan

  variables {
    archive = { bucket_arn = "orders-archive" }
  }

  expect_failures = [var.archive]
}

run "claims_table_created_by_default" {
  command = plan

  assert {
    condition     = length(aws_dynamodb_table.claims) == 1 && aws_dynamodb_table.claims[0].name == "orders-claims" && aws_dynamodb_table.claims[0].billing_mode == "PAY_PER_REQUEST"
    error_message = "A consumer with a processor gets its claims table, on demand, by default."
  }

  assert {
    condition     = aws_dynamodb_table.claims[0].hash_key == "id" && aws_dynamodb_table.claims[0].range_key == null && jsonencode(aws_dynamodb_table.claims[0].attribute) == jsonencode([{ name = "id", type = "S" }])
    error_message = "The claims table is keyed on id (a string) alone."
  }

  assert {
    condition     = aws_dynamodb_table.claims[0].ttl[0].enabled && aws_dynamodb_table.claims[0].ttl[0].attribute_name == "expiration"
    error_message = "Claims expire by TTL on expiration."
  }

  assert {
    condition     = aws_dynamodb_table.claims[0].server_side_encryption[0].enabled
    error_message = "The claims table is encrypted with DynamoDB's KMS encryption (the AWS managed key when no key is given)."
  }

  assert {
    condition     = aws_dynamodb_table.claims[0].tags == tomap({ team = "orders" })
    error_message = "The claims table is tagged."
  }

  assert {
    condition     = module.function.function.environment[0].variables["SERVERLESS_RETRY_CLAIMS_TABLE"] == "orders-claims" && module.function.function.environment[0].variables["SERVERLESS_RETRY_VISIBILITY_TIMEOUT_SECONDS"] == "180"
    error_message = "The function gets the claims table's name and the visibility timeout (the lease of a claim)."
  }

  assert {
    condition     = length(data.aws_iam_policy_document.claims.statement) == 1 && data.aws_iam_policy_document.claims.statement[0].actions == toset(["dynamodb:UpdateItem"]) && data.aws_iam_policy_document.claims.statement[0].resources == toset(["arn:aws:dynamodb:us-east-1:123456789012:table/orders-claims"])
    error_message = "Claims: one conditional UpdateItem each, on exactly the claims table."
  }

  assert {
    condition     = length(data.aws_iam_policy_document.claims_kms.statement) == 0 && length(data.aws_iam_policy_document.idempotency.statement) == 0
    error_message = "Without a key or an idempotency table, no KMS or other DynamoDB permission."
  }

  assert {
    condition     = output.claims_table_name == "orders-claims" && output.claims_table_arn == "arn:aws:dynamodb:us-east-1:123456789012:table/orders-claims"
    error_message = "The outputs name the claims table."
  }

  assert {
    # Both wired variables are in the plan-time 4 KB check (the environment is what it sums).
    condition     = output.environment_bytes == sum([for k, v in output.environment : length(k) + length(v)]) && contains(keys(output.environment), "SERVERLESS_RETRY_VISIBILITY_TIMEOUT_SECONDS")
    error_message = "The environment size must count every wired variable, the claims table and the visibility timeout included."
  }
}

run "claims_table_with_a_customer_managed_key" {
  command = plan

  variables {
    claims = { kms_key_arn = "arn:aws:kms:us-east-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab" }
  }

  assert {
    condition     = aws_dynamodb_table.claims[0].server_side_encryption[0].enabled && aws_dynamodb_table.claims[0].server_side_encryption[0].kms_key_arn == var.claims.kms_key_arn
    error_message = "claims.kms_key_arn encrypts the table."
  }

  assert {
    condition     = data.aws_iam_policy_document.claims_kms.statement[0].actions == toset(["kms:Decrypt", "kms:Encrypt", "kms:GenerateDataKey"]) && data.aws_iam_policy_document.claims_kms.statement[0].resources == toset([var.claims.kms_key_arn])
    error_message = "The role may use exactly the claims key."
  }

  assert {
    condition = jsonencode(data.aws_iam_policy_document.claims_kms.statement[0].condition) == jsonencode([{
      test     = "StringEquals"
      values   = ["dynamodb.us-east-1.amazonaws.com"]
      variable = "kms:ViaService"
    }])
    error_message = "The claims key is usable through DynamoDB only."
  }
}

run "claims_opt_out_creates_nothing" {
  command = plan

  variables {
    claims = { enabled = false }
  }

  assert {
    condition     = length(aws_dynamodb_table.claims) == 0 && !contains(keys(module.function.function.environment[0].variables), "SERVERLESS_RETRY_CLAIMS_TABLE")
    error_message = "claims.enabled = false: no table and no SERVERLESS_RETRY_CLAIMS_TABLE."
  }

  assert {
    condition     = length(data.aws_iam_policy_document.claims.statement) == 0 && length(data.aws_iam_policy_document.claims_kms.statement) == 0 && length(data.aws_iam_policy_document.idempotency.statement) == 0
    error_message = "Without claims or an idempotency table the role gets no DynamoDB permission."
  }

  assert {
    condition     = output.claims_table_name == null && output.claims_table_arn == null
    error_message = "No claims table to name."
  }

  assert {
    # (No run.<name> reference: it would keep the test splitter from running this file in parts.)
    condition     = output.environment_bytes == sum([for k, v in output.environment : length(k) + length(v)])
    error_message = "Without claims the size check counts what is wired and nothing more."
  }
}

run "claims_bring_your_own_table" {
  command = plan

  variables {
    claims = { table_arn = "arn:aws:dynamodb:us-east-1:123456789012:table/shared-claims" }
  }

  assert {
    condition     = length(aws_dynamodb_table.claims) == 0 && module.function.function.environment[0].variables["SERVERLESS_RETRY_CLAIMS_TABLE"] == "shared-claims"
    error_message = "A table of one's own: nothing created, the function gets its name."
  }

  assert {
    condition     = data.aws_iam_policy_document.claims.statement[0].resources == toset(["arn:aws:dynamodb:us-east-1:123456789012:table/shared-claims"])
    error_message = "The claims permissions name exactly the table given."
  }

  assert {
    condition     = output.claims_table_name == "shared-claims" && output.claims_table_arn == var.claims.table_arn
    error_message = "The outputs name the table given."
  }
}

run "claims_table_arn_must_be_an_arn" {
  command = plan

  variables {
    claims = { table_arn = "shared-claims" }
  }

  expect_failures = [var.claims]
}

run "claims_key_must_be_a_key_arn" {
  command = plan

  variables {
    claims = { kms_key_arn = "alias/claims" }
  }

  expect_failures = [var.claims]
}

run "visibility_transport_hides_messages_in_place" {
  command = plan

  variables {
    retry_policy_json = "{\"transport\": \"visibility\"}"
  }

  assert {
    condition     = length(data.aws_iam_policy_document.in_place.statement) == 1 && data.aws_iam_policy_document.in_place.statement[0].actions == toset(["sqs:ChangeMessageVisibility"]) && data.aws_iam_policy_document.in_place.statement[0].resources == toset([var.queue.arn])
    error_message = "Retries in place change the visibility of the source queue's messages, and of no other queue."
  }
}

run "copies_never_change_visibility" {
  command = plan

  assert {
    condition     = length(data.aws_iam_policy_document.in_place.statement) == 0
    error_message = "A standard queue retried by copies (SQS delays, schedules, hops) gets no sqs:ChangeMessageVisibility."
  }
}

run "fifo_queue_limits_the_batch" {
  command = plan

  variables {
    batch_size                      = 10
    maximum_batching_window_seconds = 1
    queue = {
      arn                        = "arn:aws:sqs:us-east-1:123456789012:orders.fifo"
      url                        = "https://sqs.us-east-1.amazonaws.com/123456789012/orders.fifo"
      visibility_timeout_seconds = 180
      dlq_arn                    = "arn:aws:sqs:us-east-1:123456789012:orders-dlq.fifo"
      schedule_dlq_arn           = "arn:aws:sqs:us-east-1:123456789012:orders-schedule-dlq"
      exhausted_queue_url        = "https://sqs.us-east-1.amazonaws.com/123456789012/orders-exhausted.fifo"
      exhausted_queue_arn        = "arn:aws:sqs:us-east-1:123456789012:orders-exhausted.fifo"
    }
  }

  expect_failures = [aws_lambda_event_source_mapping.this]
}

run "visibility_timeout_below_six_times_function_timeout" {
  command = plan

  variables {
    timeout = 30
    queue = {
      arn                        = "arn:aws:sqs:us-east-1:123456789012:orders"
      url                        = "https://sqs.us-east-1.amazonaws.com/123456789012/orders"
      visibility_timeout_seconds = 179
      dlq_arn                    = "arn:aws:sqs:us-east-1:123456789012:orders-dlq"
      exhausted_queue_url        = "https://sqs.us-east-1.amazonaws.com/123456789012/orders-exhausted"
      exhausted_queue_arn        = "arn:aws:sqs:us-east-1:123456789012:orders-exhausted"
    }
  }

  expect_failures = [aws_lambda_event_source_mapping.this]
}

run "large_batch_needs_a_batching_window" {
  command = plan

  variables {
    batch_size = 50
  }

  expect_failures = [aws_lambda_event_source_mapping.this]
}

run "environment_over_4kb" {
  command = plan

  variables {
    environment = { PADDING = join("", [for i in range(1000) : "xxxxx"]) }
  }

  expect_failures = [aws_lambda_event_source_mapping.this]
}

run "environment_may_not_override_the_wiring" {
  command = plan

  variables {
    environment = { SERVERLESS_RETRY_POLICY = "{}" }
  }

  expect_failures = [var.environment]
}

run "processor_must_be_module_colon_function" {
  command = plan

  variables {
    processor = "orders.process.handle"
  }

  expect_failures = [var.processor]
}

run "runtime_from_the_supported_list" {
  command = plan

  variables {
    runtime = "python3.9"
  }

  expect_failures = [var.runtime]
}

run "package_must_exist" {
  command = plan

  variables {
    package = "../../dist/no-such-package.zip"
  }

  expect_failures = [var.package]
}

# --- FIFO sources, the policy's guards, and the plan-time environment size ----------------------

run "fifo_ordered_wiring" {
  command = plan

  variables {
    scheduler = null
    queue = {
      arn                        = "arn:aws:sqs:us-east-1:123456789012:orders.fifo"
      url                        = "https://sqs.us-east-1.amazonaws.com/123456789012/orders.fifo"
      visibility_timeout_seconds = 180
      dlq_arn                    = "arn:aws:sqs:us-east-1:123456789012:orders-dlq.fifo"
      schedule_dlq_arn           = "arn:aws:sqs:us-east-1:123456789012:orders-schedule-dlq"
      exhausted_queue_url        = "https://sqs.us-east-1.amazonaws.com/123456789012/orders-exhausted.fifo"
      exhausted_queue_arn        = "arn:aws:sqs:us-east-1:123456789012:orders-exhausted.fifo"
      fifo                       = true
      max_receive_count          = 11
    }
  }

  assert {
    condition = alltrue([
      module.function.function.environment[0].variables["SERVERLESS_RETRY_FIFO_ORDER"] == "ordered",
      module.function.function.environment[0].variables["SERVERLESS_RETRY_DLQ_ARN"] == "arn:aws:sqs:us-east-1:123456789012:orders-schedule-dlq",
    ])
    error_message = "A FIFO source gets its order mode and the standard schedule DLQ: ${jsonencode(module.function.function.environment[0].variables)}"
  }

  assert {
    condition     = output.transport == "visibility" && !output.needs_scheduler
    error_message = "FIFO ordered retries in place: no Scheduler needed."
  }
}

run "fifo_ordered_needs_the_claims_table" {
  command = plan

  variables {
    scheduler = null
    claims    = { enabled = false }
    queue = {
      arn                        = "arn:aws:sqs:us-east-1:123456789012:orders.fifo"
      url                        = "https://sqs.us-east-1.amazonaws.com/123456789012/orders.fifo"
      visibility_timeout_seconds = 180
      dlq_arn                    = "arn:aws:sqs:us-east-1:123456789012:orders-dlq.fifo"
      schedule_dlq_arn           = "arn:aws:sqs:us-east-1:123456789012:orders-schedule-dlq"
      exhausted_queue_url        = "https://sqs.us-east-1.amazonaws.com/123456789012/orders-exhausted.fifo"
      exhausted_queue_arn        = "arn:aws:sqs:us-east-1:123456789012:orders-exhausted.fifo"
      fifo                       = true
      max_receive_count          = 11
    }
  }

  expect_failures = [aws_lambda_event_source_mapping.this]
}

run "standard_source_gets_no_fifo_order" {
  command = plan

  assert {
    condition     = !contains(keys(module.function.function.environment[0].variables), "SERVERLESS_RETRY_FIFO_ORDER")
    error_message = "SERVERLESS_RETRY_FIFO_ORDER is for FIFO sources only."
  }
}

run "fifo_unordered_needs_the_scheduler" {
  command = plan

  variables {
    fifo_order        = "unordered"
    scheduler         = null
    retry_policy_json = "{\"backoff\": {\"max_seconds\": 60}}"
    queue = {
      arn                        = "arn:aws:sqs:us-east-1:123456789012:orders.fifo"
      url                        = "https://sqs.us-east-1.amazonaws.com/123456789012/orders.fifo"
      visibility_timeout_seconds = 180
      dlq_arn                    = "arn:aws:sqs:us-east-1:123456789012:orders-dlq.fifo"
      schedule_dlq_arn           = "arn:aws:sqs:us-east-1:123456789012:orders-schedule-dlq"
      exhausted_queue_url        = "https://sqs.us-east-1.amazonaws.com/123456789012/orders-exhausted.fifo"
      exhausted_queue_arn        = "arn:aws:sqs:us-east-1:123456789012:orders-exhausted.fifo"
    }
  }

  expect_failures = [aws_lambda_event_source_mapping.this]
}

run "scheduler_required_when_the_policy_can_schedule" {
  command = plan

  variables {
    scheduler = null
  }

  expect_failures = [aws_lambda_event_source_mapping.this]
}

run "schedules_need_a_standard_dead_letter_queue" {
  command = plan

  variables {
    queue = {
      arn                        = "arn:aws:sqs:us-east-1:123456789012:orders.fifo"
      url                        = "https://sqs.us-east-1.amazonaws.com/123456789012/orders.fifo"
      visibility_timeout_seconds = 180
      dlq_arn                    = "arn:aws:sqs:us-east-1:123456789012:orders-dlq.fifo"
      exhausted_queue_url        = "https://sqs.us-east-1.amazonaws.com/123456789012/orders-exhausted.fifo"
      exhausted_queue_arn        = "arn:aws:sqs:us-east-1:123456789012:orders-exhausted.fifo"
    }
  }

  expect_failures = [var.queue]
}

run "fifo_source_needs_a_fifo_dlq" {
  command = plan

  variables {
    queue = {
      arn                        = "arn:aws:sqs:us-east-1:123456789012:orders.fifo"
      url                        = "https://sqs.us-east-1.amazonaws.com/123456789012/orders.fifo"
      visibility_timeout_seconds = 180
      dlq_arn                    = "arn:aws:sqs:us-east-1:123456789012:orders-dlq"
      exhausted_queue_url        = "https://sqs.us-east-1.amazonaws.com/123456789012/orders-exhausted.fifo"
      exhausted_queue_arn        = "arn:aws:sqs:us-east-1:123456789012:orders-exhausted.fifo"
      fifo                       = true
    }
  }

  expect_failures = [var.queue]
}

run "sqs_hops_cannot_work_on_fifo" {
  command = plan

  variables {
    fifo_order        = "unordered"
    retry_policy_json = "{\"transport\": \"sqs-hops\"}"
    queue = {
      arn                        = "arn:aws:sqs:us-east-1:123456789012:orders.fifo"
      url                        = "https://sqs.us-east-1.amazonaws.com/123456789012/orders.fifo"
      visibility_timeout_seconds = 180
      dlq_arn                    = "arn:aws:sqs:us-east-1:123456789012:orders-dlq.fifo"
      schedule_dlq_arn           = "arn:aws:sqs:us-east-1:123456789012:orders-schedule-dlq"
      exhausted_queue_url        = "https://sqs.us-east-1.amazonaws.com/123456789012/orders-exhausted.fifo"
      exhausted_queue_arn        = "arn:aws:sqs:us-east-1:123456789012:orders-exhausted.fifo"
    }
  }

  expect_failures = [aws_lambda_event_source_mapping.this]
}

run "fifo_ordered_refuses_a_transport_that_leaves_the_group" {
  command = plan

  variables {
    retry_policy_json = "{\"transport\": \"scheduler\"}"
    queue = {
      arn                        = "arn:aws:sqs:us-east-1:123456789012:orders.fifo"
      url                        = "https://sqs.us-east-1.amazonaws.com/123456789012/orders.fifo"
      visibility_timeout_seconds = 180
      dlq_arn                    = "arn:aws:sqs:us-east-1:123456789012:orders-dlq.fifo"
      schedule_dlq_arn           = "arn:aws:sqs:us-east-1:123456789012:orders-schedule-dlq"
      exhausted_queue_url        = "https://sqs.us-east-1.amazonaws.com/123456789012/orders-exhausted.fifo"
      exhausted_queue_arn        = "arn:aws:sqs:us-east-1:123456789012:orders-exhausted.fifo"
    }
  }

  expect_failures = [aws_lambda_event_source_mapping.this]
}

run "visibility_waits_must_end_before_the_retention" {
  command = plan

  variables {
    # 19 retries of up to 12 h each: far beyond the default 4-day retention.
    retry_policy_json = "{\"transport\": \"visibility\", \"max_attempts\": 20, \"backoff\": {\"max_seconds\": 43200}}"
  }

  expect_failures = [aws_lambda_event_source_mapping.this]
}

run "visibility_waits_within_the_retention" {
  command = plan

  variables {
    retry_policy_json = "{\"transport\": \"visibility\", \"max_attempts\": 5, \"backoff\": {\"max_seconds\": 3600}}"
    queue = {
      arn                        = "arn:aws:sqs:us-east-1:123456789012:orders"
      url                        = "https://sqs.us-east-1.amazonaws.com/123456789012/orders"
      visibility_timeout_seconds = 180
      dlq_arn                    = "arn:aws:sqs:us-east-1:123456789012:orders-dlq"
      exhausted_queue_url        = "https://sqs.us-east-1.amazonaws.com/123456789012/orders-exhausted"
      exhausted_queue_arn        = "arn:aws:sqs:us-east-1:123456789012:orders-exhausted"
      message_retention_seconds  = 14551
      max_receive_count          = 6
    }
  }

  assert {
    # 4 retries of up to 3600 s (Retry-After honoured) + 5 x 30 s of processing = 14550 s.
    condition     = output.max_total_wait_seconds == 14400 && module.function.function.environment[0].variables["SERVERLESS_RETRY_QUEUE_RETENTION_SECONDS"] == "14551"
    error_message = "The bound and the retention reach the plan and the function."
  }
}

run "visibility_retention_one_second_short" {
  command = plan

  variables {
    retry_policy_json = "{\"transport\": \"visibility\", \"max_attempts\": 5, \"backoff\": {\"max_seconds\": 3600}}"
    queue = {
      arn                        = "arn:aws:sqs:us-east-1:123456789012:orders"
      url                        = "https://sqs.us-east-1.amazonaws.com/123456789012/orders"
      visibility_timeout_seconds = 180
      dlq_arn                    = "arn:aws:sqs:us-east-1:123456789012:orders-dlq"
      exhausted_queue_url        = "https://sqs.us-east-1.amazonaws.com/123456789012/orders-exhausted"
      exhausted_queue_arn        = "arn:aws:sqs:us-east-1:123456789012:orders-exhausted"
      message_retention_seconds  = 14550
      max_receive_count          = 6
    }
  }

  expect_failures = [aws_lambda_event_source_mapping.this]
}

run "fifo_ordered_needs_receives_for_a_held_back_message" {
  command = plan

  variables {
    # max_attempts 5: a message behind a failing one is received 5 times while it waits, then
    # needs 5 of its own: 10 receives are one too few.
    scheduler = null
    queue = {
      arn                        = "arn:aws:sqs:us-east-1:123456789012:orders.fifo"
      url                        = "https://sqs.us-east-1.amazonaws.com/123456789012/orders.fifo"
      visibility_timeout_seconds = 180
      dlq_arn                    = "arn:aws:sqs:us-east-1:123456789012:orders-dlq.fifo"
      schedule_dlq_arn           = "arn:aws:sqs:us-east-1:123456789012:orders-schedule-dlq"
      exhausted_queue_url        = "https://sqs.us-east-1.amazonaws.com/123456789012/orders-exhausted.fifo"
      exhausted_queue_arn        = "arn:aws:sqs:us-east-1:123456789012:orders-exhausted.fifo"
      fifo                       = true
      max_receive_count          = 10
    }
  }

  expect_failures = [aws_lambda_event_source_mapping.this]
}

run "fifo_unordered_needs_no_hold_back_margin" {
  command = plan

  variables {
    # Unordered, a failure leaves its group through the Scheduler: nothing is held back.
    fifo_order = "unordered"
    queue = {
      arn                         = "arn:aws:sqs:us-east-1:123456789012:orders.fifo"
      url                         = "https://sqs.us-east-1.amazonaws.com/123456789012/orders.fifo"
      visibility_timeout_seconds  = 180
      dlq_arn                     = "arn:aws:sqs:us-east-1:123456789012:orders-dlq.fifo"
      schedule_dlq_arn            = "arn:aws:sqs:us-east-1:123456789012:orders-schedule-dlq"
      exhausted_queue_url         = "https://sqs.us-east-1.amazonaws.com/123456789012/orders-exhausted.fifo"
      exhausted_queue_arn         = "arn:aws:sqs:us-east-1:123456789012:orders-exhausted.fifo"
      fifo                        = true
      content_based_deduplication = true
      max_receive_count           = 5
    }
  }

  assert {
    condition     = output.transport == "scheduler"
    error_message = "FIFO unordered retries through the Scheduler and plans with maxReceiveCount 5."
  }
}

run "visibility_needs_more_receives_than_attempts" {
  command = plan

  variables {
    retry_policy_json = "{\"transport\": \"visibility\", \"max_attempts\": 5, \"backoff\": {\"max_seconds\": 60}}"
    queue = {
      arn                        = "arn:aws:sqs:us-east-1:123456789012:orders"
      url                        = "https://sqs.us-east-1.amazonaws.com/123456789012/orders"
      visibility_timeout_seconds = 180
      dlq_arn                    = "arn:aws:sqs:us-east-1:123456789012:orders-dlq"
      exhausted_queue_url        = "https://sqs.us-east-1.amazonaws.com/123456789012/orders-exhausted"
      exhausted_queue_arn        = "arn:aws:sqs:us-east-1:123456789012:orders-exhausted"
      max_receive_count          = 5
    }
  }

  expect_failures = [aws_lambda_event_source_mapping.this]
}

run "delivery_transports_need_no_receive_margin" {
  command = plan

  variables {
    # sqs-delay re-enqueues a fresh copy each time: receives do not add up.
    retry_policy_json = "{\"transport\": \"sqs-delay\", \"max_attempts\": 50}"
    queue = {
      arn                        = "arn:aws:sqs:us-east-1:123456789012:orders"
      url                        = "https://sqs.us-east-1.amazonaws.com/123456789012/orders"
      visibility_timeout_seconds = 180
      dlq_arn                    = "arn:aws:sqs:us-east-1:123456789012:orders-dlq"
      exhausted_queue_url        = "https://sqs.us-east-1.amazonaws.com/123456789012/orders-exhausted"
      exhausted_queue_arn        = "arn:aws:sqs:us-east-1:123456789012:orders-exhausted"
      max_receive_count          = 5
      message_retention_seconds  = 60
    }
  }

  assert {
    condition     = output.transport == "sqs-delay" && output.max_attempts == 50
    error_message = "sqs-delay: no receive or retention guard applies."
  }
}

run "environment_size_is_bounded_from_the_names" {
  command = plan

  variables {
    queue = {
      arn                        = "arn:aws:sqs:us-east-1:123456789012:orders"
      url                        = "https://sqs.us-east-1.amazonaws.com/123456789012/orders"
      visibility_timeout_seconds = 180
      dlq_arn                    = "arn:aws:sqs:us-east-1:123456789012:orders-dlq"
      exhausted_queue_url        = "https://sqs.us-east-1.amazonaws.com/123456789012/orders-exhausted"
      exhausted_queue_arn        = "arn:aws:sqs:us-east-1:123456789012:orders-exhausted"
      name                       = "orders"
      exhausted_queue_name       = "orders-exhausted"
      schedule_dlq_name          = "orders-dlq"
    }
  }

  assert {
    # The URLs are bounded by the longer <region>.queue.<suffix> form (2 more characters than
    # sqs.<region>.<suffix>) and the ARNs are exact: 2 x 2 bytes above the exact size.
    condition     = output.environment_bytes == sum([for k, v in module.function.function.environment[0].variables : length(k) + length(v)]) + 4
    error_message = "Bound ${output.environment_bytes} vs exact ${sum([for k, v in module.function.function.environment[0].variables : length(k) + length(v)])}"
  }
}

run "environment_size_counts_utf8_bytes" {
  command = plan

  variables {
    # 2000 two-byte characters: with the wiring under 4096 characters, but over 4096 bytes.
    environment = { NOTE = join("", [for i in range(1000) : "éé"]) }
  }

  expect_failures = [aws_lambda_event_source_mapping.this]
}

run "scheduler_targets_need_content_based_deduplication" {
  command = plan

  variables {
    fifo_order        = "unordered"
    retry_policy_json = "{\"backoff\": {\"max_seconds\": 60}}"
    queue = {
      arn                         = "arn:aws:sqs:us-east-1:123456789012:orders.fifo"
      url                         = "https://sqs.us-east-1.amazonaws.com/123456789012/orders.fifo"
      visibility_timeout_seconds  = 180
      dlq_arn                     = "arn:aws:sqs:us-east-1:123456789012:orders-dlq.fifo"
      schedule_dlq_arn            = "arn:aws:sqs:us-east-1:123456789012:orders-schedule-dlq"
      exhausted_queue_url         = "https://sqs.us-east-1.amazonaws.com/123456789012/orders-exhausted.fifo"
      exhausted_queue_arn         = "arn:aws:sqs:us-east-1:123456789012:orders-exhausted.fifo"
      content_based_deduplication = false
    }
  }

  expect_failures = [aws_lambda_event_source_mapping.this]
}

run "environment_size_exact_with_long_urls" {
  command = plan

  variables {
    # A custom endpoint's URLs can be longer than the AWS form the names bound: the exact check holds.
    environment = { PADDING = join("", [for i in range(650) : "xxxxx"]) } # bound 4034, exact 4126 bytes
    queue = {
      arn                        = "arn:aws:sqs:us-east-1:123456789012:orders"
      url                        = "http://sqs.us-east-1.a-very-long-emulator-hostname-that-no-aws-url-has.example:4566/123456789012/orders"
      visibility_timeout_seconds = 180
      dlq_arn                    = "arn:aws:sqs:us-east-1:123456789012:orders-dlq"
      exhausted_queue_url        = "http://sqs.us-east-1.a-very-long-emulator-hostname-that-no-aws-url-has.example:4566/123456789012/orders-exhausted"
      exhausted_queue_arn        = "arn:aws:sqs:us-east-1:123456789012:orders-exhausted"
      name                       = "orders"
      exhausted_queue_name       = "orders-exhausted"
      schedule_dlq_name          = "orders-dlq"
    }
  }

  expect_failures = [aws_lambda_event_source_mapping.this]
}

# --- A plain handler of your own (processor = null): native SQS retry ---------------------------

run "plain_handler_wires_nothing_of_serverless_retry" {
  command = plan

  variables {
    processor             = null
    retry_policy_json     = null
    handler               = "payments.app.handler"
    scheduler             = null
    idempotency_table_arn = "arn:aws:dynamodb:us-east-1:123456789012:table/orders-idempotency"
    environment           = { IDEMPOTENCY_TABLE = "orders-idempotency" }
    queue = {
      arn                        = "arn:aws:sqs:us-east-1:123456789012:orders"
      url                        = "https://sqs.us-east-1.amazonaws.com/123456789012/orders"
      visibility_timeout_seconds = 180
      dlq_arn                    = "arn:aws:sqs:us-east-1:123456789012:orders-dlq"
      max_receive_count          = 5
      kms_key_arn                = "arn:aws:kms:us-east-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab"
    }
  }

  assert {
    condition     = module.function.function.handler == "payments.app.handler"
    error_message = "The plain handler must reach the function."
  }

  assert {
    condition     = length([for k in keys(module.function.function.environment[0].variables) : k if startswith(k, "SERVERLESS_RETRY_")]) == 0
    error_message = "A plain handler gets no SERVERLESS_RETRY_* variable."
  }

  assert {
    condition     = module.function.function.environment[0].variables["IDEMPOTENCY_TABLE"] == "orders-idempotency" && module.function.function.environment[0].variables["POWERTOOLS_SERVICE_NAME"] == "orders"
    error_message = "The user's environment and the Powertools settings reach a plain handler."
  }

  assert {
    condition     = length(data.aws_iam_policy_document.send.statement) == 0 && length(data.aws_iam_policy_document.schedule.statement) == 0 && length(data.aws_iam_policy_document.pass_role.statement) == 0
    error_message = "A plain handler may not send, schedule or pass a role: SQS redelivers and dead-letters."
  }

  assert {
    condition     = data.aws_iam_policy_document.kms.statement[0].actions == toset(["kms:Decrypt"])
    error_message = "A plain handler only reads the encrypted queue: kms:Decrypt, no GenerateDataKey."
  }

  assert {
    condition     = data.aws_iam_policy_document.idempotency.statement[0].actions == toset(["dynamodb:DeleteItem", "dynamodb:PutItem", "dynamodb:UpdateItem"]) && data.aws_iam_policy_document.idempotency.statement[0].resources == toset([var.idempotency_table_arn])
    error_message = "Powertools idempotency's item writes on exactly the table are granted to a plain handler too."
  }

  assert {
    condition     = length(data.aws_iam_policy_document.claims.statement) == 0 && length(aws_dynamodb_table.claims) == 0 && output.claims_table_name == null
    error_message = "A plain handler runs no serverless_retry claims: no claims table, no claims permission."
  }

  assert {
    condition     = aws_lambda_event_source_mapping.this.function_response_types == toset(["ReportBatchItemFailures"])
    error_message = "Partial batch responses stay on: a plain handler reports its failed records."
  }

  assert {
    condition     = output.retry_policy_json == null && output.transport == null && output.max_attempts == null && !output.needs_scheduler
    error_message = "No policy outputs for a plain handler."
  }
}

run "plain_handler_must_be_named" {
  command = plan

  variables {
    processor         = null
    retry_policy_json = null
    scheduler         = null
  }

  expect_failures = [aws_lambda_event_source_mapping.this]
}

run "plain_handler_takes_no_retry_policy" {
  command = plan

  variables {
    processor = null
    handler   = "payments.app.handler"
    scheduler = null
  }

  expect_failures = [aws_lambda_event_source_mapping.this]
}

run "processor_needs_a_retry_policy" {
  command = plan

  variables {
    retry_policy_json = null
  }

  expect_failures = [aws_lambda_event_source_mapping.this]
}

run "native_retry_must_reach_the_dlq_within_retention" {
  command = plan

  variables {
    processor         = null
    retry_policy_json = null
    handler           = "payments.app.handler"
    scheduler         = null
    queue = {
      arn                        = "arn:aws:sqs:us-east-1:123456789012:orders"
      url                        = "https://sqs.us-east-1.amazonaws.com/123456789012/orders"
      visibility_timeout_seconds = 43200
      dlq_arn                    = "arn:aws:sqs:us-east-1:123456789012:orders-dlq"
      max_receive_count          = 10
      message_retention_seconds  = 345600
    }
  }

  expect_failures = [aws_lambda_event_source_mapping.this]
}

run "maximum_concurrency_above_reserved_concurrency" {
  command = plan

  variables {
    reserved_concurrency = 5
    maximum_concurrency  = 10
  }

  expect_failures = [aws_lambda_event_source_mapping.this]
}

run "reserved_concurrency_within_maximum_concurrency_plans_clean" {
  command = plan

  variables {
    reserved_concurrency = 10
    maximum_concurrency  = 10
  }

  assert {
    condition     = module.function.function.reserved_concurrent_executions == 10 && aws_lambda_event_source_mapping.this.scaling_config[0].maximum_concurrency == 10
    error_message = "reserved and maximum concurrency pass through when the pollers stay within the reserve."
  }
}

run "reserved_concurrency_without_maximum_concurrency_warns" {
  command = plan

  variables {
    reserved_concurrency = 5
  }

  expect_failures = [check.sqs_pollers_within_reserved_concurrency]
}

run "reserved_concurrency_zero_warns" {
  command = plan

  variables {
    reserved_concurrency = 0
    maximum_concurrency  = 2
  }

  expect_failures = [check.sqs_pollers_within_reserved_concurrency]
}

# --- how the consumer is deployed: the code (local zip, S3 object, layers), the architecture, a VPC,
# a role of the user's own and extra statements -------------------------------------------------------

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

# Plan-level tests of the consumer's recursive loop detection setting (Lambda developer guide, "Use Lambda
# recursive loop detection to prevent infinite loops"), on the mock provider.

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
