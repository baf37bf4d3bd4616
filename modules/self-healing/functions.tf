# The enrichment (the pipe's, synchronous) and redrive (the retry rules' target, asynchronous)
# functions, both from the serverless_retry package, and the Scheduler that delivers delayed retries.
locals {
  # What each function reads at cold start (serverless_retry.selfheal.config). Built twice: "applied"
  # from the resources, "planned" from the names and ARNs AWS will give them, so that Lambda's 4 KB
  # environment limit is checked at plan time, before anything exists.
  wiring = {
    applied = {
      exhausted_queue_url = aws_sqs_queue.exhausted.url
      failure_queue_url   = aws_sqs_queue.failures.url
      scheduler_role_arn  = module.scheduler.scheduler_role_arn
      schedule_dlq_arn    = aws_sqs_queue.schedule_dlq.arn
    }
    planned = {
      exhausted_queue_url = "${local.queue_url_prefix}${local.names.exhausted_queue}"
      failure_queue_url   = "${local.queue_url_prefix}${local.names.failure_queue}"
      scheduler_role_arn  = "arn:${local.partition}:iam::${local.account}:role/${local.names.scheduler_role}"
      schedule_dlq_arn    = "${local.queue_arn_prefix}${local.names.schedule_dlq}"
    }
  }

  # SERVERLESS_RETRY_SOURCES (SourceConfig by function name); a policy only for sources with their own.
  sources_json = jsonencode({
    for k, s in local.sources : s.function_name => merge(
      { function_arn = s.function_arn },
      s.topic_arn == null ? {} : { topic_arn = s.topic_arn },
      contains(local.own_policy_keys, k) ? { policy = jsondecode(local.policy_json[k]) } : {},
    )
  })

  enrichment_environment = {
    for stage, w in local.wiring : stage => merge(var.environment, {
      SERVERLESS_RETRY_EXHAUSTED_QUEUE_URL         = w.exhausted_queue_url
      SERVERLESS_RETRY_EXHAUSTED_MAX_MESSAGE_BYTES = tostring(local.exhausted_max_message_size)
      SERVERLESS_RETRY_FAILURE_QUEUE_URL           = w.failure_queue_url
      POWERTOOLS_SERVICE_NAME                      = local.names.enrichment
      POWERTOOLS_METRICS_NAMESPACE                 = "ServerlessRetry"
      POWERTOOLS_LOG_LEVEL                         = var.log_level
    })
  }

  redrive_environment = {
    for stage, w in local.wiring : stage => merge(var.environment, {
      SERVERLESS_RETRY_SOURCES                     = local.sources_json
      SERVERLESS_RETRY_POLICY                      = module.default_policy.policy_json
      SERVERLESS_RETRY_REDRIVE_TO                  = var.redrive_to
      SERVERLESS_RETRY_EXHAUSTED_QUEUE_URL         = w.exhausted_queue_url
      SERVERLESS_RETRY_EXHAUSTED_MAX_MESSAGE_BYTES = tostring(local.exhausted_max_message_size)
      SERVERLESS_RETRY_SCHEDULE_GROUP              = local.names.schedule_group
      SERVERLESS_RETRY_SCHEDULER_ROLE_ARN          = w.scheduler_role_arn
      SERVERLESS_RETRY_DLQ_ARN                     = w.schedule_dlq_arn
      POWERTOOLS_SERVICE_NAME                      = local.names.redrive
      POWERTOOLS_METRICS_NAMESPACE                 = "ServerlessRetry"
      POWERTOOLS_LOG_LEVEL                         = var.log_level
    })
  }

  # Lambda caps a function's environment at 4 KB (keys plus values); the sources' policies are the
  # usual culprit.
  redrive_environment_bytes = { for stage, env in local.redrive_environment : stage => sum([for k, v in env : length(k) + length(v)]) }
  enrichment_environment_bytes = {
    for stage, env in local.enrichment_environment : stage => sum([for k, v in env : length(k) + length(v)])
  }
}

locals {
  # What the scheduler role may reach (modules/scheduler scopes each to exactly these ARNs).
  scheduler_targets = {
    function_arns          = [for s in values(local.sources) : s.function_arn]
    topic_arns             = local.topic_arns
    dead_letter_queue_arns = [aws_sqs_queue.schedule_dlq.arn]
    kms_key_arns           = distinct(concat(local.kms_key_arns, var.redrive_to == "topic" ? var.topic_kms_key_arns : []))
  }
}

# Schedules of delayed retries: the group the redrive function creates them in, and the role they run
# as, which may only invoke the source functions (and, in topic mode, publish to their topics).
module "scheduler" {
  source = "../scheduler"

