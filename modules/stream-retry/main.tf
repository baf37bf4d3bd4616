locals {
  # Known at plan time from the ARN (validated in variables.tf) when kind is not given.
  kind    = coalesce(var.stream.kind, strcontains(var.stream.arn, ":kinesis:") ? "kinesis" : "dynamodb")
  kinesis = local.kind == "kinesis"
  # Enhanced fan-out: the mapping reads through the consumer (Lambda takes its ARN as the event source).
  fan_out = var.stream.consumer_arn != null

  # The last line of defence: a record of each batch Lambda gives up on. Which service it is must be
  # known at plan time (it picks the IAM statements), so it comes from the input, not the queue.
  create_destination  = var.on_failure_destination_arn == null
  destination_service = local.create_destination ? "sqs" : split(":", var.on_failure_destination_arn)[2]
  destination_arn     = local.create_destination ? module.failures[0].queue_arn : var.on_failure_destination_arn

  # What the stream handler reads besides pattern 1's wiring (modules/scheduled-retry's settings).
  settings = { SERVERLESS_RETRY_STREAM_ORDERING = var.ordering }
}

# Pattern 1's retry path, whole: the retry queue, its DLQ, the retry-exhausted queue, the Scheduler,
# the claims table and the function. The same function consumes the stream (below): the stream handler
# serves both the stream's batches and the retry queue's SQS events with one processor.
module "retry" {
  source = "../scheduled-retry"

  name         = var.name
  package      = var.package
  s3_package   = var.s3_package
  layers       = var.layers
  processor    = var.processor
  handler      = "serverless_retry.handlers.stream.handler"
  retry_policy = var.retry_policy
  settings     = local.settings

  timeout                  = var.timeout
  memory_size              = var.memory_size
  runtime                  = var.runtime
  architectures            = var.architectures
  kms_key_arn              = var.kms_key_arn
  tracing                  = var.tracing
  log_retention_days       = var.log_retention_days
  logs_kms_key_arn         = var.logs_kms_key_arn
  environment              = var.environment
  claims                   = var.claims
  permissions_boundary_arn = var.permissions_boundary_arn
  policy_statements        = var.policy_statements
  tags                     = var.tags
}

# The default on-failure destination: a standard queue (Lambda takes no FIFO queue as a stream's
# destination), encrypted like the retry queues. Nothing consumes it: an operator reads a batch's
# shard and sequence numbers from it and re-reads the records from the stream. It keeps them 14 days
# less a minute, the longest modules/queue allows (its DLQ must outlive it and keeps 14 days).
module "failures" {
  source = "../queue"
  count  = local.create_destination ? 1 : 0

  name                          = "${var.name}-stream-failures"
  exhausted_queue               = false
  message_retention_seconds     = 1209540
  dlq_message_retention_seconds = 1209600
  kms_key_arn                   = var.kms_key_arn
  tags                          = var.tags
}

resource "aws_lambda_event_source_mapping" "stream" {
  event_source_arn                   = local.fan_out ? var.stream.consumer_arn : var.stream.arn
  function_name                      = module.retry.function_arn
  starting_position                  = var.stream.starting_position
  starting_position_timestamp        = var.stream.starting_position_timestamp
  batch_size                         = var.stream.batch_size
  maximum_batching_window_in_seconds = var.stream.maximum_batching_window_in_seconds
  parallelization_factor             = var.stream.parallelization_factor
  maximum_retry_attempts             = var.stream.maximum_retry_attempts
  maximum_record_age_in_seconds      = var.stream.maximum_record_age_in_seconds
  bisect_batch_on_function_error     = var.stream.bisect_batch_on_function_error
  # Always: the handler reports the sequence number of a record it could neither process nor hand off
  # to the retry queue (or, with ordering = "blocking", the first that failed), and Lambda retries the
  # batch from there instead of from its start.
  function_response_types = ["ReportBatchItemFailures"]

  destination_config {
    on_failure {
      destination_arn = local.destination_arn
    }
  }

  tags = var.tags

  # Lambda checks the role can read the stream when the mapping is created.
  depends_on = [aws_iam_role_policy.stream]
}
