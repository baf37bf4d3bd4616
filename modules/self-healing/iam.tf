# One policy document per concern; every statement names exact ARNs (log streams and the schedules of
# the group are the only patterns: their names are made at run time).
locals {
  queue_arns = {
    failures     = aws_sqs_queue.failures.arn
    failures_dlq = aws_sqs_queue.failures_dlq.arn
    exhausted    = aws_sqs_queue.exhausted.arn
    rules_dlq    = aws_sqs_queue.rules_dlq.arn
    redrive_dlq  = aws_sqs_queue.redrive_dlq.arn
    schedule_dlq = aws_sqs_queue.schedule_dlq.arn
  }
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
    resources = [aws_sqs_queue.rules_dlq.arn]

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
    resources = [aws_sqs_queue.failures.arn]
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
  policy = data.aws_iam_policy_document.source.json
}

# --- Lambda roles: trust, logs, tracing --------------------------------------------------------------
data "aws_iam_policy_document" "lambda_trust" {
  statement {
    sid     = "LambdaAssumesRole"
    actions = ["sts:AssumeRole"]

    principals {
      type        = "Service"
      identifiers = ["lambda.amazonaws.com"]
    }
  }
}

data "aws_iam_policy_document" "logs" {
  for_each = {
    enrichment = aws_cloudwatch_log_group.enrichment.arn
    redrive    = aws_cloudwatch_log_group.redrive.arn
  }

  statement {
    sid       = "WriteOwnLogs"
    actions   = ["logs:CreateLogStream", "logs:PutLogEvents"]
    resources = ["${each.value}:log-stream:*"]
  }
}

data "aws_iam_policy_document" "xray" {
  dynamic "statement" {
    for_each = var.tracing ? [1] : []
    content {
      #checkov:skip=CKV_AWS_356:X-Ray's PutTraceSegments and PutTelemetryRecords support no resource-level permissions; "*" is the only resource they accept.
      sid       = "WriteTraces"
      actions   = ["xray:PutTraceSegments", "xray:PutTelemetryRecords"]
      resources = ["*"]
    }
  }
}

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
    resources = [aws_sqs_queue.exhausted.arn, aws_sqs_queue.failures.arn]
  }
}

data "aws_iam_policy_document" "enrichment" {
  source_policy_documents = [
    data.aws_iam_policy_document.enrichment_send.json,
    data.aws_iam_policy_document.logs["enrichment"].json,
    data.aws_iam_policy_document.kms["enrichment"].json,
    data.aws_iam_policy_document.xray.json,
    data.aws_iam_policy_document.network.json,
  ]
}

resource "aws_iam_role" "enrichment" {
  count = var.enrichment_role_arn == null ? 1 : 0

  name                 = local.names.enrichment
  description          = "serverless-retry self-healing ${var.name}: enrichment function of the failure pipe."
  assume_role_policy   = data.aws_iam_policy_document.lambda_trust.json
  permissions_boundary = var.permissions_boundary_arn
  tags                 = var.tags
}

resource "aws_iam_role_policy" "enrichment" {
  count = var.enrichment_role_arn == null ? 1 : 0

  name   = "serverless-retry-enrichment"
  role   = aws_iam_role.enrichment[0].id
  policy = data.aws_iam_policy_document.enrichment.json
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
    resources = [aws_sqs_queue.exhausted.arn, aws_sqs_queue.redrive_dlq.arn]
  }
}

data "aws_iam_policy_document" "redrive" {
  source_policy_documents = [
    data.aws_iam_policy_document.redrive_deliver.json,
    data.aws_iam_policy_document.redrive_schedule.json,
    data.aws_iam_policy_document.redrive_send.json,
    data.aws_iam_policy_document.logs["redrive"].json,
    data.aws_iam_policy_document.kms["redrive"].json,
    data.aws_iam_policy_document.xray.json,
    data.aws_iam_policy_document.network.json,
  ]
}

resource "aws_iam_role" "redrive" {
  count = var.redrive_role_arn == null ? 1 : 0

  name                 = local.names.redrive
  description          = "serverless-retry self-healing ${var.name}: redrive function, re-delivers failed events to their source."
  assume_role_policy   = data.aws_iam_policy_document.lambda_trust.json
  permissions_boundary = var.permissions_boundary_arn
  tags                 = var.tags
}

