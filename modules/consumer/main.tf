locals {
  # A plain handler of the user's own (no processor): native SQS retry, nothing of serverless_retry wired.
  native  = var.processor == null
  handler = coalesce(var.handler, "serverless_retry.handlers.consumer.handler")
  # Known at plan time from queue.fifo (the queue module's input); else from the ARN.
  fifo             = var.queue.fifo != null ? var.queue.fifo : endswith(var.queue.arn, ".fifo")
  schedule_dlq_arn = coalesce(var.queue.schedule_dlq_arn, var.queue.dlq_arn)

  # One chain per message (serverless_retry.consumer.claims): only the serverless_retry consumer claims.
  claims             = !local.native && var.claims.enabled
  create_claims      = local.claims && var.claims.table_arn == null
  claims_table_name  = !local.claims ? null : local.create_claims ? "${var.name}-claims" : element(split("/", var.claims.table_arn), 1)
  claims_table_arn   = !local.claims ? null : local.create_claims ? aws_dynamodb_table.claims[0].arn : var.claims.table_arn
  claims_kms_key_arn = local.claims ? var.claims.kms_key_arn : null

  # What the handler reads at cold start (serverless_retry.config); names are the shared contract.
  wired_environment = merge(
    local.native ? {} : {
      SERVERLESS_RETRY_PROCESSOR                   = var.processor
      SERVERLESS_RETRY_POLICY                      = module.policy.policy_json
      SERVERLESS_RETRY_QUEUE_URL                   = var.queue.url
      SERVERLESS_RETRY_QUEUE_ARN                   = var.queue.arn
      SERVERLESS_RETRY_EXHAUSTED_QUEUE_URL         = var.queue.exhausted_queue_url
      SERVERLESS_RETRY_DLQ_ARN                     = local.schedule_dlq_arn
      SERVERLESS_RETRY_MAX_MESSAGE_BYTES           = tostring(var.queue.max_message_size)
      SERVERLESS_RETRY_EXHAUSTED_MAX_MESSAGE_BYTES = tostring(coalesce(var.queue.exhausted_max_message_size, var.queue.max_message_size))
      SERVERLESS_RETRY_QUEUE_RETENTION_SECONDS     = tostring(var.queue.message_retention_seconds)
    },
    {
      POWERTOOLS_SERVICE_NAME      = var.name
      POWERTOOLS_METRICS_NAMESPACE = "ServerlessRetry"
      POWERTOOLS_LOG_LEVEL         = var.log_level
    },
    !local.native && local.fifo ? { SERVERLESS_RETRY_FIFO_ORDER = var.fifo_order } : {},
    local.native || var.scheduler == null ? {} : {
      SERVERLESS_RETRY_SCHEDULE_GROUP     = var.scheduler.schedule_group_name
      SERVERLESS_RETRY_SCHEDULER_ROLE_ARN = var.scheduler.role_arn
    },
    local.native ? {} : {
      # The lease of a claim: a claim older than one visibility timeout has lost its owner.
      SERVERLESS_RETRY_VISIBILITY_TIMEOUT_SECONDS = tostring(var.queue.visibility_timeout_seconds)
    },
    !local.claims ? {} : {
      SERVERLESS_RETRY_CLAIMS_TABLE = local.claims_table_name
    },
    local.native || var.idempotency_table_arn == null ? {} : {
      SERVERLESS_RETRY_IDEMPOTENCY_TABLE = element(split("/", var.idempotency_table_arn), 1)
    },
    local.native || var.archive == null ? {} : {
      SERVERLESS_RETRY_ARCHIVE_BUCKET = element(split(":::", var.archive.bucket_arn), 1)
      SERVERLESS_RETRY_ARCHIVE_PREFIX = var.archive.prefix
    },
  )
  # settings last: what a composing module adds for its handler (e.g. stream-retry's ordering).
  environment = merge(var.environment, local.wired_environment, var.settings)

  # Lambda caps the environment at 4 KB (keys plus values, in bytes); the policy is the usual culprit.
  # The size must be known at plan time, also on a first apply when the queue URLs and ARNs are not:
  # those are bounded from the names, region and partition (an ARN's length is exact; a URL is bounded
  # by the longer of the sqs.<region>.<suffix> and <region>.queue.<suffix> forms).
  url_overhead = length("https://${data.aws_region.current.name}.queue.${data.aws_partition.current.dns_suffix}/123456789012/")
  arn_overhead = length("arn:${data.aws_partition.current.partition}:sqs:${data.aws_region.current.name}:123456789012:")
  value_bounds = {
    SERVERLESS_RETRY_QUEUE_URL           = var.queue.name == null ? null : local.url_overhead + length(var.queue.name)
    SERVERLESS_RETRY_QUEUE_ARN           = var.queue.name == null ? null : local.arn_overhead + length(var.queue.name)
    SERVERLESS_RETRY_EXHAUSTED_QUEUE_URL = var.queue.exhausted_queue_name == null ? null : local.url_overhead + length(var.queue.exhausted_queue_name)
    SERVERLESS_RETRY_DLQ_ARN             = var.queue.schedule_dlq_name == null ? null : local.arn_overhead + length(var.queue.schedule_dlq_name)
    SERVERLESS_RETRY_SCHEDULER_ROLE_ARN  = try(var.scheduler.role_name, null) == null ? null : length("arn:${data.aws_partition.current.partition}:iam::123456789012:role/${var.scheduler.role_name}")
  }
  # A value's UTF-8 bytes, from its base64 form (4 characters per 3 bytes, less the padding).
  value_bytes = {
    for k, v in local.environment : k => (
      lookup(local.value_bounds, k, null) != null ? local.value_bounds[k] :
      length(base64encode(v)) / 4 * 3 - length(replace(base64encode(v), "/[^=]/", ""))
    )
  }
  environment_bytes = sum([for k, v in local.value_bytes : length(k) + v])
  # The exact size, known once the URLs and ARNs are (at apply on a first apply): it also covers a
  # custom endpoint whose URLs are longer than AWS's.
  exact_environment_bytes = sum([
    for k, v in local.environment : length(k) + length(base64encode(v)) / 4 * 3 - length(replace(base64encode(v), "/[^=]/", ""))
  ])
  policy_bytes = lookup(local.value_bytes, "SERVERLESS_RETRY_POLICY", 0)
  extra_bytes  = sum(concat([0], [for k, v in local.value_bytes : length(k) + v if contains(keys(var.environment), k)]))
}

