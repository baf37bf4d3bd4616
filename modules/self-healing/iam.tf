# One policy document per concern; every statement names exact ARNs (log streams and the schedules of
# the group are the only patterns: their names are made at run time).
locals {
  # The queues made here (modules/queue gives the failure queue and its DLQ their own TLS-only policy).
  queue_arns = merge(
    { exhausted = aws_sqs_queue.exhausted.arn },
    { for k, q in aws_sqs_queue.dlq : "${k}_dlq" => q.arn },
  )
  topic_arns = var.redrive_to == "topic" ? distinct(compact([for s in values(local.sources) : s.topic_arn])) : []
}

# --- queue policies ----------------------------------------------------------------------------------
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

# Concern: the exhausted rules deliver to the retry-exhausted queue (EventBridge sends as
# events.amazonaws.com, so the queue policy must allow it), for these rules only.
data "aws_iam_policy_document" "exhausted_queue" {
  source_policy_documents = [data.aws_iam_policy_document.tls_only["exhausted"].json]

  statement {
    sid       = "ExhaustedRulesSend"
    actions   = ["sqs:SendMessage"]
    resources = [aws_sqs_queue.exhausted.arn]

    principals {
      type        = "Service"
      identifiers = ["events.amazonaws.com"]
    }

    condition {
      test     = "ArnEquals"
      variable = "aws:SourceArn"
      values   = [for r in aws_cloudwatch_event_rule.exhausted : r.arn]
    }
  }
}

# Concern: every rule's target dead-letters here when EventBridge cannot deliver to it.
data "aws_iam_policy_document" "rules_dlq" {
  source_policy_documents = [data.aws_iam_policy_document.tls_only["rules_dlq"].json]

  statement {
    sid       = "RuleTargetsDeadLetter"
    actions   = ["sqs:SendMessage"]
    resources = [aws_sqs_queue.dlq["rules"].arn]

    principals {
      type        = "Service"
      identifiers = ["events.amazonaws.com"]
    }

    condition {
      test     = "ArnEquals"
      variable = "aws:SourceArn"
      values   = concat([for r in aws_cloudwatch_event_rule.retry : r.arn], [for r in aws_cloudwatch_event_rule.exhausted : r.arn])
    }
  }
}

# --- the sources' roles ------------------------------------------------------------------------------
# Concern: Lambda sends a source's destination records with the source function's own role.
data "aws_iam_policy_document" "source" {
  statement {
    sid       = "SendFailureRecords"
    actions   = ["sqs:SendMessage"]
    resources = [module.failure_queue.queue_arn]
  }

  dynamic "statement" {
    for_each = local.kms_key_arns
    content {
      sid       = "EncryptFailureRecords"
      actions   = ["kms:GenerateDataKey", "kms:Decrypt"]
      resources = [statement.value]
    }
  }
}

resource "aws_iam_role_policy" "source" {
  for_each = local.sources

  name   = local.names.source_role_policy
  role   = each.value.function_role_name
  policy = contains(local.s3_source_keys, each.key) ? data.aws_iam_policy_document.source_s3[each.key].json : data.aws_iam_policy_document.source.json
}

# --- Lambda roles (modules/function adds trust, logs, tracing and the VPC's network interfaces) ---
# Concern: SSE-KMS queues (and, in topic mode, encrypted topics).
data "aws_iam_policy_document" "kms" {
  for_each = {
    enrichment = local.kms_key_arns
    redrive    = distinct(concat(local.kms_key_arns, var.redrive_to == "topic" ? var.topic_kms_key_arns : []))
  }

  dynamic "statement" {
    for_each = length(each.value) > 0 ? [each.value] : []
    content {
      sid       = "UseKeys"
      actions   = ["kms:GenerateDataKey", "kms:Decrypt"]
      resources = statement.value
    }
  }
}

# --- enrichment --------------------------------------------------------------------------------------
# Concern: where the enrichment puts what the bus cannot take: the retry-exhausted queue (too large),
# and the failure queue itself (a batch's overflow, for a later batch).
data "aws_iam_policy_document" "enrichment_send" {
  statement {
    sid       = "SendExhaustedAndDeferred"
    actions   = ["sqs:SendMessage"]
    resources = [aws_sqs_queue.exhausted.arn, module.failure_queue.queue_arn]
  }
}

data "aws_iam_policy_document" "enrichment" {
  source_policy_documents = [
    data.aws_iam_policy_document.enrichment_send.json,
    data.aws_iam_policy_document.kms["enrichment"].json,
    data.aws_iam_policy_document.read_records.json,
  ]
}

# --- redrive -----------------------------------------------------------------------------------------
# Concern: re-delivering now: invoke the failed function, or (topic mode) publish to its topic.
data "aws_iam_policy_document" "redrive_deliver" {
  statement {
    sid       = "InvokeSourceFunctions"
    actions   = ["lambda:InvokeFunction"]
    resources = [for s in values(local.sources) : s.function_arn]
  }

  dynamic "statement" {
    for_each = length(local.topic_arns) > 0 ? [local.topic_arns] : []
    content {
      sid       = "PublishToSourceTopics"
      actions   = ["sns:Publish"]
      resources = statement.value
    }
  }
}

