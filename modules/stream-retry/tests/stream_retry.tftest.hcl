# Plan-level tests of the stream consumer on the mock provider (shared defaults in tests/terraform/mocks).
# The IAM statements are asserted on the documents' statement blocks (stream_permissions): the mock
# provider renders no policy JSON (tests/terraform/iam/plan.py explains why).
mock_provider "aws" {
  source = "../../tests/terraform/mocks"
}

override_resource {
  target          = module.failures[0].aws_sqs_queue.source
  override_during = plan
  values = {
    arn = "arn:aws:sqs:us-east-1:123456789012:orders-stream-failures"
    url = "https://sqs.us-east-1.amazonaws.com/123456789012/orders-stream-failures"
  }
}

variables {
  name      = "orders"
  package   = "../../tests/terraform/fixtures/empty.zip"
  processor = "orders.process:handle"
  tags      = { team = "orders" }
  stream = {
    arn = "arn:aws:kinesis:us-east-1:123456789012:stream/orders"
  }
}

run "kinesis_mapping" {
  command = plan

  assert {
    condition = alltrue([
      aws_lambda_event_source_mapping.stream.event_source_arn == "arn:aws:kinesis:us-east-1:123456789012:stream/orders",
      aws_lambda_event_source_mapping.stream.function_name == "arn:aws:lambda:us-east-1:123456789012:function:mock-function",
      aws_lambda_event_source_mapping.stream.starting_position == "LATEST",
      aws_lambda_event_source_mapping.stream.starting_position_timestamp == null,
      aws_lambda_event_source_mapping.stream.batch_size == 100,
      aws_lambda_event_source_mapping.stream.maximum_batching_window_in_seconds == 0,
      aws_lambda_event_source_mapping.stream.parallelization_factor == 1,
      aws_lambda_event_source_mapping.stream.maximum_retry_attempts == 2,
      aws_lambda_event_source_mapping.stream.maximum_record_age_in_seconds == 3600,
      aws_lambda_event_source_mapping.stream.bisect_batch_on_function_error == true,
      aws_lambda_event_source_mapping.stream.tags == tomap({ team = "orders" }),
    ])
    error_message = "The Kinesis mapping's defaults: LATEST, 100 records, no window, factor 1, 2 retries, 1 h, bisect."
  }

  assert {
    condition     = aws_lambda_event_source_mapping.stream.function_response_types == toset(["ReportBatchItemFailures"])
    error_message = "The stream mapping always reports batch item failures."
  }

  assert {
    condition     = aws_lambda_event_source_mapping.stream.destination_config[0].on_failure[0].destination_arn == "arn:aws:sqs:us-east-1:123456789012:orders-stream-failures" && output.on_failure_destination_arn == "arn:aws:sqs:us-east-1:123456789012:orders-stream-failures"
    error_message = "By default the batches Lambda gives up on go to the queue the module creates."
  }

  assert {
    condition     = output.stream_kind == "kinesis" && output.settings["SERVERLESS_RETRY_STREAM_ORDERING"] == "unordered" && length(output.settings) == 1
    error_message = "Kinesis is derived from the ARN; ordering defaults to unordered: ${jsonencode(output.settings)}"
  }

  assert {
    condition = jsonencode(output.stream_permissions) == jsonencode([
      {
        sid       = "ReadKinesisStream"
        actions   = ["kinesis:DescribeStream", "kinesis:DescribeStreamSummary", "kinesis:GetRecords", "kinesis:GetShardIterator", "kinesis:ListShards"]
        resources = ["arn:aws:kinesis:us-east-1:123456789012:stream/orders"]
      },
      {
        sid       = "SendDiscardedBatches"
        actions   = ["sqs:SendMessage"]
        resources = ["arn:aws:sqs:us-east-1:123456789012:orders-stream-failures"]
      },
    ])
    error_message = "Kinesis: read exactly that stream, send to exactly the on-failure queue, nothing else: ${jsonencode(output.stream_permissions)}"
  }

  assert {
    condition     = aws_iam_role_policy.stream.name == "serverless-retry-stream" && aws_iam_role_policy.stream.role == output.consumer_role_name
    error_message = "The stream policy is attached to the function's own role."
  }
}