data "aws_region" "current" {}

data "aws_partition" "current" {}

# The policy, checked at plan time by the same description scheduled-retry and self-healing use, and
# what it implies for this queue (transport, Scheduler, budget, longest wait).
module "policy" {
  source = "../retry-policy"

  retry_policy = try(jsondecode(var.retry_policy_json), {})
  fifo         = local.fifo
  fifo_order   = var.fifo_order
}

# The claims of one chain per message: one item per (retry id, attempt), gone by TTL once its message
# can no longer be delivered. On demand: claims come in bursts of failures, and a first delivery that
# succeeds writes nothing, so provisioned capacity would mostly idle.
resource "aws_dynamodb_table" "claims" {
  count = local.create_claims ? 1 : 0

  #checkov:skip=CKV_AWS_119:Encrypted at rest always; with the AWS managed key aws/dynamodb unless claims.kms_key_arn names a customer managed key. A claim holds a retry id, an attempt and a state, no message content.
  #checkov:skip=CKV_AWS_28:Point-in-time recovery restores into a new table, which the running consumer does not read; the claims are short-lived (TTL past the message's retention) and the messages themselves stay in SQS, so a lost table costs at most a second chain for messages in flight, never a message.
  name         = local.claims_table_name
  billing_mode = "PAY_PER_REQUEST"
  hash_key     = "id"

  attribute {
    name = "id"
    type = "S"
  }

  ttl {
    attribute_name = "expiration"
    enabled        = true
  }

  server_side_encryption {
    enabled     = true
    kms_key_arn = var.claims.kms_key_arn
  }

  tags = var.tags
}

# The function, its log group and its role (modules/function); what the role may do is this module's.
module "function" {
  source = "../function"

  function = {
    name                    = var.name
    description             = local.native ? "SQS consumer ${local.handler}: failed records return with the visibility timeout, then go to the DLQ." : "serverless-retry consumer: calls ${var.processor} per message and retries failures by policy."
    handler                 = local.handler
    runtime                 = var.runtime
    architectures           = var.architectures
    memory_size             = var.memory_size
    timeout                 = var.timeout
    reserved_concurrency    = var.reserved_concurrency
    environment             = local.environment
    environment_kms_key_arn = var.environment_kms_key_arn
    code_signing_config_arn = var.code_signing_config_arn
    tracing                 = var.tracing
    vpc                     = var.vpc
  }
  code = { package = var.package, s3_package = var.s3_package, layers = var.layers }
  logs = { retention_days = var.log_retention_days, kms_key_arn = var.logs_kms_key_arn }
  role = {
    arn                      = var.role_arn
    description              = local.native ? "SQS consumer ${var.name}: consumes its queue; SQS redelivers and dead-letters." : "serverless-retry consumer ${var.name}: consumes its queue, re-enqueues, schedules and dead-letters its own messages."
    permissions_boundary_arn = var.permissions_boundary_arn
    policy_name              = "serverless-retry-consumer"
    policy_json              = data.aws_iam_policy_document.consumer.json
    extra_statements         = var.policy_statements
  }
  tags = var.tags
}

