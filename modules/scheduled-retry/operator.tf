# The operator's redrive as a Lambda (serverless_retry.handlers.redrive_queue), off by default: on-call
# engineers invoke it with the options of `serverless-retry redrive` as a JSON event, inside AWS. It may
# only read the retry-exhausted queue and the DLQ and send to the source queue.

locals {
  operator         = var.operator_redrive.enabled
  operator_name    = "${var.name}-redrive"
  operator_sources = [module.queue.exhausted_queue_arn, module.queue.dlq_arn]
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

# The function's own concerns (trust, logs, the VPC's network interfaces) and operator_redrive's
# policy_statements are modules/function's.
data "aws_iam_policy_document" "operator" {
  count = local.operator ? 1 : 0

  source_policy_documents = [
    data.aws_iam_policy_document.operator_read[0].json,
    data.aws_iam_policy_document.operator_send[0].json,
    data.aws_iam_policy_document.operator_native[0].json,
    data.aws_iam_policy_document.operator_kms[0].json,
  ]
}

# The operator's function, its log group and its role (modules/function), from the consumer's code.
module "operator" {
  source = "../function"
  count  = local.operator ? 1 : 0

  function = {
    name                    = local.operator_name
    description             = "serverless-retry operator redrive: invoke with the options of serverless-retry redrive as a JSON event."
    handler                 = "serverless_retry.handlers.redrive_queue.handler"
    runtime                 = var.runtime
    architectures           = var.architectures
    memory_size             = var.operator_redrive.memory_size
    timeout                 = var.operator_redrive.timeout
    environment_kms_key_arn = var.operator_redrive.environment_kms_key_arn
    # One pass at a time: two would only compete for the same messages.
    reserved_concurrency = 1
    environment = {
      SERVERLESS_RETRY_REDRIVE_FROM_QUEUE_URLS = join(",", [module.queue.exhausted_queue_url, module.queue.dlq_url])
      SERVERLESS_RETRY_REDRIVE_TO_QUEUE_URL    = module.queue.queue_url
      POWERTOOLS_SERVICE_NAME                  = local.operator_name
      POWERTOOLS_LOG_LEVEL                     = var.log_level
    }
    vpc = var.vpc
  }
  code = { package = var.package, s3_package = var.s3_package, layers = var.layers }
  logs = { retention_days = var.log_retention_days, kms_key_arn = var.operator_redrive.logs_kms_key_arn }
  role = {
    arn                      = var.operator_redrive.role_arn
    description              = "serverless-retry operator redrive ${var.name}: moves messages from the exhausted queue and DLQ back to the source queue."
    permissions_boundary_arn = var.permissions_boundary_arn
    policy_name              = "serverless-retry-operator-redrive"
    policy_json              = data.aws_iam_policy_document.operator[0].json
    extra_statements         = var.operator_redrive.policy_statements
    inputs                   = "operator_redrive.role_arn and operator_redrive.policy_statements"
  }
  tags = var.tags
}

moved {
  from = aws_iam_role.operator[0]
  to   = module.operator[0].aws_iam_role.this[0]
}

moved {
  from = aws_iam_role_policy.operator[0]
  to   = module.operator[0].aws_iam_role_policy.this[0]
}

moved {
  from = aws_iam_role_policy.operator_extra[0]
  to   = module.operator[0].aws_iam_role_policy.extra[0]
}

moved {
  from = aws_cloudwatch_log_group.operator[0]
  to   = module.operator[0].aws_cloudwatch_log_group.this
}

moved {
  from = aws_lambda_function.operator[0]
  to   = module.operator[0].aws_lambda_function.this
}