run "default_on_failure_queue" {
  command = plan

  variables {
    kms_key_arn = "arn:aws:kms:us-east-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab"
  }

  assert {
    condition = alltrue([
      module.failures[0].queue_name == "orders-stream-failures",
      module.failures[0].message_retention_seconds == 1209540,
      module.failures[0].fifo == false,
      module.failures[0].kms_key_arn == "arn:aws:kms:us-east-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab",
      output.on_failure_queue_url == "https://sqs.us-east-1.amazonaws.com/123456789012/orders-stream-failures",
    ])
    error_message = "The default destination: a standard queue, encrypted with kms_key_arn, kept as long as modules/queue allows."
  }
}

run "dynamodb_mapping" {
  command = plan

  variables {
    stream = {
      arn                                = "arn:aws:dynamodb:us-east-1:123456789012:table/orders/stream/2026-12-01T00:00:00.000"
      starting_position                  = "TRIM_HORIZON"
      batch_size                         = 500
      maximum_batching_window_in_seconds = 5
      parallelization_factor             = 4
      maximum_retry_attempts             = 5
      maximum_record_age_in_seconds      = -1
      bisect_batch_on_function_error     = false
      kms_key_arn                        = "arn:aws:kms:us-east-1:123456789012:key/0000aaaa-12ab-34cd-56ef-1234567890ab"
    }
    ordering = "blocking"
  }

  assert {
    condition = alltrue([
      aws_lambda_event_source_mapping.stream.event_source_arn == "arn:aws:dynamodb:us-east-1:123456789012:table/orders/stream/2026-12-01T00:00:00.000",
      aws_lambda_event_source_mapping.stream.starting_position == "TRIM_HORIZON",
      aws_lambda_event_source_mapping.stream.batch_size == 500,
      aws_lambda_event_source_mapping.stream.maximum_batching_window_in_seconds == 5,
      aws_lambda_event_source_mapping.stream.parallelization_factor == 4,
      aws_lambda_event_source_mapping.stream.maximum_retry_attempts == 5,
      aws_lambda_event_source_mapping.stream.maximum_record_age_in_seconds == -1,
      aws_lambda_event_source_mapping.stream.bisect_batch_on_function_error == false,
      aws_lambda_event_source_mapping.stream.function_response_types == toset(["ReportBatchItemFailures"]),
    ])
    error_message = "The DynamoDB mapping takes every setting as given, and still reports batch item failures."
  }

  assert {
    condition     = output.stream_kind == "dynamodb" && output.settings["SERVERLESS_RETRY_STREAM_ORDERING"] == "blocking"
    error_message = "DynamoDB is derived from the ARN; ordering reaches the function's settings."
  }

  assert {
    condition = jsonencode(output.stream_permissions) == jsonencode([
      {
        sid       = "ReadDynamoDBStream"
        actions   = ["dynamodb:DescribeStream", "dynamodb:GetRecords", "dynamodb:GetShardIterator"]
        resources = ["arn:aws:dynamodb:us-east-1:123456789012:table/orders/stream/2026-12-01T00:00:00.000"]
      },
      {
        sid       = "ListDynamoDBStreams"
        actions   = ["dynamodb:ListStreams"]
        resources = ["*"]
      },
      {
        sid       = "DecryptStreamRecords"
        actions   = ["kms:Decrypt"]
        resources = ["arn:aws:kms:us-east-1:123456789012:key/0000aaaa-12ab-34cd-56ef-1234567890ab"]
      },
      {
        sid       = "SendDiscardedBatches"
        actions   = ["sqs:SendMessage"]
        resources = ["arn:aws:sqs:us-east-1:123456789012:orders-stream-failures"]
      },
    ])
    error_message = "DynamoDB: read exactly that stream (ListStreams has no resource type), decrypt with exactly its key: ${jsonencode(output.stream_permissions)}"
  }

  assert {
    condition     = length([for s in output.stream_permissions : s if startswith(join(",", s.actions), "kinesis:")]) == 0
    error_message = "No Kinesis permission for a DynamoDB stream."
  }
}

