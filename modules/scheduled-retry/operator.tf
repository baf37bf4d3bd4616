# The operator's redrive as a Lambda (serverless_retry.handlers.redrive_queue), off by default: on-call
# engineers invoke it with the options of `serverless-retry redrive` as a JSON event, inside AWS. It may
# only read the retry-exhausted queue and the DLQ and send to the source queue.

locals {
  operator         = var.operator_redrive.enabled
  operator_name    = "${var.name}-redrive"
  operator_sources = [module.queue.exhausted_queue_arn, module.queue.dlq_arn]

  # The role the module creates, or the one brought (operator_redrive.role_arn).
  operator_role_created = local.operator && var.operator_redrive.role_arn == null
  operator_role_arn     = !local.operator ? null : local.operator_role_created ? aws_iam_role.operator[0].arn : var.operator_redrive.role_arn
  operator_role_name    = !local.operator ? null : local.operator_role_created ? aws_iam_role.operator[0].name : element(split("/", var.operator_redrive.role_arn), length(split("/", var.operator_redrive.role_arn)) - 1)
}

# Concern: who may assume the role.
data "aws_iam_policy_document" "operator_trust" {
  count = local.operator ? 1 : 0

  statement {
    sid     = "LambdaAssumesRole"
    actions = ["sts:AssumeRole"]

    principals {
      type        = "Service"
      identifiers = ["lambda.amazonaws.com"]
    }
  }
}

# Concern: taking messages out of the two queues an operator redrives from (and putting back the rest).
data "aws_iam_policy_document" "operator_read" {
  count = local.operator ? 1 : 0

  statement {
    sid = "ReadExhaustedAndDeadLetterQueues"
    actions = [
      "sqs:ReceiveMessage",
      "sqs:DeleteMessage",
      "sqs:ChangeMessageVisibility",
      "sqs:GetQueueAttributes",
    ]
    resources = local.operator_sources
  }
}

# Concern: sending redriven messages back to the source queue, and nowhere else.
data "aws_iam_policy_document" "operator_send" {
  count = local.operator ? 1 : 0

  statement {
    sid       = "SendToSourceQueue"
    actions   = ["sqs:SendMessage", "sqs:GetQueueAttributes"]
    resources = [module.queue.queue_arn]
  }
}

# Concern: SQS's own move task ("native"), which applies to the DLQ only (it is the one a redrive
# policy feeds). Before starting, the function asks either queue for the queues whose redrive policy
# names it (ListDeadLetterSourceQueues): that is how it explains why the retry-exhausted queue cannot
# be moved natively. It starts the task and returns its handle; it never lists or cancels tasks
# (an operator watches one with `serverless-retry redrive --native`, under their own credentials).
data "aws_iam_policy_document" "operator_native" {
  count = local.operator ? 1 : 0

  statement {
    sid       = "CheckDeadLetterSources"
    actions   = ["sqs:ListDeadLetterSourceQueues"]
    resources = local.operator_sources
  }

  statement {
    sid       = "MoveTaskOutOfDeadLetterQueue"
    actions   = ["sqs:StartMessageMoveTask"]
    resources = [module.queue.dlq_arn]
  }
}

# Concern: writing the function's own logs.
data "aws_iam_policy_document" "operator_logs" {
  count = local.operator ? 1 : 0

  statement {
    sid       = "WriteOwnLogs"
    actions   = ["logs:CreateLogStream", "logs:PutLogEvents"]
    resources = ["${aws_cloudwatch_log_group.operator[0].arn}:log-stream:*"]
  }
}

# Concern: SSE-KMS queues. Reading needs Decrypt; sending needs GenerateDataKey (and Decrypt).
data "aws_iam_policy_document" "operator_kms" {
  count = local.operator ? 1 : 0

  dynamic "statement" {
    for_each = var.kms_key_arn == null ? [] : [var.kms_key_arn]
    content {
      sid       = "UseQueueKey"
      actions   = ["kms:Decrypt", "kms:GenerateDataKey"]
      resources = [statement.value]
    }
  }
}

# Concern: the network interfaces Lambda creates for the function in the VPC (as for the consumer:
# see modules/consumer/iam.tf for why each statement is scoped as it is).
data "aws_region" "current" {
  count = local.operator && var.vpc != null ? 1 : 0
}

data "aws_partition" "current" {
  count = local.operator && var.vpc != null ? 1 : 0
}

data "aws_caller_identity" "current" {
  count = local.operator && var.vpc != null ? 1 : 0
}

locals {
  operator_ec2_prefix = local.operator && var.vpc != null ? "arn:${data.aws_partition.current[0].partition}:ec2:${data.aws_region.current[0].name}" : null
}

data "aws_iam_policy_document" "operator_network" {
  count = local.operator ? 1 : 0

  dynamic "statement" {
    for_each = var.vpc == null ? [] : [var.vpc]
    content {
      sid     = "CreateNetworkInterfacesInSubnets"
      actions = ["ec2:CreateNetworkInterface"]
      resources = concat(
        ["${local.operator_ec2_prefix}:${data.aws_caller_identity.current[0].account_id}:network-interface/*"],
        [for id in statement.value.subnet_ids : "${local.operator_ec2_prefix}:*:subnet/${id}"],
        [for id in statement.value.security_group_ids : "${local.operator_ec2_prefix}:*:security-group/${id}"],
      )
    }
  }

  dynamic "statement" {
    for_each = var.vpc == null ? [] : [var.vpc]
    content {
      sid       = "ManageOwnNetworkInterfaces"
      actions   = ["ec2:DeleteNetworkInterface", "ec2:AssignPrivateIpAddresses", "ec2:UnassignPrivateIpAddresses"]
      resources = ["${local.operator_ec2_prefix}:${data.aws_caller_identity.current[0].account_id}:network-interface/*"]
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
        values   = [data.aws_region.current[0].name]
      }
    }
  }
}

