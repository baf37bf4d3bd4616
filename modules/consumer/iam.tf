locals {
  # Every schedule of the group: arn:<partition>:scheduler:<region>:<account>:schedule/<group>/*
  schedule_arn_pattern = var.scheduler == null ? null : "${replace(var.scheduler.schedule_group_arn, ":schedule-group/", ":schedule/")}/*"

  # The role the module creates, or the one brought (role_arn): no role is created then.
  create_role = var.role_arn == null
  role_arn    = local.create_role ? aws_iam_role.this[0].arn : var.role_arn
  role_name   = local.create_role ? aws_iam_role.this[0].name : element(split("/", var.role_arn), length(split("/", var.role_arn)) - 1)
}

# Concern: who may assume the role.
data "aws_iam_policy_document" "trust" {
  statement {
    sid     = "LambdaAssumesRole"
    actions = ["sts:AssumeRole"]

    principals {
      type        = "Service"
      identifiers = ["lambda.amazonaws.com"]
    }
  }
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

# Concern: writing the function's own logs.
data "aws_iam_policy_document" "logs" {
  statement {
    sid       = "WriteOwnLogs"
    actions   = ["logs:CreateLogStream", "logs:PutLogEvents"]
    resources = ["${aws_cloudwatch_log_group.this.arn}:log-stream:*"]
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

# Concern: X-Ray, only when tracing is on.
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

# Concern: one chain per message (serverless_retry.claims), in the claims table only. Every claim
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

# Concern: the network interfaces Lambda creates for the function in your VPC, with the function's
# role (the actions AWS's AWSLambdaVPCAccessExecutionRole grants, narrowed to what its resources allow).
data "aws_caller_identity" "current" {
  count = var.vpc == null ? 0 : 1
}

data "aws_iam_policy_document" "network" {
  dynamic "statement" {
    for_each = var.vpc == null ? [] : [var.vpc]
    content {
      # Created only in the given subnets, with the given security groups (an ENI create is authorised
      # on all three resource types). Subnet and security group IDs are unique across accounts, so any
      # owner account is allowed: a shared VPC's subnets belong to another account.
      sid     = "CreateNetworkInterfacesInSubnets"
      actions = ["ec2:CreateNetworkInterface"]
      resources = concat(
        ["arn:${data.aws_partition.current.partition}:ec2:${data.aws_region.current.name}:${data.aws_caller_identity.current[0].account_id}:network-interface/*"],
        [for id in statement.value.subnet_ids : "arn:${data.aws_partition.current.partition}:ec2:${data.aws_region.current.name}:*:subnet/${id}"],
        [for id in statement.value.security_group_ids : "arn:${data.aws_partition.current.partition}:ec2:${data.aws_region.current.name}:*:security-group/${id}"],
      )
    }
  }

  dynamic "statement" {
    for_each = var.vpc == null ? [] : [var.vpc]
    content {
      # The interfaces' IDs are made at run time, so this account's and region's interfaces: Lambda's
      # guide warns that a DeleteNetworkInterface narrower than that can strand the function's
      # interfaces (and narrowing it to today's subnets would strand those of yesterday's).
      sid       = "ManageOwnNetworkInterfaces"
      actions   = ["ec2:DeleteNetworkInterface", "ec2:AssignPrivateIpAddresses", "ec2:UnassignPrivateIpAddresses"]
      resources = ["arn:${data.aws_partition.current.partition}:ec2:${data.aws_region.current.name}:${data.aws_caller_identity.current[0].account_id}:network-interface/*"]
    }
  }

  dynamic "statement" {
    for_each = var.vpc == null ? [] : [var.vpc]
    content {
      #checkov:skip=CKV_AWS_356:DescribeNetworkInterfaces and DescribeSubnets support no resource-level permissions; "*" is the only resource they accept, limited here to the function's region.
      sid       = "DescribeNetwork"
      actions   = ["ec2:DescribeNetworkInterfaces", "ec2:DescribeSubnets"]
      resources = ["*"]

      condition {
        test     = "StringEquals"
        variable = "aws:RequestedRegion"
        values   = [data.aws_region.current.name]
      }
    }
  }
}

# Concern: what the user's processor needs besides (policy_statements), in a policy of its own.
data "aws_iam_policy_document" "extra" {
  dynamic "statement" {
    for_each = var.policy_statements
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

data "aws_iam_policy_document" "consumer" {
  source_policy_documents = [
    data.aws_iam_policy_document.consume.json,
    data.aws_iam_policy_document.in_place.json,
    data.aws_iam_policy_document.send.json,
    data.aws_iam_policy_document.schedule.json,
    data.aws_iam_policy_document.pass_role.json,
    data.aws_iam_policy_document.logs.json,
    data.aws_iam_policy_document.kms.json,
    data.aws_iam_policy_document.xray.json,
    data.aws_iam_policy_document.claims.json,
    data.aws_iam_policy_document.claims_kms.json,
    data.aws_iam_policy_document.idempotency.json,
    data.aws_iam_policy_document.network.json,
  ]
}

resource "aws_iam_role" "this" {
  count = local.create_role ? 1 : 0

  name                 = var.name
  description          = local.native ? "SQS consumer ${var.name}: consumes its queue; SQS redelivers and dead-letters." : "serverless-retry consumer ${var.name}: consumes its queue, re-enqueues, schedules and dead-letters its own messages."
  assume_role_policy   = data.aws_iam_policy_document.trust.json
  permissions_boundary = var.permissions_boundary_arn
  tags                 = var.tags

  # A renamed role (such as "<name>-consumer" -> "<name>" on upgrade) is replaced: the new one and its
  # policy first, then the function moves to it, and only then the old one goes, so the function
  # never runs under a deleted role.
  lifecycle {
    create_before_destroy = true
  }
}

resource "aws_iam_role_policy" "this" {
  count = local.create_role ? 1 : 0

  name   = "serverless-retry-consumer"
  role   = aws_iam_role.this[0].id
  policy = data.aws_iam_policy_document.consumer.json

  # With the role: a replaced role's policy stays until the function has moved to the new role.
  lifecycle {
    create_before_destroy = true
  }
}

resource "aws_iam_role_policy" "extra" {
  count = local.create_role && length(var.policy_statements) > 0 ? 1 : 0

  name   = "extra"
  role   = aws_iam_role.this[0].id
  policy = data.aws_iam_policy_document.extra.json

  lifecycle {
    create_before_destroy = true
  }
}

# The role and its policy became optional (role_arn); the role is also renamed from
# "<name>-consumer" to "<name>", which replaces it.
moved {
  from = aws_iam_role.this
  to   = aws_iam_role.this[0]
}

moved {
  from = aws_iam_role_policy.this
  to   = aws_iam_role_policy.this[0]
}
