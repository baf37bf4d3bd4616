# The reference scenario of pattern 2: two SNS topics, each triggering its own function.
# - charge (orders topic) fails like an HTTP client (503): retried 3 times with exponential backoff,
#   then the retry-exhausted queue with its error;
# - invoice (invoices topic) raises KeyError: in the do-not-retry list, so the retry-exhausted queue at
#   once;
# - audit (orders topic too) never fails: with redrive_to = "function" it sees each order once, however
#   often the charge is retried.
locals {
  package = coalesce(var.package, "${path.module}/../../dist/examples/self-healing.zip")

  topics = toset(["orders", "invoices"])
  functions = {
    charge = {
      handler     = "self_healing_example.charge.handler"
      topic       = "orders"
      description = "self-healing example: charges an order; the payment gateway answers HTTP 503."
    }
    invoice = {
      handler     = "self_healing_example.invoice.handler"
      topic       = "invoices"
      description = "self-healing example: invoices a customer; a message without customer_id raises KeyError."
    }
    audit = {
      handler     = "self_healing_example.audit.handler"
      topic       = "orders"
      description = "self-healing example: records every order; never fails."
    }
  }
}

resource "aws_sns_topic" "example" {
  for_each = local.topics

  name = "${var.name}-${each.key}"
  # The AWS managed key: SNS (and the Scheduler's publish in topic mode) use it on the account's behalf.
  kms_master_key_id = "alias/aws/sns"
  tags              = var.tags
}

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

resource "aws_iam_role" "function" {
  for_each = local.functions

  name               = "${var.name}-${each.key}"
  description        = "${each.value.description} (the self-healing module adds sqs:SendMessage on its failure queue to the sources' roles)"
  assume_role_policy = data.aws_iam_policy_document.lambda_trust.json
  tags               = var.tags
}

resource "aws_cloudwatch_log_group" "function" {
  for_each = local.functions

  name              = "/aws/lambda/${var.name}-${each.key}"
  retention_in_days = 7
  tags              = var.tags
}

data "aws_iam_policy_document" "logs" {
  for_each = local.functions

  statement {
    sid       = "WriteOwnLogs"
    actions   = ["logs:CreateLogStream", "logs:PutLogEvents"]
    resources = ["${aws_cloudwatch_log_group.function[each.key].arn}:log-stream:*"]
  }
}

resource "aws_iam_role_policy" "logs" {
  for_each = local.functions

  name   = "write-own-logs"
  role   = aws_iam_role.function[each.key].id
  policy = data.aws_iam_policy_document.logs[each.key].json
}

resource "aws_lambda_function" "example" {
  for_each = local.functions

  function_name    = "${var.name}-${each.key}"
  description      = each.value.description
  role             = aws_iam_role.function[each.key].arn
  filename         = local.package
  source_code_hash = filebase64sha256(local.package)
  handler          = each.value.handler
  runtime          = "python3.12"
  architectures    = ["arm64"]
  memory_size      = 256
  timeout          = var.function_timeout

  environment {
    variables = merge(var.environment, {
      POWERTOOLS_SERVICE_NAME = "${var.name}-${each.key}"
      POWERTOOLS_LOG_LEVEL    = "INFO"
    })
  }

  tags = var.tags

  depends_on = [aws_cloudwatch_log_group.function, aws_iam_role_policy.logs]
}

# SNS invokes a subscribed function asynchronously: failures then follow the function's event invoke
# config, which the self-healing module sets (no Lambda retries, on failure -> its failure queue).
resource "aws_lambda_permission" "sns" {
  for_each = local.functions

  statement_id  = "sns-${each.value.topic}"
  action        = "lambda:InvokeFunction"
  function_name = aws_lambda_function.example[each.key].function_name
  principal     = "sns.amazonaws.com"
  source_arn    = aws_sns_topic.example[each.value.topic].arn
}

resource "aws_sns_topic_subscription" "example" {
  for_each = local.functions

  topic_arn = aws_sns_topic.example[each.value.topic].arn
  protocol  = "lambda"
  endpoint  = aws_lambda_function.example[each.key].arn

  depends_on = [aws_lambda_permission.sns]
}