resource "aws_lambda_event_source_mapping" "this" {
  event_source_arn                   = var.queue.arn
  function_name                      = module.function.function_arn
  batch_size                         = var.batch_size
  maximum_batching_window_in_seconds = var.maximum_batching_window_seconds > 0 ? var.maximum_batching_window_seconds : null
  # The handler reports only the records whose retry could not be recorded; the rest are deleted.
  function_response_types = ["ReportBatchItemFailures"]

  dynamic "scaling_config" {
    for_each = var.maximum_concurrency == null ? [] : [var.maximum_concurrency]
    content {
      maximum_concurrency = scaling_config.value
    }
  }

  tags = var.tags

  # Lambda checks the role can read the queue when the mapping is created (module.function's
  # outputs come after its role policy).
  depends_on = [module.function]

  lifecycle {
    # What the function is given, checked here: the function itself is modules/function's.
    precondition {
      condition     = local.native ? var.handler != null && var.retry_policy_json == null && var.scheduler == null : var.retry_policy_json != null && var.queue.exhausted_queue_url != null && var.queue.exhausted_queue_arn != null
      error_message = local.native ? "processor is null, so the function is your own plain handler (native SQS retry): give handler (\"module.function\" of a handler that reports batch item failures), and leave retry_policy_json and scheduler null, which only the serverless_retry consumer reads." : "With a processor, the serverless_retry consumer needs retry_policy_json and the queue's exhausted_queue_url and exhausted_queue_arn (the queue module's outputs, with exhausted_queue = true). For your own plain handler instead, set processor = null and give handler."
    }

    precondition {
      condition     = local.environment_bytes <= 4096
      error_message = "The function's environment variables take ${local.environment_bytes} bytes (at most; queue URLs and ARNs are bounded from their names), and Lambda allows 4096: the retry policy takes ${local.policy_bytes}, your extra environment ${local.extra_bytes}, the wiring the rest. Shorten the retry policy (fewer rules, shorter error lists and regexes, leave out fields that repeat the defaults), the extra environment, or the name (it is in every queue URL and ARN)."
    }

    precondition {
      condition     = local.exact_environment_bytes <= 4096
      error_message = "The function's environment variables take ${local.exact_environment_bytes} bytes with the actual queue URLs and ARNs, and Lambda allows 4096: the retry policy takes ${local.policy_bytes}, your extra environment ${local.extra_bytes}. Shorten the retry policy, the extra environment, or the name."
    }

    precondition {
      condition     = var.queue.visibility_timeout_seconds >= 6 * var.timeout
      error_message = "The queue's visibility timeout (${var.queue.visibility_timeout_seconds} s) must be at least 6 x the function timeout (${var.timeout} s), i.e. >= ${6 * var.timeout} s. AWS Lambda's guidance for SQS event sources: set the source queue's visibility timeout to at least six times the timeout you configure on your function, so a batch that is throttled or retried is not received again while it is still being processed."
    }

    # AWS's guidance: maximum concurrency no higher than the function's reserved concurrency.
    precondition {
      condition     = var.maximum_concurrency == null || coalesce(var.reserved_concurrency, 0) == 0 || coalesce(var.maximum_concurrency, 0) <= coalesce(var.reserved_concurrency, 0)
      error_message = "maximum_concurrency (${coalesce(var.maximum_concurrency, 0)}) is above reserved_concurrency (${coalesce(var.reserved_concurrency, 0)}): the mapping would invoke the function more often at once than it may run, and Lambda throttles the extra batches, which come back to the queue one receive nearer the DLQ. Set maximum_concurrency to at most reserved_concurrency, as AWS advises for SQS event sources."
    }

    precondition {
      # A record held back behind its group is received once per failure of the message before it;
      # only the claims table tells those receives from its own attempts (the consumer refuses to
      # start without it: ConfigError).
      condition     = local.native || !local.fifo || var.fifo_order != "ordered" || local.claims
      error_message = "The queue is FIFO with fifo_order = \"ordered\": retries stay in place, and the consumer needs the claims table to tell the receives a record spends held back behind its message group from its own attempts. Keep claims enabled (the default), or set fifo_order = \"unordered\"."
    }

    precondition {
      # FIFO event sources take at most 10 records and no batching window.
      condition     = !local.fifo || (var.batch_size <= 10 && var.maximum_batching_window_seconds == 0)
      error_message = "The queue is FIFO: batch_size must be at most 10 (got ${var.batch_size}) and maximum_batching_window_seconds 0 (got ${var.maximum_batching_window_seconds})."
    }

    precondition {
      condition     = var.batch_size <= 10 || var.maximum_batching_window_seconds >= 1
      error_message = "batch_size ${var.batch_size} is above 10: SQS event sources need maximum_batching_window_seconds >= 1 for batches larger than 10."
    }

    # Native retry: a record that keeps failing is received max_receive_count times, a visibility
    # timeout apart, before SQS moves it to the DLQ; the queue must keep it that long.
    precondition {
      condition     = !local.native || var.queue.max_receive_count == null || try(var.queue.max_receive_count * var.queue.visibility_timeout_seconds < var.queue.message_retention_seconds, true)
      error_message = "A record that keeps failing is received max_receive_count (${coalesce(var.queue.max_receive_count, 0)}) times, a visibility timeout (${var.queue.visibility_timeout_seconds} s) apart, before SQS moves it to the DLQ: ${coalesce(var.queue.max_receive_count, 0) * var.queue.visibility_timeout_seconds} s, which is not shorter than the source queue's retention (${var.queue.message_retention_seconds} s). SQS would delete such a message at the end of its retention instead of dead-lettering it. Raise message_retention_seconds (up to 1209600, 14 days), or lower max_receive_count or the visibility timeout."
    }

    # Retried in place (visibility, FIFO ordered) or by hops, a message lives on in the source queue:
    # SQS deletes it at the end of its retention, whatever attempt it is at.
    precondition {
      condition     = !local.retries_live_in_the_queue || local.longest_life_seconds < var.queue.message_retention_seconds
      error_message = "With ${local.transport_text}, the retry policy can keep a message ${module.policy.max_total_wait_seconds} s in waits plus up to ${module.policy.max_attempts} x ${var.timeout} s of processing = ${local.longest_life_seconds} s, which is not shorter than the source queue's retention (${var.queue.message_retention_seconds} s): SQS would delete a message before its last attempt, unseen. Raise message_retention_seconds (up to 1209600, 14 days), lower the policy's max_attempts, max_seconds or max_age_seconds, or use a transport that re-enqueues a fresh copy (auto, sqs-delay, scheduler${local.fifo ? "; on FIFO: fifo_order = \"unordered\"" : ""})."
    }

    # FIFO ordered: the records behind a failing one in its group are handed back, a receive each,
    # for every attempt of the failing one; then they need their own budget.
    precondition {
      condition     = local.native || !local.fifo_ordered || var.queue.max_receive_count == null || try(var.queue.max_receive_count >= 2 * module.policy.max_attempts + 1, true)
      error_message = "FIFO ordered: a message held back behind a failing one in its message group is received once per attempt of that one (up to max_attempts = ${module.policy.max_attempts} receives) before its own attempts begin, so maxReceiveCount (${coalesce(var.queue.max_receive_count, 0)}) must be at least 2 x ${module.policy.max_attempts} + 1 = ${2 * module.policy.max_attempts + 1}; otherwise SQS moves a message that never failed to the DLQ while it waits. Set max_receive_count to at least ${2 * module.policy.max_attempts + 1} (leave it null in modules/scheduled-retry for that default), or lower max_attempts. A message behind k failing messages needs (k + 1) x max_attempts receives."
    }

    precondition {
      condition     = local.native || module.policy.transport != "visibility" || var.queue.max_receive_count == null || try(var.queue.max_receive_count > module.policy.max_attempts, true)
      error_message = "With ${local.transport_text}, every attempt is a receive of the same message, so maxReceiveCount (${coalesce(var.queue.max_receive_count, 0)}) must exceed the policy's largest max_attempts (${module.policy.max_attempts}); otherwise SQS moves a message to the DLQ before its last attempt, without the reason the retry-exhausted queue would get. Set max_receive_count to at least ${module.policy.max_attempts + 1}, or lower max_attempts."
    }

    precondition {
      condition     = local.native || !(local.fifo && module.policy.effective_policy.transport == "sqs-hops")
      error_message = "transport \"sqs-hops\" delays each hop with a per-message DelaySeconds, which FIFO queues do not support. On a FIFO queue use fifo_order = \"ordered\" (retries in place) or \"unordered\" with transport auto or scheduler."
    }

    precondition {
      condition     = local.native || !(local.fifo && var.fifo_order == "ordered" && contains(["scheduler", "sqs-delay"], module.policy.effective_policy.transport))
      error_message = "fifo_order = \"ordered\" retries a failed message in place, in its message group, but the policy asks for transport \"${module.policy.effective_policy.transport}\", which would take the retry out of its group. Use transport auto or visibility, or fifo_order = \"unordered\" to let retries leave their group."
    }

    precondition {
      # A Scheduler SQS target can pass only a MessageGroupId: AWS requires content-based deduplication
      # on a FIFO target queue.
      condition     = local.native || !(local.fifo && module.policy.needs_scheduler && var.queue.content_based_deduplication == false)
      error_message = "Retries of this FIFO queue go through EventBridge Scheduler (fifo_order = \"unordered\"), which can pass only a MessageGroupId: AWS requires content-based deduplication on a FIFO target queue. Turn it on (the queue module's content_based_deduplication = true), or use fifo_order = \"ordered\"."
    }

    precondition {
      condition     = local.native || !module.policy.needs_scheduler || var.scheduler != null
      error_message = "The retry policy can send retries through EventBridge Scheduler (${local.fifo ? "FIFO, unordered" : "transport ${module.policy.transport} with a cap above 900 s"}), but no scheduler is given: pass the scheduler module's outputs as scheduler, or keep every delay within 900 s (backoff max_seconds) or use transport sqs-delay, visibility or sqs-hops."
    }
  }
}

