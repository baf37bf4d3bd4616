locals {
  suffix = var.fifo ? ".fifo" : ""

  # Settings every queue of the set shares: encryption, size, FIFO-ness.
  encryption = {
    sqs_managed_sse_enabled           = var.kms_key_arn == null ? true : null
    kms_master_key_id                 = var.kms_key_arn
    kms_data_key_reuse_period_seconds = var.kms_key_arn == null ? null : var.kms_data_key_reuse_period_seconds
  }
}

# The source queue: producers and re-enqueued retries arrive here; the consumer Lambda polls it.
resource "aws_sqs_queue" "source" {
  name                        = "${var.name}${local.suffix}"
  fifo_queue                  = var.fifo ? true : null
  content_based_deduplication = var.fifo ? var.content_based_deduplication : null
  visibility_timeout_seconds  = var.visibility_timeout_seconds
  message_retention_seconds   = var.message_retention_seconds
  max_message_size            = var.max_message_size

  sqs_managed_sse_enabled           = local.encryption.sqs_managed_sse_enabled
  kms_master_key_id                 = local.encryption.kms_master_key_id
  kms_data_key_reuse_period_seconds = local.encryption.kms_data_key_reuse_period_seconds

  # A record whose retry could not be recorded goes back through the visibility timeout; after
  # max_receive_count receives SQS moves it to the DLQ, so nothing is lost and nothing loops forever.
  redrive_policy = jsonencode({
    deadLetterTargetArn = aws_sqs_queue.dlq.arn
    maxReceiveCount     = var.max_receive_count
  })

  tags = var.tags
}

# Native dead-letter queue of the source queue, and the dead-letter target of retry schedules.
resource "aws_sqs_queue" "dlq" {
  name                        = "${var.name}-dlq${local.suffix}"
  fifo_queue                  = var.fifo ? true : null
  content_based_deduplication = var.fifo ? var.content_based_deduplication : null
  message_retention_seconds   = var.dlq_message_retention_seconds
  max_message_size            = var.max_message_size

  sqs_managed_sse_enabled           = local.encryption.sqs_managed_sse_enabled
  kms_master_key_id                 = local.encryption.kms_master_key_id
  kms_data_key_reuse_period_seconds = local.encryption.kms_data_key_reuse_period_seconds

  tags = var.tags

  lifecycle {
    precondition {
      # A message moved to a DLQ keeps its original enqueue timestamp (standard queues), so a DLQ
      # that does not outlive its source would expire dead letters before anyone could look.
      condition     = var.dlq_message_retention_seconds > var.message_retention_seconds
      error_message = "dlq_message_retention_seconds (${var.dlq_message_retention_seconds}) must be longer than message_retention_seconds (${var.message_retention_seconds}): a dead-lettered message keeps its original enqueue time, so a DLQ that keeps messages no longer than its source loses them."
    }
  }
}

# Only the source queue may dead-letter into the DLQ.
resource "aws_sqs_queue_redrive_allow_policy" "dlq" {
  queue_url = aws_sqs_queue.dlq.url
  redrive_allow_policy = jsonencode({
    redrivePermission = "byQueue"
    sourceQueueArns   = [aws_sqs_queue.source.arn]
  })
}

# Where the consumer puts messages it gives up on (exhausted, non-retryable, invalid envelope, too large),
# each an envelope saying why.
resource "aws_sqs_queue" "exhausted" {
  name                        = "${var.name}-exhausted${local.suffix}"
  fifo_queue                  = var.fifo ? true : null
  content_based_deduplication = var.fifo ? var.content_based_deduplication : null
  message_retention_seconds   = var.exhausted_message_retention_seconds
  max_message_size            = var.max_message_size

  sqs_managed_sse_enabled           = local.encryption.sqs_managed_sse_enabled
  kms_master_key_id                 = local.encryption.kms_master_key_id
  kms_data_key_reuse_period_seconds = local.encryption.kms_data_key_reuse_period_seconds

  tags = var.tags
}

resource "aws_sqs_queue_policy" "source" {
  queue_url = aws_sqs_queue.source.url
  policy    = data.aws_iam_policy_document.source_queue.json
}

resource "aws_sqs_queue_policy" "dlq" {
  queue_url = aws_sqs_queue.dlq.url
  policy    = data.aws_iam_policy_document.tls_only["dlq"].json
}

resource "aws_sqs_queue_policy" "exhausted" {
  queue_url = aws_sqs_queue.exhausted.url
  policy    = data.aws_iam_policy_document.tls_only["exhausted"].json
}