run "kinesis_at_timestamp_through_fan_out" {
  command = plan

  variables {
    stream = {
      arn                         = "arn:aws:kinesis:us-east-1:123456789012:stream/orders"
      kind                        = "kinesis"
      starting_position           = "AT_TIMESTAMP"
      starting_position_timestamp = "2026-12-01T00:00:00Z"
      consumer_arn                = "arn:aws:kinesis:us-east-1:123456789012:stream/orders/consumer/orders-retry:1764547200"
    }
  }

  assert {
    condition     = aws_lambda_event_source_mapping.stream.event_source_arn == "arn:aws:kinesis:us-east-1:123456789012:stream/orders/consumer/orders-retry:1764547200"
    error_message = "With enhanced fan-out the mapping reads through the consumer."
  }

  assert {
    condition     = aws_lambda_event_source_mapping.stream.starting_position == "AT_TIMESTAMP" && aws_lambda_event_source_mapping.stream.starting_position_timestamp == "2026-12-01T00:00:00Z"
    error_message = "AT_TIMESTAMP with its timestamp."
  }

  assert {
    condition = jsonencode([for s in output.stream_permissions : s if s.sid == "ReadThroughStreamConsumer"]) == jsonencode([{
      sid       = "ReadThroughStreamConsumer"
      actions   = ["kinesis:DescribeStreamConsumer", "kinesis:SubscribeToShard"]
      resources = ["arn:aws:kinesis:us-east-1:123456789012:stream/orders/consumer/orders-retry:1764547200"]
    }]) && jsonencode([for s in output.stream_permissions : s.resources if s.sid == "ReadKinesisStream"]) == jsonencode([["arn:aws:kinesis:us-east-1:123456789012:stream/orders"]])
    error_message = "Subscribing on exactly the consumer, reading exactly the stream: ${jsonencode(output.stream_permissions)}"
  }
}

run "bring_your_own_sqs_destination" {
  command = plan

  variables {
    on_failure_destination_arn = "arn:aws:sqs:us-east-1:123456789012:my-stream-failures"
  }

  assert {
    condition     = length(module.failures) == 0 && output.on_failure_queue_url == null
    error_message = "No queue is created for a destination of your own."
  }

  assert {
    condition     = aws_lambda_event_source_mapping.stream.destination_config[0].on_failure[0].destination_arn == "arn:aws:sqs:us-east-1:123456789012:my-stream-failures" && output.on_failure_destination_arn == "arn:aws:sqs:us-east-1:123456789012:my-stream-failures"
    error_message = "The mapping sends to the destination given."
  }

  assert {
    condition     = jsonencode([for s in output.stream_permissions : s.resources if s.sid == "SendDiscardedBatches"]) == jsonencode([["arn:aws:sqs:us-east-1:123456789012:my-stream-failures"]])
    error_message = "Sending to exactly the destination given: ${jsonencode(output.stream_permissions)}"
  }
}

run "bring_your_own_sns_destination" {
  command = plan

  variables {
    on_failure_destination_arn = "arn:aws:sns:us-east-1:123456789012:stream-failures"
  }

  assert {
    condition = jsonencode([for s in output.stream_permissions : s if !startswith(s.sid, "ReadKinesis")]) == jsonencode([{
      sid       = "PublishDiscardedBatches"
      actions   = ["sns:Publish"]
      resources = ["arn:aws:sns:us-east-1:123456789012:stream-failures"]
    }])
    error_message = "An SNS destination: publish to exactly that topic, no SQS right: ${jsonencode(output.stream_permissions)}"
  }
}

run "bring_your_own_s3_destination" {
  command = plan

  variables {
    on_failure_destination_arn = "arn:aws:s3:::orders-stream-failures"
  }

  assert {
    condition = jsonencode([for s in output.stream_permissions : s if !startswith(s.sid, "ReadKinesis")]) == jsonencode([
      {
        sid       = "PutDiscardedBatches"
        actions   = ["s3:PutObject"]
        resources = ["arn:aws:s3:::orders-stream-failures/*"]
      },
      {
        sid       = "ListDiscardedBatches"
        actions   = ["s3:ListBucket"]
        resources = ["arn:aws:s3:::orders-stream-failures"]
      },
    ])
    error_message = "An S3 destination: objects of exactly that bucket, and listing it: ${jsonencode(output.stream_permissions)}"
  }
}