locals {
  fifo_ordered              = !local.native && local.fifo && var.fifo_order == "ordered"
  retries_live_in_the_queue = !local.native && contains(["visibility", "sqs-hops"], module.policy.transport)
  longest_life_seconds      = module.policy.max_total_wait_seconds + module.policy.max_attempts * var.timeout
  transport_text = (
    local.fifo && var.fifo_order == "ordered" ? "a FIFO queue retried in order (in place, with the visibility timeout)" :
    "transport ${module.policy.transport} (retries ${module.policy.transport == "sqs-hops" ? "hop through" : "stay in"} the source queue)"
  )
}

# Lambda's SQS pollers do not look at reserved concurrency: what they receive beyond it is throttled
# and comes back to the queue, one receive nearer the DLQ. A warning, not an error: 0 is a valid
# emergency stop for the function, and 1 cannot be matched (maximum_concurrency is at least 2).
check "sqs_pollers_within_reserved_concurrency" {
  assert {
    condition     = var.reserved_concurrency == null || (coalesce(var.reserved_concurrency, 0) > 0 && var.maximum_concurrency != null)
    error_message = coalesce(var.reserved_concurrency, -1) == 0 ? "reserved_concurrency = 0 throttles every invocation, but the SQS event source mapping keeps receiving: each batch comes back to the queue one receive nearer the DLQ. To pause the consumer, disable its event source mapping instead." : "reserved_concurrency = ${coalesce(var.reserved_concurrency, -1)} without maximum_concurrency: Lambda's SQS pollers receive more batches than the function may run, and the extra ones are throttled, each time one receive nearer the DLQ. Set maximum_concurrency between 2 and reserved_concurrency (for one at a time, use a FIFO queue with one message group)."
  }
}

