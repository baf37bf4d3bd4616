# The enrichment (the pipe's, synchronous) and redrive (the retry rules' target, asynchronous)
# functions, both from the serverless_retry package, and the Scheduler that delivers delayed retries.
locals {
  # What each function reads at cold start (serverless_retry.selfheal.config). Built twice: "applied"
  # from the resources, "planned" from the names and ARNs AWS will give them, so that Lambda's 4 KB
  # environment limit is checked at plan time, before anything exists.
  wiring = {
    applied = {
      exhausted_queue_url = aws_sqs_queue.exhausted.url
      failure_queue_url   = module.failure_queue.queue_url
      scheduler_role_arn  = module.scheduler.scheduler_role_arn
      schedule_dlq_arn    = aws_sqs_queue.dlq["schedule"].arn
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
    dead_letter_queue_arns = [aws_sqs_queue.dlq["schedule"].arn]
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

# Both functions (modules/function) share the package, runtime, VPC and log settings; each has its
# own role, with what it may do (iam.tf), and its own environment.
locals {
  functions = {
    enrichment = {
      description = "serverless-retry self-healing ${var.name}: turns failure records into bus events (pipe enrichment)."
      handler     = "serverless_retry.handlers.enrichment.handler"
      environment = local.enrichment_environment.applied
      role        = "enrichment function of the failure pipe."
    }
    redrive = {
      description = "serverless-retry self-healing ${var.name}: re-delivers a failed event to its function (or topic), now or by schedule."
      handler     = "serverless_retry.handlers.redrive.handler"
      environment = local.redrive_environment.applied
      role        = "redrive function, re-delivers failed events to their source."
    }
  }
}

module "enrichment" {
  source = "../function"

  function = merge(local.function_settings, {
    name        = local.names.enrichment
    description = local.functions.enrichment.description
    handler     = local.functions.enrichment.handler
    environment = local.functions.enrichment.environment
  })
  code = local.function_code
  logs = local.function_logs
  role = merge(local.function_role, {
    arn              = var.enrichment_role_arn
    description      = "serverless-retry self-healing ${var.name}: ${local.functions.enrichment.role}"
    policy_name      = "serverless-retry-enrichment"
    policy_json      = data.aws_iam_policy_document.enrichment.json
    extra_statements = var.enrichment_policy_statements
    inputs           = "enrichment_role_arn and enrichment_policy_statements"
  })
  tags = var.tags
}

module "redrive" {
  source = "../function"

  function = merge(local.function_settings, {
    name        = local.names.redrive
    description = local.functions.redrive.description
    handler     = local.functions.redrive.handler
    environment = local.functions.redrive.environment
  })
  code = local.function_code
  logs = local.function_logs
  role = merge(local.function_role, {
    arn              = var.redrive_role_arn
    description      = "serverless-retry self-healing ${var.name}: ${local.functions.redrive.role}"
    policy_name      = "serverless-retry-redrive"
    policy_json      = data.aws_iam_policy_document.redrive.json
    extra_statements = var.redrive_policy_statements
    inputs           = "redrive_role_arn and redrive_policy_statements"
  })
  tags = var.tags
}

locals {
  function_settings = {
    runtime                 = var.runtime
    architectures           = var.architectures
    memory_size             = var.memory_size
    timeout                 = var.timeout
    environment_kms_key_arn = var.environment_kms_key_arn
    tracing                 = var.tracing
    vpc                     = var.vpc
  }
  function_code = { package = var.package, s3_package = var.s3_package, layers = var.layers }
  function_logs = { retention_days = var.log_retention_days, kms_key_arn = var.logs_kms_key_arn }
  function_role = { permissions_boundary_arn = var.permissions_boundary_arn }
}

moved {
  from = aws_cloudwatch_log_group.enrichment
  to   = module.enrichment.aws_cloudwatch_log_group.this
}

moved {
  from = aws_lambda_function.enrichment
  to   = module.enrichment.aws_lambda_function.this
}

moved {
  from = aws_cloudwatch_log_group.redrive
  to   = module.redrive.aws_cloudwatch_log_group.this
}

moved {
  from = aws_lambda_function.redrive
  to   = module.redrive.aws_lambda_function.this
}

# A failed redrive (an API call that failed) raises: Lambda retries it twice, then sends the event with
# the error to the redrive DLQ.
resource "aws_lambda_function_event_invoke_config" "redrive" {
  function_name          = module.redrive.function_name
  maximum_retry_attempts = 2

  destination_config {
    on_failure {
      destination = aws_sqs_queue.dlq["redrive"].arn
    }
  }

  # What the redrive function is given, checked here: the function itself is modules/function's.
  lifecycle {
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

# EventBridge may invoke the redrive function for the retry rules only.
resource "aws_lambda_permission" "redrive" {
  for_each = local.sources

  statement_id  = "retry-${each.key}"
  action        = "lambda:InvokeFunction"
  function_name = module.redrive.function_name
  principal     = "events.amazonaws.com"
  source_arn    = aws_cloudwatch_event_rule.retry[each.key].arn
}