# The additive input of modules/scheduled-retry: settings reach the consumer's environment, last.
run "scheduled_retry_passes_settings" {
  command = plan

  module {
    source = "../scheduled-retry"
  }

  variables {
    settings = { SERVERLESS_RETRY_STREAM_ORDERING = "blocking" }
  }

  assert {
    condition     = module.consumer.environment["SERVERLESS_RETRY_STREAM_ORDERING"] == "blocking"
    error_message = "settings are merged into the consumer's environment."
  }
}

run "scheduled_retry_settings_are_serverless_retry_only" {
  command = plan

  module {
    source = "../scheduled-retry"
  }

  variables {
    settings = { MY_SETTING = "x" }
  }

  expect_failures = [var.settings]
}

# And of modules/consumer: settings are merged last, and hold SERVERLESS_RETRY_* variables only.
run "consumer_merges_settings" {
  command = plan

  module {
    source = "../consumer"
  }

  variables {
    retry_policy_json = "{\"backoff\":{\"max_seconds\":600}}" # within SQS delays: no scheduler needed
    queue = {
      arn                        = "arn:aws:sqs:us-east-1:123456789012:orders"
      url                        = "https://sqs.us-east-1.amazonaws.com/123456789012/orders"
      visibility_timeout_seconds = 180
      dlq_arn                    = "arn:aws:sqs:us-east-1:123456789012:orders-dlq"
      exhausted_queue_url        = "https://sqs.us-east-1.amazonaws.com/123456789012/orders-exhausted"
      exhausted_queue_arn        = "arn:aws:sqs:us-east-1:123456789012:orders-exhausted"
    }
    settings = { SERVERLESS_RETRY_STREAM_ORDERING = "blocking" }
  }

  assert {
    condition     = output.environment["SERVERLESS_RETRY_STREAM_ORDERING"] == "blocking" && output.environment["SERVERLESS_RETRY_PROCESSOR"] == "orders.process:handle"
    error_message = "settings join the wired environment: ${jsonencode(output.environment)}"
  }
}

run "consumer_settings_are_serverless_retry_only" {
  command = plan

  module {
    source = "../consumer"
  }

  variables {
    retry_policy_json = "{\"backoff\":{\"max_seconds\":600}}" # within SQS delays: no scheduler needed
    queue = {
      arn                        = "arn:aws:sqs:us-east-1:123456789012:orders"
      url                        = "https://sqs.us-east-1.amazonaws.com/123456789012/orders"
      visibility_timeout_seconds = 180
      dlq_arn                    = "arn:aws:sqs:us-east-1:123456789012:orders-dlq"
      exhausted_queue_url        = "https://sqs.us-east-1.amazonaws.com/123456789012/orders-exhausted"
      exhausted_queue_arn        = "arn:aws:sqs:us-east-1:123456789012:orders-exhausted"
    }
    settings = { POWERTOOLS_LOG_LEVEL = "DEBUG" }
  }

  expect_failures = [var.settings]
}

# Each validation refuses a bad value.
run "refuses_an_arn_of_another_service" {
  command = plan

  variables {
    stream = { arn = "arn:aws:sqs:us-east-1:123456789012:orders" }
  }

  expect_failures = [var.stream]
}

run "refuses_a_kind_that_contradicts_the_arn" {
  command = plan

  variables {
    stream = { arn = "arn:aws:kinesis:us-east-1:123456789012:stream/orders", kind = "dynamodb" }
  }

  expect_failures = [var.stream]
}

run "refuses_an_unknown_starting_position" {
  command = plan

  variables {
    stream = { arn = "arn:aws:kinesis:us-east-1:123456789012:stream/orders", starting_position = "EARLIEST" }
  }

  expect_failures = [var.stream]
}

run "refuses_at_timestamp_on_dynamodb" {
  command = plan

  variables {
    stream = {
      arn                         = "arn:aws:dynamodb:us-east-1:123456789012:table/orders/stream/2026-12-01T00:00:00.000"
      starting_position           = "AT_TIMESTAMP"
      starting_position_timestamp = "2026-12-01T00:00:00Z"
    }
  }

  expect_failures = [var.stream]
}

run "refuses_at_timestamp_without_a_timestamp" {
  command = plan

  variables {
    stream = { arn = "arn:aws:kinesis:us-east-1:123456789012:stream/orders", starting_position = "AT_TIMESTAMP" }
  }

  expect_failures = [var.stream]
}