# Concern: re-delivering later: one-time schedules in our group only, run as the scheduler role.
data "aws_iam_policy_document" "redrive_schedule" {
  statement {
    sid       = "CreateRetrySchedules"
    actions   = ["scheduler:CreateSchedule"]
    resources = [module.scheduler.schedule_arn_pattern]
  }

  statement {
    sid       = "PassSchedulerRole"
    actions   = ["iam:PassRole"]
    resources = [module.scheduler.scheduler_role_arn]

    condition {
      test     = "StringEquals"
      variable = "iam:PassedToService"
      values   = ["scheduler.amazonaws.com"]
    }
  }
}

# Concern: giving up (the retry-exhausted queue) and the redrive's own failures (its on-failure
# destination, which Lambda sends with this role).
data "aws_iam_policy_document" "redrive_send" {
  statement {
    sid       = "SendExhaustedAndOwnFailures"
    actions   = ["sqs:SendMessage"]
    resources = [aws_sqs_queue.exhausted.arn, aws_sqs_queue.dlq["redrive"].arn]
  }
}

data "aws_iam_policy_document" "redrive" {
  source_policy_documents = [
    data.aws_iam_policy_document.redrive_deliver.json,
    data.aws_iam_policy_document.redrive_schedule.json,
    data.aws_iam_policy_document.redrive_send.json,
    data.aws_iam_policy_document.kms["redrive"].json,
    data.aws_iam_policy_document.read_records.json,
  ]
}

# The functions' roles and policies became optional (enrichment_role_arn, redrive_role_arn).
moved {
  from = aws_iam_role.enrichment
  to   = aws_iam_role.enrichment[0]
}

moved {
  from = aws_iam_role_policy.enrichment
  to   = aws_iam_role_policy.enrichment[0]
}

moved {
  from = aws_iam_role.redrive
  to   = aws_iam_role.redrive[0]
}

moved {
  from = aws_iam_role_policy.redrive
  to   = aws_iam_role_policy.redrive[0]
}

# Then into modules/function, with the functions.
moved {
  from = aws_iam_role.enrichment[0]
  to   = module.enrichment.aws_iam_role.this[0]
}

moved {
  from = aws_iam_role_policy.enrichment[0]
  to   = module.enrichment.aws_iam_role_policy.this[0]
}

moved {
  from = aws_iam_role_policy.enrichment_extra[0]
  to   = module.enrichment.aws_iam_role_policy.extra[0]
}

moved {
  from = aws_iam_role.redrive[0]
  to   = module.redrive.aws_iam_role.this[0]
}

moved {
  from = aws_iam_role_policy.redrive[0]
  to   = module.redrive.aws_iam_role_policy.this[0]
}

moved {
  from = aws_iam_role_policy.redrive_extra[0]
  to   = module.redrive.aws_iam_role_policy.extra[0]
}

# --- pipe --------------------------------------------------------------------------------------------
# Concern: only EventBridge Pipes, for this pipe of this account (confused deputy).
data "aws_iam_policy_document" "pipe_trust" {
  statement {
    sid     = "PipesAssumesRole"
    actions = ["sts:AssumeRole"]

    principals {
      type        = "Service"
      identifiers = ["pipes.amazonaws.com"]
    }

    condition {
      test     = "StringEquals"
      variable = "aws:SourceAccount"
      values   = [local.account]
    }

    condition {
      test     = "ArnEquals"
      variable = "aws:SourceArn"
      values   = [local.pipe_arn]
    }
  }
}

# Concern: each stage of the pipe: read the failure queue, call the enrichment, put on the bus, log.
data "aws_iam_policy_document" "pipe" {
  statement {
    sid       = "ReadFailureQueue"
    actions   = ["sqs:ReceiveMessage", "sqs:DeleteMessage", "sqs:GetQueueAttributes"]
    resources = [module.failure_queue.queue_arn]
  }

  statement {
    sid       = "InvokeEnrichment"
    actions   = ["lambda:InvokeFunction"]
    resources = [module.enrichment.function_arn]
  }

  statement {
    sid       = "PutOnBus"
    actions   = ["events:PutEvents"]
    resources = [aws_cloudwatch_event_bus.this.arn]
  }

  statement {
    sid       = "WritePipeLogs"
    actions   = ["logs:CreateLogStream", "logs:PutLogEvents"]
    resources = ["${aws_cloudwatch_log_group.pipe.arn}:log-stream:*"]
  }

  dynamic "statement" {
    for_each = local.kms_key_arns
    content {
      sid       = "DecryptFailureRecords"
      actions   = ["kms:Decrypt"]
      resources = [statement.value]
    }
  }
}

resource "aws_iam_role" "pipe" {
  name                 = local.names.pipe_role
  description          = "serverless-retry self-healing ${var.name}: the failure pipe (queue -> enrichment -> bus)."
  assume_role_policy   = data.aws_iam_policy_document.pipe_trust.json
  permissions_boundary = var.permissions_boundary_arn
  tags                 = var.tags
}

resource "aws_iam_role_policy" "pipe" {
  name   = "serverless-retry-pipe"
  role   = aws_iam_role.pipe.id
  policy = data.aws_iam_policy_document.pipe.json
}
