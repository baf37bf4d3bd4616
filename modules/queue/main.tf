locals {
  suffix = var.fifo ? ".fifo" : ""

  # The largest maximum message size SQS allows since 2025 is 1 MiB; hashicorp/aws 5.x accepts at most
  # 256 KiB (6.8 and later accept 1 MiB). A source queue above 256 KiB proves the provider takes more.
  sqs_max_message_size       = 1048576
  provider_5x_max_size       = 262144
  exhausted_size_ceiling     = max(var.max_message_size, coalesce(var.exhausted_max_message_size, 0)) > local.provider_5x_max_size ? local.sqs_max_message_size : local.provider_5x_max_size
  exhausted_max_message_size = coalesce(var.exhausted_max_message_size, local.exhausted_size_ceiling)
  # The retry-exhausted queue must take a message this much larger than the source queue's largest:
  # the "framed" terminal form (a one-line header with outcome and reason, then the body verbatim)
  # needs at most this much around any body the source accepts. serverless_retry.terminal's
  # FRAME_OVERHEAD_BYTES is the same figure (tests/terraform/test_sizes.py keeps them equal).
  exhausted_size_margin = 2048
  exhausted_size_wanted = var.max_message_size + local.exhausted_size_margin

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

  lifecycle {
    # A message that keeps failing is received max_receive_count times, a visibility timeout apart,
    # before SQS moves it to the DLQ: the queue must keep it that long, whatever the consumer passes on.
    precondition {
      condition     = var.max_receive_count * var.visibility_timeout_seconds < var.message_retention_seconds
      error_message = "A message that keeps failing is received max_receive_count (${var.max_receive_count}) times, a visibility timeout (${var.visibility_timeout_seconds} s) apart, before SQS moves it to the DLQ: ${var.max_receive_count * var.visibility_timeout_seconds} s, which is not shorter than message_retention_seconds (${var.message_retention_seconds} s). SQS would delete such a message at the end of its retention instead of dead-lettering it. Raise message_retention_seconds (up to 1209600, 14 days), or lower max_receive_count or visibility_timeout_seconds."
    }

    precondition {
      condition     = var.max_receive_count >= 5 || var.allow_max_receive_count_below_5
      error_message = "max_receive_count is ${var.max_receive_count}; it should be at least 5. AWS Lambda's guidance for SQS event sources: set the source queue's maxReceiveCount to at least 5, which improves the chances of messages being processed before reaching the DLQ (a throttled or failed batch is received again; every receive counts). A lower value moves messages to the DLQ sooner, e.g. after one bad deploy. To accept that trade-off, set allow_max_receive_count_below_5 = true."
    }
  }
}

# Native dead-letter queue of the source queue (SQS requires it to be FIFO for a FIFO source), and
# for a standard source also the dead-letter target of retry schedules.
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

# For a FIFO source: the dead-letter target of retry schedules. EventBridge Scheduler takes only
# standard queues as a schedule's dead-letter queue, so the FIFO DLQ above cannot be it. A dead-letter
# event carries the schedule's input (an envelope), hence the exhausted queue's size.
resource "aws_sqs_queue" "schedule_dlq" {
  count = var.fifo ? 1 : 0

  name                      = "${var.name}-schedule-dlq"
  message_retention_seconds = var.dlq_message_retention_seconds
  max_message_size          = local.exhausted_max_message_size

  sqs_managed_sse_enabled           = local.encryption.sqs_managed_sse_enabled
  kms_master_key_id                 = local.encryption.kms_master_key_id
  kms_data_key_reuse_period_seconds = local.encryption.kms_data_key_reuse_period_seconds

  tags = var.tags
}

# Where the consumer puts messages it gives up on (exhausted, non-retryable, invalid envelope, too large),
# each an envelope saying why. Larger than the source queue, so the reason fits around any body.
# Not created for a plain handler of one's own (native retry), which never writes there.
resource "aws_sqs_queue" "exhausted" {
  count = var.exhausted_queue ? 1 : 0

  name                        = "${var.name}-exhausted${local.suffix}"
  fifo_queue                  = var.fifo ? true : null
  content_based_deduplication = var.fifo ? var.content_based_deduplication : null
  message_retention_seconds   = var.exhausted_message_retention_seconds
  max_message_size            = local.exhausted_max_message_size

  sqs_managed_sse_enabled           = local.encryption.sqs_managed_sse_enabled
  kms_master_key_id                 = local.encryption.kms_master_key_id
  kms_data_key_reuse_period_seconds = local.encryption.kms_data_key_reuse_period_seconds

  tags = var.tags

  lifecycle {
    precondition {
      condition     = local.exhausted_max_message_size >= local.exhausted_size_wanted
      error_message = local.exhausted_size_wanted > local.sqs_max_message_size ? "max_message_size (${var.max_message_size}) leaves no room in the retry-exhausted queue: a terminal message is the body plus up to ${local.exhausted_size_margin} bytes of outcome and reason, i.e. ${local.exhausted_size_wanted} bytes, and SQS allows at most ${local.sqs_max_message_size}. Lower max_message_size to at most ${local.sqs_max_message_size - local.exhausted_size_margin}, or the failures of the largest messages would reach that queue without their reason." : "The retry-exhausted queue takes ${local.exhausted_max_message_size} bytes, but a terminal message is the body plus up to ${local.exhausted_size_margin} bytes of outcome and reason: with max_message_size ${var.max_message_size} it needs ${local.exhausted_size_wanted}, or the failures of the largest messages arrive without their reason. ${var.exhausted_max_message_size == null ? "hashicorp/aws 5.x takes at most ${local.provider_5x_max_size}: lower max_message_size to at most ${local.provider_5x_max_size - local.exhausted_size_margin} (the default 260096), or with hashicorp/aws >= 6.8 set exhausted_max_message_size to at least ${local.exhausted_size_wanted} (SQS allows up to ${local.sqs_max_message_size})." : "Raise exhausted_max_message_size to at least ${local.exhausted_size_wanted} (SQS allows up to ${local.sqs_max_message_size} with hashicorp/aws >= 6.8), or lower max_message_size to at most ${var.exhausted_max_message_size - local.exhausted_size_margin}."}"
    }
  }
}

resource "aws_sqs_queue_policy" "source" {
  queue_url = aws_sqs_queue.source.url
  policy    = data.aws_iam_policy_document.source_queue.json
}

resource "aws_sqs_queue_policy" "dlq" {
  queue_url = aws_sqs_queue.dlq.url
  policy    = data.aws_iam_policy_document.tls_only["dlq"].json
}

resource "aws_sqs_queue_policy" "schedule_dlq" {
  count = var.fifo ? 1 : 0

  queue_url = aws_sqs_queue.schedule_dlq[0].url
  policy    = data.aws_iam_policy_document.tls_only["schedule_dlq"].json
}

resource "aws_sqs_queue_policy" "exhausted" {
  count = var.exhausted_queue ? 1 : 0

  queue_url = aws_sqs_queue.exhausted[0].url
  policy    = data.aws_iam_policy_document.tls_only["exhausted"].json
}

# The exhausted queue became optional (exhausted_queue): existing states keep their queue.
moved {
  from = aws_sqs_queue.exhausted
  to   = aws_sqs_queue.exhausted[0]
}

moved {
  from = aws_sqs_queue_policy.exhausted
  to   = aws_sqs_queue_policy.exhausted[0]
}