  name                 = local.names.schedule_group
  target_function_arns = local.scheduler_targets.function_arns
  # The universal target aws-sdk:sns:publish: Publish on the topics, in topic mode only.
  target_topic_arns        = local.scheduler_targets.topic_arns
  dead_letter_queue_arns   = local.scheduler_targets.dead_letter_queue_arns
  kms_key_arns             = local.scheduler_targets.kms_key_arns
  permissions_boundary_arn = var.permissions_boundary_arn
  tags                     = var.tags
}

resource "aws_cloudwatch_log_group" "enrichment" {
  #checkov:skip=CKV_AWS_338:Retention is the log_retention_days input (default 30 days of operational logs); set 365 or more where a compliance regime requires it.
  #checkov:skip=CKV_AWS_158:CloudWatch Logs encrypts every log group at rest with keys it manages; a customer managed key is the logs_kms_key_arn input (its key policy must allow logs.<region>.amazonaws.com), not a default, because the module cannot write that key policy for a key it does not own.
  name              = "/aws/lambda/${local.names.enrichment}"
  retention_in_days = var.log_retention_days
  kms_key_id        = var.logs_kms_key_arn
  tags              = var.tags
}

resource "aws_lambda_function" "enrichment" {
  #checkov:skip=CKV_AWS_116:The pipe invokes the enrichment synchronously; a function DLQ only catches asynchronous invocations. A failed batch returns to the failure queue and reaches its DLQ after max_receive_count.
  #checkov:skip=CKV_AWS_117:VPC is opt-in (the vpc input): the enrichment calls only AWS APIs (SQS, CloudWatch Logs), which in a VPC need a NAT gateway or endpoints.
  #checkov:skip=CKV_AWS_272:Code signing needs a Signer profile and signed S3 artifacts; the zip is deployed from a local path or S3 object whose hash Terraform pins through source_code_hash.
  #checkov:skip=CKV_AWS_115:Concurrency is bounded by the pipe (one execution per batch of the failure queue); a reservation would only take capacity from the account's other functions.
  function_name = local.names.enrichment
  description   = "serverless-retry self-healing ${var.name}: turns failure records into bus events (pipe enrichment)."
  role          = local.role_arns.enrichment
  handler       = "serverless_retry.handlers.enrichment.handler"
  runtime       = var.runtime
  architectures = var.architectures
  memory_size   = var.memory_size
  timeout       = var.timeout
  kms_key_arn   = var.environment_kms_key_arn

  filename          = var.package
  s3_bucket         = try(var.s3_package.bucket, null)
  s3_key            = try(var.s3_package.key, null)
  s3_object_version = try(var.s3_package.object_version, null)
  source_code_hash  = local.source_code_hash
  layers            = var.layers

  environment {
    variables = local.enrichment_environment.applied
  }

  tracing_config {
    mode = var.tracing ? "Active" : "PassThrough"
  }

  dynamic "vpc_config" {
    for_each = var.vpc == null ? [] : [var.vpc]
    content {
      subnet_ids         = vpc_config.value.subnet_ids
      security_group_ids = vpc_config.value.security_group_ids
    }
  }

  tags = var.tags

  depends_on = [aws_cloudwatch_log_group.enrichment, aws_iam_role_policy.enrichment, aws_iam_role_policy.enrichment_extra]

  lifecycle {
    precondition {
      condition     = (var.package == null) != (var.s3_package == null)
      error_message = "Give the functions' code once: package (a local zip) or s3_package (an S3 object), not ${var.package == null ? "neither" : "both"}."
    }

    precondition {
      condition     = var.enrichment_role_arn == null || length(var.enrichment_policy_statements) == 0
      error_message = "enrichment_policy_statements add to the role the module creates, but enrichment_role_arn brings your own: attach your statements to it yourself (next to the enrichment_policy_json output), or leave enrichment_role_arn null."
    }

    precondition {
      condition     = local.enrichment_environment_bytes.planned <= 4096
      error_message = "The enrichment function's environment variables would take ${local.enrichment_environment_bytes.planned} bytes; Lambda allows 4096. Shorten the extra environment or the name."
    }
  }
}

resource "aws_cloudwatch_log_group" "redrive" {
  #checkov:skip=CKV_AWS_338:Retention is the log_retention_days input (default 30 days of operational logs); set 365 or more where a compliance regime requires it.
  #checkov:skip=CKV_AWS_158:CloudWatch Logs encrypts every log group at rest with keys it manages; a customer managed key is the logs_kms_key_arn input (its key policy must allow logs.<region>.amazonaws.com), not a default, because the module cannot write that key policy for a key it does not own.
  name              = "/aws/lambda/${local.names.redrive}"
  retention_in_days = var.log_retention_days
  kms_key_id        = var.logs_kms_key_arn
  tags              = var.tags
}