module "heal" {
  source = "../../modules/self-healing"

  name    = var.name
  package = local.package

  sources = {
    charge = {
      function_name      = aws_lambda_function.example["charge"].function_name
      function_role_name = aws_iam_role.function["charge"].name
      topic_arn          = aws_sns_topic.example["orders"].arn
      # The first attempt + 3 retries, 10 s, 20 s and 40 s apart; a 429/503 that names a Retry-After
      # waits as long as the server asks (capped at 5 minutes).
      retry_policy = {
        max_attempts = 4
        backoff      = { strategy = "exponential", base_seconds = 10, multiplier = 2, max_seconds = 300, jitter = "none" }
        rules        = [{ http_status = [429, 503], honor_retry_after = true }]
      }
    }
    invoice = {
      function_name      = aws_lambda_function.example["invoice"].function_name
      function_role_name = aws_iam_role.function["invoice"].name
      topic_arn          = aws_sns_topic.example["invoices"].arn
    }
  }

  # Every source without a policy of its own (the invoice): 3 attempts, from 30 s.
  retry_policy = {
    max_attempts = 3
    backoff      = { strategy = "exponential", base_seconds = 30, max_seconds = 600, jitter = "full" }
  }
  # A KeyError is a bug in the data: never retried, whatever the source.
  do_not_retry = ["KeyError"]
  redrive_to   = var.redrive_to

  environment = var.environment
  tags        = var.tags
}

# One dashboard and an alarm on every queue where an event can stop: the failure queue (age) and its
# DLQ, the retry-exhausted queue, and the dead-letter queues of the rule targets, the redrive function
# and the retry schedules; plus the enrichment's and the redrive's errors. The sources are graphed, not
# alarmed: their failures are what the pattern heals (the audit subscriber is no source, but is drawn).
module "monitoring" {
  source = "../../modules/monitoring"
  count  = var.monitoring ? 1 : 0

  name    = var.name
  pattern = "self-healing"
  queues  = module.heal.queue_names
  functions = merge(
    {
      enrichment = { function_name = module.heal.enrichment_function_name, role = "enrichment" }
      redrive    = { function_name = module.heal.redrive_function_name, role = "redrive" }
      audit      = { function_name = aws_lambda_function.example["audit"].function_name, role = "other" }
    },
    { for k in ["charge", "invoice"] : k => { function_name = aws_lambda_function.example[k].function_name, role = "source" } },
    { for a in module.archive : "archiver" => { function_name = a.archiver_function_name, role = "other", alarm_errors = true } },
  )
  # With the archive the terminal queues are buffers: no alarm for their retention.
  archive_enabled = var.archive_enabled

  alarm_actions = var.alarm_actions
  ok_actions    = var.alarm_actions
  tags          = var.tags
}

# The dead set in S3 (archive_enabled): an archiver drains the retry-exhausted queue and every DLQ of
# the pattern into the bucket as records arrive, so what was given up on outlives SQS's retention. A
# failure record in the failure queue's DLQ goes back to the failure queue on a redrive; an exhausted
# event goes back to its function (`redrive --archive ... --to-function`).
module "archive" {
  source = "../../modules/archive"
  count  = var.archive_enabled ? 1 : 0

  name    = var.name
  package = local.package
  sources = [
    { key = "exhausted", queue_arn = module.heal.exhausted_queue_arn, place = "selfheal-exhausted" },
    { key = "failure-dlq", queue_arn = module.heal.failure_dlq_arn, place = "dlq", source_queue_arn = module.heal.failure_queue_arn },
    { key = "rules-dlq", queue_arn = module.heal.rules_dlq_arn, place = "dlq" },
    { key = "redrive-dlq", queue_arn = module.heal.redrive_dlq_arn, place = "dlq" },
    { key = "schedule-dlq", queue_arn = module.heal.schedule_dlq_arn, place = "dlq" },
  ]
  tags = var.tags
}
