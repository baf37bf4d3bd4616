locals {
  handler = coalesce(var.handler, "serverless_retry.handlers.consumer.handler")

  # What the handler reads at cold start (serverless_retry.config); names are the shared contract.
  wired_environment = merge(
    {
      SERVERLESS_RETRY_PROCESSOR           = var.processor
      SERVERLESS_RETRY_POLICY              = var.retry_policy_json
      SERVERLESS_RETRY_QUEUE_URL           = var.queue.url
      SERVERLESS_RETRY_QUEUE_ARN           = var.queue.arn
      SERVERLESS_RETRY_EXHAUSTED_QUEUE_URL = var.queue.exhausted_queue_url
      SERVERLESS_RETRY_DLQ_ARN             = var.queue.dlq_arn
      SERVERLESS_RETRY_MAX_MESSAGE_BYTES   = tostring(var.queue.max_message_size)
      POWERTOOLS_SERVICE_NAME              = var.name
      POWERTOOLS_METRICS_NAMESPACE         = "ServerlessRetry"
      POWERTOOLS_LOG_LEVEL                 = var.log_level
    },
    var.scheduler == null ? {} : {
      SERVERLESS_RETRY_SCHEDULE_GROUP     = var.scheduler.schedule_group_name
      SERVERLESS_RETRY_SCHEDULER_ROLE_ARN = var.scheduler.role_arn
    },
    var.idempotency_table_arn == null ? {} : {
      SERVERLESS_RETRY_IDEMPOTENCY_TABLE = element(split("/", var.idempotency_table_arn), 1)
    },
  )
  environment = merge(var.environment, local.wired_environment)

  # Lambda caps the environment at 4 KB (keys plus values); a long policy is the usual culprit.
  environment_bytes = sum([for k, v in local.environment : length(k) + length(v)])
}

resource "aws_cloudwatch_log_group" "this" {
  #checkov:skip=CKV_AWS_338:Retention is the log_retention_days input (default 30 days of operational logs); set 365 or more where a compliance regime requires it.
  name              = "/aws/lambda/${var.name}"
  retention_in_days = var.log_retention_days
  kms_key_id        = var.logs_kms_key_arn
  tags              = var.tags
}

resource "aws_lambda_function" "this" {
  #checkov:skip=CKV_AWS_116:The SQS event source mapping invokes the function synchronously, and a function DLQ only catches asynchronous invocations; failed records go to the queue's own DLQ (redrive_policy) and the retry-exhausted queue.
  #checkov:skip=CKV_AWS_117:The consumer calls only AWS APIs (SQS, EventBridge Scheduler, CloudWatch Logs); running it in a VPC would add NAT or endpoint requirements and protect nothing.
  #checkov:skip=CKV_AWS_272:Code signing needs a Signer profile and signed S3 artifacts; the zip is deployed from a local path whose hash Terraform pins through source_code_hash.
  function_name    = var.name
  description      = "serverless-retry consumer: calls ${var.processor} per message and retries failures by policy."
  role             = aws_iam_role.this.arn
  filename         = var.package
  source_code_hash = filebase64sha256(var.package)
  handler          = local.handler
  runtime          = var.runtime
  architectures    = [var.architecture]
  memory_size      = var.memory_size
  timeout          = var.timeout
  kms_key_arn      = var.environment_kms_key_arn

  reserved_concurrent_executions = var.reserved_concurrency

  environment {
    variables = local.environment
  }

  tracing_config {
    mode = var.tracing ? "Active" : "PassThrough"
  }

  tags = var.tags

  # The log group must exist first (or Lambda creates one without retention), and the role's
  # permissions before the first invocation.
  depends_on = [aws_cloudwatch_log_group.this, aws_iam_role_policy.this]

  lifecycle {
    precondition {
      condition     = local.environment_bytes <= 4096
      error_message = "The function's environment variables take ${local.environment_bytes} bytes; Lambda allows 4096. Shorten the retry policy (fewer or shorter rules) or the extra environment."
    }
  }
}

resource "aws_lambda_event_source_mapping" "this" {
  event_source_arn                   = var.queue.arn
  function_name                      = aws_lambda_function.this.arn
  batch_size                         = var.batch_size
  maximum_batching_window_in_seconds = var.maximum_batching_window_seconds > 0 ? var.maximum_batching_window_seconds : null
  # The handler reports only the records whose retry could not be recorded; the rest are deleted.
  function_response_types = ["ReportBatchItemFailures"]

  dynamic "scaling_config" {
    for_each = var.maximum_concurrency == null ? [] : [var.maximum_concurrency]
    content {
      maximum_concurrency = scaling_config.value
    }
  }

  tags = var.tags

  # Lambda checks the role can read the queue when the mapping is created.
  depends_on = [aws_iam_role_policy.this]

  lifecycle {
    precondition {
      condition     = var.queue.visibility_timeout_seconds >= 6 * var.timeout
      error_message = "The queue's visibility timeout (${var.queue.visibility_timeout_seconds} s) must be at least 6 x the function timeout (${var.timeout} s), i.e. >= ${6 * var.timeout} s. AWS Lambda's guidance for SQS event sources: set the source queue's visibility timeout to at least six times the timeout you configure on your function, so a batch that is throttled or retried is not received again while it is still being processed."
    }

    precondition {
      # FIFO event sources take at most 10 records and no batching window.
      condition     = !endswith(var.queue.arn, ".fifo") || (var.batch_size <= 10 && var.maximum_batching_window_seconds == 0)
      error_message = "The queue is FIFO: batch_size must be at most 10 (got ${var.batch_size}) and maximum_batching_window_seconds 0 (got ${var.maximum_batching_window_seconds})."
    }

    precondition {
      condition     = var.batch_size <= 10 || var.maximum_batching_window_seconds >= 1
      error_message = "batch_size ${var.batch_size} is above 10: SQS event sources need maximum_batching_window_seconds >= 1 for batches larger than 10."
    }
  }
}
