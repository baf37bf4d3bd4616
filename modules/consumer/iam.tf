locals {
  # Every schedule of the group: arn:<partition>:scheduler:<region>:<account>:schedule/<group>/*
  schedule_arn_pattern = var.scheduler == null ? null : "${replace(var.scheduler.schedule_group_arn, ":schedule-group/", ":schedule/")}/*"
}

# Concern: consuming the source queue (what the event source mapping does as this role: AWS lists
# ReceiveMessage, DeleteMessage and GetQueueAttributes for an SQS event source).
data "aws_iam_policy_document" "consume" {
  statement {
    sid = "ConsumeSourceQueue"
    actions = [
      "sqs:ReceiveMessage",
      "sqs:DeleteMessage",
      "sqs:GetQueueAttributes",
    ]
    resources = [var.queue.arn]
  }
}

# Concern: keeping a message in the queue for later. Retries in place (the visibility transport, FIFO
# ordered) hide the message until its next attempt; on FIFO a copy that arrives early is hidden until
# due and the records behind a failure in its group are handed back. A standard queue whose retries
# are copies (SQS delays, schedules, hops) never changes a visibility, so it gets no right to.
data "aws_iam_policy_document" "in_place" {
  dynamic "statement" {
    for_each = local.fifo || module.policy.transport == "visibility" ? [var.queue.arn] : []
    content {
      sid       = "HideUntilNextAttempt"
      actions   = ["sqs:ChangeMessageVisibility"]
      resources = [statement.value]
    }
  }
}

# Concern: putting a message in its next place (a delayed retry, or the exhausted store).
# SendMessageBatch is authorised by sqs:SendMessage. Not the DLQ: SQS redrive and the Scheduler (its
# own role) fill that one; the consumer never writes to it, so it gets no right to.
# A plain handler (native retry) sends nothing: SQS itself redelivers and dead-letters.
data "aws_iam_policy_document" "send" {
  dynamic "statement" {
    for_each = local.native ? [] : [[var.queue.arn, var.queue.exhausted_queue_arn]]
    content {
      sid       = "SendRetriesAndExhausted"
      actions   = ["sqs:SendMessage"]
      resources = statement.value
    }
  }
}

# Concern: retries longer than SQS's 15-minute delay become one-time schedules in our group only.
# Creating is all the consumer does: each schedule deletes itself (ActionAfterCompletion = DELETE).
# GetSchedule answers whether a CreateSchedule that got no answer (a timeout) created it, before the
# retry falls back to SQS delay hops: a second copy would start a second chain.
data "aws_iam_policy_document" "schedule" {
  dynamic "statement" {
    for_each = var.scheduler == null ? [] : [local.schedule_arn_pattern]
    content {
      sid       = "CreateRetrySchedules"
      actions   = ["scheduler:CreateSchedule", "scheduler:GetSchedule"]
      resources = [statement.value]
    }
  }
}

# Concern: handing the scheduler role to EventBridge Scheduler, and to nothing else.
data "aws_iam_policy_document" "pass_role" {
  dynamic "statement" {
    for_each = var.scheduler == null ? [] : [var.scheduler.role_arn]
    content {
      sid       = "PassSchedulerRole"
      actions   = ["iam:PassRole"]
      resources = [statement.value]

      condition {
        test     = "StringEquals"
        variable = "iam:PassedToService"
        values   = ["scheduler.amazonaws.com"]
      }
    }
  }
}

# Concern: SSE-KMS queues. Reading needs Decrypt; sending needs GenerateDataKey (and Decrypt).
data "aws_iam_policy_document" "kms" {
  dynamic "statement" {
    for_each = var.queue.kms_key_arn == null ? [] : [var.queue.kms_key_arn]
    content {
      sid       = "UseQueueKey"
      actions   = local.native ? ["kms:Decrypt"] : ["kms:Decrypt", "kms:GenerateDataKey"]
      resources = [statement.value]
    }
  }
}

# Concern: one chain per message (serverless_retry.consumer.claims), in the claims table only. Every claim
# operation is one conditional UpdateItem on the chain's item: claim an attempt (or take over one
# whose owner is gone), mark it finished or final. A refused condition returns the item with it
# (ReturnValuesOnConditionCheckFailure), so neither GetItem nor PutItem is needed. A plain handler
# (native retry) runs no claims.
data "aws_iam_policy_document" "claims" {
  dynamic "statement" {
    for_each = local.claims ? [local.claims_table_arn] : []
    content {
      sid       = "RetryClaims"
      actions   = ["dynamodb:UpdateItem"]
      resources = [statement.value]
    }
  }
}