resource "aws_lambda_function" "redrive" {
  #checkov:skip=CKV_AWS_116:EventBridge invokes the redrive asynchronously and its failures go to the on-failure destination of aws_lambda_function_event_invoke_config.redrive (the redrive DLQ), which keeps the error with the event; a function DLQ would keep less.
  #checkov:skip=CKV_AWS_117:VPC is opt-in (the vpc input): the redrive calls only AWS APIs (Lambda, SNS, EventBridge Scheduler, SQS, CloudWatch Logs), which in a VPC need a NAT gateway or endpoints.
  #checkov:skip=CKV_AWS_272:Code signing needs a Signer profile and signed S3 artifacts; the zip is deployed from a local path or S3 object whose hash Terraform pins through source_code_hash.
  #checkov:skip=CKV_AWS_115:Concurrency follows the failure rate of the sources; a reservation would only take capacity from the account's other functions.
  function_name = local.names.redrive
  description   = "serverless-retry self-healing ${var.name}: re-delivers a failed event to its function (or topic), now or by schedule."
  role          = local.role_arns.redrive
  handler       = "serverless_retry.handlers.redrive.handler"
  runtime       = var.runtime
  architectures = var.architectures
  memory_size   = var.memory_size
  timeout       = var.timeout
  kms_key_arn   = var.environment_kms_key_arn

  filename          = var.package
  s3_bucket         = try(var.s3_package.bucket, null)
  s3_key            = try(var.s3_package.key, null)
  s3_object_version = try(var.s3_package.object_version, null)
  source_code_hash  = local.source_code_hash
  layers            = var.layers

  environment {
    variables = local.redrive_environment.applied
  }

  tracing_config {
    mode = var.tracing ? "Active" : "PassThrough"
  }

  dynamic "vpc_config" {
    for_each = var.vpc == null ? [] : [var.vpc]
    content {
      subnet_ids         = vpc_config.value.subnet_ids
      security_group_ids = vpc_config.value.security_group_ids
    }
  }

  tags = var.tags

  depends_on = [aws_cloudwatch_log_group.redrive, aws_iam_role_policy.redrive, aws_iam_role_policy.redrive_extra]

  lifecycle {
    precondition {
      condition     = (var.package == null) != (var.s3_package == null)
      error_message = "Give the functions' code once: package (a local zip) or s3_package (an S3 object), not ${var.package == null ? "neither" : "both"}."
    }

    precondition {
      condition     = var.redrive_role_arn == null || length(var.redrive_policy_statements) == 0
      error_message = "redrive_policy_statements add to the role the module creates, but redrive_role_arn brings your own: attach your statements to it yourself (next to the redrive_policy_json output), or leave redrive_role_arn null."
    }

    precondition {
      condition     = local.redrive_environment_bytes.planned <= 4096
      error_message = "The redrive function's environment variables would take ${local.redrive_environment_bytes.planned} bytes; Lambda allows 4096. The retry policies travel in it (SERVERLESS_RETRY_SOURCES, SERVERLESS_RETRY_POLICY): give fewer sources their own policy, or shorten the policies."
    }

    precondition {
      condition     = contains(["auto", "scheduler"], module.default_policy.effective_policy.transport)
      error_message = "retry_policy.transport must be \"auto\" or \"scheduler\" for self-healing (a delay is a one-time schedule, 0 an immediate invoke), got \"${module.default_policy.effective_policy.transport}\"."
    }
  }
}

# A failed redrive (an API call that failed) raises: Lambda retries it twice, then sends the event with
# the error to the redrive DLQ.
resource "aws_lambda_function_event_invoke_config" "redrive" {
  function_name          = aws_lambda_function.redrive.function_name
  maximum_retry_attempts = 2

  destination_config {
    on_failure {
      destination = aws_sqs_queue.redrive_dlq.arn
    }
  }
}

# EventBridge may invoke the redrive function for the retry rules only.
resource "aws_lambda_permission" "redrive" {
  for_each = local.sources

  statement_id  = "retry-${each.key}"
  action        = "lambda:InvokeFunction"
  function_name = aws_lambda_function.redrive.function_name
  principal     = "events.amazonaws.com"
  source_arn    = aws_cloudwatch_event_rule.retry[each.key].arn
}