run "refuses_a_timestamp_that_is_not_rfc3339" {
  command = plan

  variables {
    stream = { arn = "arn:aws:kinesis:us-east-1:123456789012:stream/orders", starting_position = "AT_TIMESTAMP", starting_position_timestamp = "1764547200" }
  }

  expect_failures = [var.stream]
}

run "refuses_a_batch_above_10000" {
  command = plan

  variables {
    stream = { arn = "arn:aws:kinesis:us-east-1:123456789012:stream/orders", batch_size = 10001 }
  }

  expect_failures = [var.stream]
}

run "refuses_an_empty_batch" {
  command = plan

  variables {
    stream = { arn = "arn:aws:kinesis:us-east-1:123456789012:stream/orders", batch_size = 0 }
  }

  expect_failures = [var.stream]
}

run "refuses_a_window_above_300" {
  command = plan

  variables {
    stream = { arn = "arn:aws:kinesis:us-east-1:123456789012:stream/orders", maximum_batching_window_in_seconds = 301 }
  }

  expect_failures = [var.stream]
}

run "refuses_a_parallelization_factor_above_10" {
  command = plan

  variables {
    stream = { arn = "arn:aws:kinesis:us-east-1:123456789012:stream/orders", parallelization_factor = 11 }
  }

  expect_failures = [var.stream]
}

run "refuses_retry_attempts_below_minus_1" {
  command = plan

  variables {
    stream = { arn = "arn:aws:kinesis:us-east-1:123456789012:stream/orders", maximum_retry_attempts = -2 }
  }

  expect_failures = [var.stream]
}

run "refuses_retry_attempts_above_10000" {
  command = plan

  variables {
    stream = { arn = "arn:aws:kinesis:us-east-1:123456789012:stream/orders", maximum_retry_attempts = 10001 }
  }

  expect_failures = [var.stream]
}

run "refuses_a_record_age_between_0_and_60" {
  command = plan

  variables {
    stream = { arn = "arn:aws:kinesis:us-east-1:123456789012:stream/orders", maximum_record_age_in_seconds = 59 }
  }

  expect_failures = [var.stream]
}

run "refuses_a_record_age_above_7_days" {
  command = plan

  variables {
    stream = { arn = "arn:aws:kinesis:us-east-1:123456789012:stream/orders", maximum_record_age_in_seconds = 604801 }
  }

  expect_failures = [var.stream]
}

run "refuses_a_key_alias" {
  command = plan

  variables {
    stream = { arn = "arn:aws:kinesis:us-east-1:123456789012:stream/orders", kms_key_arn = "arn:aws:kms:us-east-1:123456789012:alias/orders" }
  }

  expect_failures = [var.stream]
}

run "refuses_a_consumer_of_another_stream" {
  command = plan

  variables {
    stream = { arn = "arn:aws:kinesis:us-east-1:123456789012:stream/orders", consumer_arn = "arn:aws:kinesis:us-east-1:123456789012:stream/payments/consumer/orders-retry:1764547200" }
  }

  expect_failures = [var.stream]
}

run "refuses_a_consumer_on_dynamodb" {
  command = plan

  variables {
    stream = {
      arn          = "arn:aws:dynamodb:us-east-1:123456789012:table/orders/stream/2026-12-01T00:00:00.000"
      consumer_arn = "arn:aws:dynamodb:us-east-1:123456789012:table/orders/stream/2026-12-01T00:00:00.000/consumer/x:1"
    }
  }

  expect_failures = [var.stream]
}

run "refuses_an_unknown_ordering" {
  command = plan

  variables {
    ordering = "ordered"
  }

  expect_failures = [var.ordering]
}

run "refuses_a_destination_of_another_service" {
  command = plan

  variables {
    on_failure_destination_arn = "arn:aws:lambda:us-east-1:123456789012:function:failures"
  }

  expect_failures = [var.on_failure_destination_arn]
}

run "refuses_a_fifo_destination" {
  command = plan

  variables {
    on_failure_destination_arn = "arn:aws:sqs:us-east-1:123456789012:failures.fifo"
  }

  expect_failures = [var.on_failure_destination_arn]
}