# Concern: the claims table's customer managed key, used only by DynamoDB on the function's behalf.
data "aws_iam_policy_document" "claims_kms" {
  dynamic "statement" {
    for_each = local.claims_kms_key_arn == null ? [] : [local.claims_kms_key_arn]
    content {
      sid       = "UseClaimsTableKey"
      actions   = ["kms:Encrypt", "kms:Decrypt", "kms:GenerateDataKey"]
      resources = [statement.value]

      condition {
        test     = "StringEquals"
        variable = "kms:ViaService"
        values   = ["dynamodb.${data.aws_region.current.name}.${data.aws_partition.current.dns_suffix}"]
      }
    }
  }
}

# Concern: Powertools idempotency of the processor (idempotency_table_arn, opt-in): a conditional
# PutItem marks a call in progress (a conflict returns the stored record with it,
# ReturnValuesOnConditionCheckFailure: no GetItem with the runtime's boto3), UpdateItem stores the
# result, DeleteItem drops the record of a call that failed.
data "aws_iam_policy_document" "idempotency" {
  dynamic "statement" {
    for_each = var.idempotency_table_arn == null ? [] : [var.idempotency_table_arn]
    content {
      sid       = "IdempotencyRecords"
      actions   = ["dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem"]
      resources = [statement.value]
    }
  }
}

# Concern: claim-check payloads (archive, opt-in): one conditional PutObject (IfNoneMatch) per final
# envelope too large for the retry-exhausted queue, under the archive's payloads/ prefix only. Nothing
# is read back by the consumer.
data "aws_iam_policy_document" "payloads" {
  dynamic "statement" {
    for_each = local.native || var.archive == null ? [] : [var.archive]
    content {
      sid       = "ClaimCheckPayloads"
      actions   = ["s3:PutObject"]
      resources = ["${statement.value.bucket_arn}/${statement.value.prefix}payloads/*"]
    }
  }
  dynamic "statement" {
    for_each = local.native || var.archive == null ? [] : compact([var.archive.kms_key_arn])
    content {
      sid       = "ClaimCheckPayloadsKey"
      actions   = ["kms:GenerateDataKey"]
      resources = [statement.value]

      condition {
        test     = "StringEquals"
        variable = "kms:ViaService"
        values   = ["s3.${data.aws_region.current.name}.${data.aws_partition.current.dns_suffix}"]
      }
    }
  }
}

# The function's own concerns (trust, logs, X-Ray, the VPC's network interfaces) and the user's
# policy_statements are modules/function's.
data "aws_iam_policy_document" "consumer" {
  source_policy_documents = [
    data.aws_iam_policy_document.consume.json,
    data.aws_iam_policy_document.in_place.json,
    data.aws_iam_policy_document.send.json,
    data.aws_iam_policy_document.schedule.json,
    data.aws_iam_policy_document.pass_role.json,
    data.aws_iam_policy_document.kms.json,
    data.aws_iam_policy_document.claims.json,
    data.aws_iam_policy_document.claims_kms.json,
    data.aws_iam_policy_document.idempotency.json,
    data.aws_iam_policy_document.payloads.json,
  ]
}

# The role and its policy became optional (role_arn) in 0.2.0, and moved into modules/function after it.
moved {
  from = aws_iam_role.this
  to   = aws_iam_role.this[0]
}

moved {
  from = aws_iam_role_policy.this
  to   = aws_iam_role_policy.this[0]
}

moved {
  from = aws_iam_role.this[0]
  to   = module.function.aws_iam_role.this[0]
}

moved {
  from = aws_iam_role_policy.this[0]
  to   = module.function.aws_iam_role_policy.this[0]
}

moved {
  from = aws_iam_role_policy.extra[0]
  to   = module.function.aws_iam_role_policy.extra[0]
}

moved {
  from = aws_cloudwatch_log_group.this
  to   = module.function.aws_cloudwatch_log_group.this
}

moved {
  from = aws_lambda_function.this
  to   = module.function.aws_lambda_function.this
}
