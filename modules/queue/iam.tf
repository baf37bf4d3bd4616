locals {
  queue_arns = merge(
    {
      source = aws_sqs_queue.source.arn
      dlq    = aws_sqs_queue.dlq.arn
    },
    var.exhausted_queue ? { exhausted = aws_sqs_queue.exhausted[0].arn } : {},
    var.fifo ? { schedule_dlq = aws_sqs_queue.schedule_dlq[0].arn } : {},
  )
}

# Concern: transport security. Every queue refuses requests that are not made over TLS.
data "aws_iam_policy_document" "tls_only" {
  for_each = local.queue_arns

  statement {
    sid       = "DenyInsecureTransport"
    effect    = "Deny"
    actions   = ["sqs:*"]
    resources = [each.value]

    principals {
      type        = "*"
      identifiers = ["*"]
    }

    condition {
      test     = "Bool"
      variable = "aws:SecureTransport"
      values   = ["false"]
    }
  }
}

# Concern: who may use the source queue beyond its account's IAM principals (caller-supplied), plus TLS.
data "aws_iam_policy_document" "source_queue" {
  source_policy_documents = concat([data.aws_iam_policy_document.tls_only["source"].json], var.source_queue_policy_documents)
}

# Concern: producers. A policy a producer's role attaches to send to the source queue (and use its key).
data "aws_iam_policy_document" "producer" {
  statement {
    sid       = "SendToSourceQueue"
    actions   = ["sqs:SendMessage", "sqs:GetQueueUrl"]
    resources = [aws_sqs_queue.source.arn]
  }

  dynamic "statement" {
    for_each = var.kms_key_arn == null ? [] : [var.kms_key_arn]
    content {
      sid       = "EncryptForSourceQueue"
      actions   = ["kms:GenerateDataKey", "kms:Decrypt"]
      resources = [statement.value]
    }
  }
}