resource "aws_iam_role_policy" "redrive" {
  count = var.redrive_role_arn == null ? 1 : 0

  name   = "serverless-retry-redrive"
  role   = aws_iam_role.redrive[0].id
  policy = data.aws_iam_policy_document.redrive.json
}

# --- what the functions need in a VPC, and what the user adds ------------------------------------------
# Concern: the network interfaces Lambda creates for the functions in the VPC, with their roles (the
# actions of AWS's AWSLambdaVPCAccessExecutionRole, narrowed to what their resources allow).
data "aws_iam_policy_document" "network" {
  dynamic "statement" {
    for_each = var.vpc == null ? [] : [var.vpc]
    content {
      # Only in the given subnets, with the given security groups (an ENI create is authorised on all
      # three resource types). Subnet and security group IDs are unique across accounts, so any owner
      # account is allowed: a shared VPC's subnets belong to another account.
      sid     = "CreateNetworkInterfacesInSubnets"
      actions = ["ec2:CreateNetworkInterface"]
      resources = concat(
        ["arn:${local.partition}:ec2:${local.region}:${local.account}:network-interface/*"],
        [for id in statement.value.subnet_ids : "arn:${local.partition}:ec2:${local.region}:*:subnet/${id}"],
        [for id in statement.value.security_group_ids : "arn:${local.partition}:ec2:${local.region}:*:security-group/${id}"],
      )
    }
  }

  dynamic "statement" {
    for_each = var.vpc == null ? [] : [var.vpc]
    content {
      # The interfaces' IDs are made at run time, so this account's and region's interfaces: Lambda's
      # guide warns that a DeleteNetworkInterface narrower than that can strand the functions'
      # interfaces (and narrowing it to today's subnets would strand those of yesterday's).
      sid       = "ManageOwnNetworkInterfaces"
      actions   = ["ec2:DeleteNetworkInterface", "ec2:AssignPrivateIpAddresses", "ec2:UnassignPrivateIpAddresses"]
      resources = ["arn:${local.partition}:ec2:${local.region}:${local.account}:network-interface/*"]
    }
  }

  dynamic "statement" {
    for_each = var.vpc == null ? [] : [var.vpc]
    content {
      #checkov:skip=CKV_AWS_356:DescribeNetworkInterfaces and DescribeSubnets support no resource-level permissions; "*" is the only resource they accept, limited here to the functions' region.
      sid       = "DescribeNetwork"
      actions   = ["ec2:DescribeNetworkInterfaces", "ec2:DescribeSubnets"]
      resources = ["*"]

      condition {
        test     = "StringEquals"
        variable = "aws:RequestedRegion"
        values   = [local.region]
      }
    }
  }
}

# Concern: what the user adds to each function's role (<function>_policy_statements), in its own policy.
data "aws_iam_policy_document" "extra" {
  for_each = {
    enrichment = var.enrichment_policy_statements
    redrive    = var.redrive_policy_statements
  }

  dynamic "statement" {
    for_each = each.value
    content {
      sid       = statement.value.sid
      effect    = statement.value.effect
      actions   = statement.value.actions
      resources = statement.value.resources

      dynamic "condition" {
        for_each = statement.value.conditions
        content {
          test     = condition.value.test
          variable = condition.value.variable
          values   = condition.value.values
        }
      }
    }
  }
}

resource "aws_iam_role_policy" "enrichment_extra" {
  count = var.enrichment_role_arn == null && length(var.enrichment_policy_statements) > 0 ? 1 : 0

  name   = "extra"
  role   = aws_iam_role.enrichment[0].id
  policy = data.aws_iam_policy_document.extra["enrichment"].json
}

resource "aws_iam_role_policy" "redrive_extra" {
  count = var.redrive_role_arn == null && length(var.redrive_policy_statements) > 0 ? 1 : 0

  name   = "extra"
  role   = aws_iam_role.redrive[0].id
  policy = data.aws_iam_policy_document.extra["redrive"].json
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
    resources = [aws_sqs_queue.failures.arn]
  }

  statement {
    sid       = "InvokeEnrichment"
    actions   = ["lambda:InvokeFunction"]
    resources = [aws_lambda_function.enrichment.arn]
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