# Concern: what an operator's deployment adds (operator_redrive.policy_statements), in its own policy.
data "aws_iam_policy_document" "operator_extra" {
  count = local.operator ? 1 : 0

  dynamic "statement" {
    for_each = var.operator_redrive.policy_statements
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

data "aws_iam_policy_document" "operator" {
  count = local.operator ? 1 : 0

  source_policy_documents = [
    data.aws_iam_policy_document.operator_read[0].json,
    data.aws_iam_policy_document.operator_send[0].json,
    data.aws_iam_policy_document.operator_native[0].json,
    data.aws_iam_policy_document.operator_logs[0].json,
    data.aws_iam_policy_document.operator_kms[0].json,
    data.aws_iam_policy_document.operator_network[0].json,
  ]
}

resource "aws_iam_role" "operator" {
  count = local.operator_role_created ? 1 : 0

  name                 = local.operator_name
  description          = "serverless-retry operator redrive ${var.name}: moves messages from the exhausted queue and DLQ back to the source queue."
  assume_role_policy   = data.aws_iam_policy_document.operator_trust[0].json
  permissions_boundary = var.permissions_boundary_arn
  tags                 = var.tags
}

resource "aws_iam_role_policy" "operator" {
  count = local.operator_role_created ? 1 : 0

  name   = "serverless-retry-operator-redrive"
  role   = aws_iam_role.operator[0].id
  policy = data.aws_iam_policy_document.operator[0].json
}

resource "aws_iam_role_policy" "operator_extra" {
  count = local.operator_role_created && length(var.operator_redrive.policy_statements) > 0 ? 1 : 0

  name   = "extra"
  role   = aws_iam_role.operator[0].id
  policy = data.aws_iam_policy_document.operator_extra[0].json
}

resource "aws_cloudwatch_log_group" "operator" {
  count = local.operator ? 1 : 0
  #checkov:skip=CKV_AWS_338:Retention is the log_retention_days input (default 30 days of operational logs), as for the consumer; set 365 or more where a compliance regime requires it.
  #checkov:skip=CKV_AWS_158:CloudWatch Logs encrypts every log group at rest with keys it manages; a customer managed key is the operator_redrive.logs_kms_key_arn input (its key policy must allow logs.<region>.amazonaws.com), not a default, because the module cannot write that key policy for a key it does not own.

  name              = "/aws/lambda/${local.operator_name}"
  retention_in_days = var.log_retention_days
  kms_key_id        = var.operator_redrive.logs_kms_key_arn
  tags              = var.tags
}

resource "aws_lambda_function" "operator" {
  count = local.operator ? 1 : 0
  #checkov:skip=CKV_AWS_116:An operator invokes it synchronously (aws lambda invoke) and reads the report it returns; a function DLQ only catches asynchronous invocations, and a failed redrive leaves every message where it was.
  #checkov:skip=CKV_AWS_117:VPC is opt-in (the vpc input, shared with the consumer): it calls only the SQS API, which in a VPC needs a NAT gateway or an endpoint.
  #checkov:skip=CKV_AWS_272:Code signing needs a Signer profile and signed S3 artifacts; the zip is deployed from a local path or S3 object whose hash Terraform pins through source_code_hash, as for the consumer.

  function_name = local.operator_name
  description   = "serverless-retry operator redrive: invoke with the options of serverless-retry redrive as a JSON event."
  role          = local.operator_role_arn
  # The consumer's code (module.consumer checks that exactly one of package and s3_package is given).
  filename          = var.package
  s3_bucket         = try(var.s3_package.bucket, null)
  s3_key            = try(var.s3_package.key, null)
  s3_object_version = try(var.s3_package.object_version, null)
  source_code_hash  = var.package != null ? filebase64sha256(var.package) : try(var.s3_package.source_code_hash, null)
  layers            = var.layers
  handler           = "serverless_retry.handlers.redrive_queue.handler"
  runtime           = var.runtime
  architectures     = var.architectures
  memory_size       = var.operator_redrive.memory_size
  timeout           = var.operator_redrive.timeout
  kms_key_arn       = var.operator_redrive.environment_kms_key_arn

  # One pass at a time: two would only compete for the same messages.
  reserved_concurrent_executions = 1

  environment {
    variables = {
      SERVERLESS_RETRY_REDRIVE_FROM_QUEUE_URLS = join(",", [module.queue.exhausted_queue_url, module.queue.dlq_url])
      SERVERLESS_RETRY_REDRIVE_TO_QUEUE_URL    = module.queue.queue_url
      POWERTOOLS_SERVICE_NAME                  = local.operator_name
      POWERTOOLS_LOG_LEVEL                     = var.log_level
    }
  }

  tracing_config {
    mode = "PassThrough"
  }

  dynamic "vpc_config" {
    for_each = var.vpc == null ? [] : [var.vpc]
    content {
      subnet_ids         = vpc_config.value.subnet_ids
      security_group_ids = vpc_config.value.security_group_ids
    }
  }

  tags = var.tags

  depends_on = [aws_cloudwatch_log_group.operator, aws_iam_role_policy.operator, aws_iam_role_policy.operator_extra]
}