# Lambda's recursive loop detection (Lambda developer guide, "Use Lambda recursive loop detection to
# prevent infinite loops"): a function invoked more than 16 times in one chain of requests, traced
# through the X-Ray trace header the SDK adds to its SendMessage, has its next invocation stopped.
# The serverless_retry consumer sends every SQS-delay retry and every delay hop back to its own
# trigger queue, so a chain of more than 16 sends (max_attempts above 16, a long wait taken as 900 s
# hops, the hops fallback while the Scheduler throttles) would be stopped on AWS. Its loop guard is
# its own: every message carries its attempt count and first-failure time in the envelope, and the
# policy's max_attempts and max_age_seconds (checked at plan time by retry-policy) end every chain in
# the exhausted queue. A plain handler of the user's (processor = null), and a consumer that retries
# in place with the visibility timeout (sends nothing to its queue), keep AWS's default: Terminate.
locals {
  # Conditionals, not &&: Terraform evaluates both sides of &&, and a plain handler's queue may not
  # be known at plan time (its ARN from the same apply), which would leave the count unknown.
  sends_to_own_queue = local.native ? false : local.fifo_ordered ? false : module.policy.transport != "visibility"
  recursive_loop     = coalesce(var.recursive_loop, local.sends_to_own_queue ? "Allow" : "Terminate")
}

resource "aws_lambda_function_recursion_config" "this" {
  # Only to allow: Terminate is what Lambda does without one, so a plain function is left untouched.
  count          = local.recursive_loop == "Allow" ? 1 : 0
  function_name  = module.function.function_name
  recursive_loop = "Allow"
}
