data "aws_caller_identity" "current" {}

# Concern: who may assume the role. Only EventBridge Scheduler, and only on behalf of this account
# (aws:SourceAccount guards against the confused deputy).
data "aws_iam_policy_document" "trust" {
  statement {
    sid     = "SchedulerAssumesRole"
    actions = ["sts:AssumeRole"]

    principals {
      type        = "Service"
      identifiers = ["scheduler.amazonaws.com"]
    }

    condition {
      test     = "StringEquals"
      variable = "aws:SourceAccount"
      values   = [data.aws_caller_identity.current.account_id]
    }
  }
}

# Concern: delivering a schedule to its target, and nothing else.
data "aws_iam_policy_document" "targets" {
  dynamic "statement" {
    for_each = length(var.target_queue_arns) > 0 ? [var.target_queue_arns] : []
    content {
      sid       = "SendToTargetQueues"
      actions   = ["sqs:SendMessage"]
      resources = statement.value
    }
  }

  dynamic "statement" {
    for_each = length(var.target_topic_arns) > 0 ? [var.target_topic_arns] : []
    content {
      sid       = "PublishToTargetTopics"
      actions   = ["sns:Publish"]
      resources = statement.value
    }
  }

  dynamic "statement" {
    for_each = length(var.target_function_arns) > 0 ? [var.target_function_arns] : []
    content {
      sid       = "InvokeTargetFunctions"
      actions   = ["lambda:InvokeFunction"]
      resources = statement.value
    }
  }
}

# Concern: a schedule that cannot be delivered is dead-lettered, never dropped.
data "aws_iam_policy_document" "dead_letter" {
  dynamic "statement" {
    for_each = length(var.dead_letter_queue_arns) > 0 ? [var.dead_letter_queue_arns] : []
    content {
      sid       = "SendToDeadLetterQueues"
      actions   = ["sqs:SendMessage"]
      resources = statement.value
    }
  }
}

# Concern: encrypted targets.
data "aws_iam_policy_document" "kms" {
  dynamic "statement" {
    for_each = length(var.kms_key_arns) > 0 ? [var.kms_key_arns] : []
    content {
      sid       = "UseTargetKeys"
      actions   = ["kms:GenerateDataKey", "kms:Decrypt"]
      resources = statement.value
    }
  }
}

data "aws_iam_policy_document" "execution" {
  source_policy_documents = [
    data.aws_iam_policy_document.targets.json,
    data.aws_iam_policy_document.dead_letter.json,
    data.aws_iam_policy_document.kms.json,
  ]
}

resource "aws_iam_role" "this" {
  name                 = "${var.name}-scheduler"
  description          = "EventBridge Scheduler execution role of schedule group ${var.name}: delivers retries to its targets only."
  assume_role_policy   = data.aws_iam_policy_document.trust.json
  permissions_boundary = var.permissions_boundary_arn
  tags                 = var.tags
}

resource "aws_iam_role_policy" "execution" {
  name   = "deliver-schedules"
  role   = aws_iam_role.this.id
  policy = data.aws_iam_policy_document.execution.json

  lifecycle {
    precondition {
      condition     = length(concat(var.target_queue_arns, var.target_topic_arns, var.target_function_arns)) > 0
      error_message = "Give the scheduler at least one target: target_queue_arns, target_topic_arns or target_function_arns."
    }
  }
}
