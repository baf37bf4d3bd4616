# Pattern 2 (docs/self-healing-contract.md): a failed asynchronous invocation of a source function
# lands in the failure queue (on-failure destination); a pipe hands each batch to the enrichment
# function and puts its output on the bus; the rules (rules.tf) send each event to exactly one place:
# the redrive function (retry) or the retry-exhausted queue (why not).
data "aws_partition" "current" {}
data "aws_region" "current" {}
data "aws_caller_identity" "current" {}

locals {
  partition = data.aws_partition.current.partition
  region    = data.aws_region.current.name
  account   = data.aws_caller_identity.current.account_id

  # The sources without their policies (a map needs one element type; the policies differ in shape).
  # try(): the validation blocks report malformed entries; these must still evaluate meanwhile.
  sources = {
    for k in keys(var.sources) : k => {
      function_name      = try(tostring(var.sources[k].function_name), "")
      function_role_name = try(tostring(var.sources[k].function_role_name), "")
      topic_arn          = try(tostring(var.sources[k].topic_arn), null)
      # Unqualified: the event invoke config, the redrive invoke and the Scheduler target all use it.
      function_arn = "arn:${local.partition}:lambda:${local.region}:${local.account}:function:${try(tostring(var.sources[k].function_name), "")}"
    }
  }
  own_policy_keys = toset([for k in keys(var.sources) : k if try(var.sources[k].retry_policy, null) != null])

  # Each source's effective policy facts: its own policy (modules/retry-policy) or the module default.
  policy_json = {
    for k in keys(local.sources) : k => contains(local.own_policy_keys, k) ? module.source_policy[k].policy_json : module.default_policy.policy_json
  }
  policy_transport = {
    for k in keys(local.sources) : k => contains(local.own_policy_keys, k) ? module.source_policy[k].effective_policy.transport : module.default_policy.effective_policy.transport
  }
  # L(s) of the contract: redrives allowed = the largest budget (policy or retrying rule) - 1.
  retry_limit = {
    for k in keys(local.sources) : k => (contains(local.own_policy_keys, k) ? module.source_policy[k].max_attempts : module.default_policy.max_attempts) - 1
  }

  # Names, and the ARNs and URLs AWS will give them, known at plan time (IAM scopes, the environment
  # size check and the pipe role's trust condition need them before anything exists).
  names = {
    bus                = var.name
    failure_queue      = "${var.name}-failures"
    failure_dlq        = "${var.name}-failures-dlq"
    exhausted_queue    = "${var.name}-exhausted"
    rules_dlq          = "${var.name}-rules-dlq"
    redrive_dlq        = "${var.name}-redrive-dlq"
    schedule_dlq       = "${var.name}-schedule-dlq"
    pipe               = "${var.name}-failures"
    enrichment         = "${var.name}-enrichment"
    redrive            = "${var.name}-redrive"
    schedule_group     = "${var.name}-redrive"
    pipe_role          = "${var.name}-pipe"
    pipe_log_group     = "/aws/vendedlogs/pipes/${var.name}-failures"
    scheduler_role     = "${var.name}-redrive-scheduler"
    source_role_policy = "serverless-retry-self-healing-${var.name}"
  }
  queue_url_prefix = "https://sqs.${local.region}.${data.aws_partition.current.dns_suffix}/${local.account}/"
  queue_arn_prefix = "arn:${local.partition}:sqs:${local.region}:${local.account}:"
  pipe_arn         = "arn:${local.partition}:pipes:${local.region}:${local.account}:pipe/${local.names.pipe}"

  exhausted_max_message_size = coalesce(var.exhausted_max_message_size, var.max_message_size)
  kms_key_arns               = var.kms_key_arn == null ? [] : [var.kms_key_arn]
}

# --- retry policies: one description of the language (modules/retry-policy) for every policy -------
module "default_policy" {
  source       = "../retry-policy"
  retry_policy = var.retry_policy
}

module "source_policy" {
  source   = "../retry-policy"
  for_each = local.own_policy_keys

  retry_policy = var.sources[each.key].retry_policy
}

# --- queues ------------------------------------------------------------------------------------------
locals {
  queue_encryption = {
    sqs_managed_sse_enabled           = var.kms_key_arn == null ? true : null
    kms_master_key_id                 = var.kms_key_arn
    kms_data_key_reuse_period_seconds = var.kms_key_arn == null ? null : 300
  }
}

# Lambda's on-failure destination records of every source, and its DLQ: a source queue and its DLQ as
# modules/queue makes them (`<name>-failures`, `<name>-failures-dlq`). The pipe holds a batch while the
# enrichment runs, hence 6 x its timeout, as AWS advises for Lambda SQS sources. A batch whose
# enrichment or PutEvents keeps failing returns here; after max_receive_count receives SQS moves it to
# the DLQ, so no record loops until its retention expires.
module "failure_queue" {
  source = "../queue"

  name                          = local.names.failure_queue
  exhausted_queue               = false
  visibility_timeout_seconds    = 6 * var.timeout
  message_retention_seconds     = var.message_retention_seconds
  dlq_message_retention_seconds = var.dlq_message_retention_seconds
  max_receive_count             = var.max_receive_count
  # The pipe, not a Lambda event source mapping, reads this queue: AWS's advice of 5 is not binding here.
  allow_max_receive_count_below_5 = true
  max_message_size                = var.max_message_size
  kms_key_arn                     = var.kms_key_arn
  # The failure-records bucket's S3 events (failure_records.tf), when a source writes there.
  source_queue_policy_documents = [for d in data.aws_iam_policy_document.failure_queue_from_s3 : d.json]
  tags                          = var.tags
}

# Every event given up on, as an ExhaustedRecord {outcome, reason, detail}: from the exhausted rules,
# the redrive function (policy budget, max age, too large) and the enrichment (too large for the bus).
resource "aws_sqs_queue" "exhausted" {
  name                      = local.names.exhausted_queue
  message_retention_seconds = var.dlq_message_retention_seconds
  max_message_size          = local.exhausted_max_message_size

  sqs_managed_sse_enabled           = local.queue_encryption.sqs_managed_sse_enabled
  kms_master_key_id                 = local.queue_encryption.kms_master_key_id
  kms_data_key_reuse_period_seconds = local.queue_encryption.kms_data_key_reuse_period_seconds

  tags = var.tags

  lifecycle {
    precondition {
      # The enrichment's last resort for an event too large for the bus is the raw record, verbatim.
      condition     = local.exhausted_max_message_size >= var.max_message_size
      error_message = "exhausted_max_message_size (${local.exhausted_max_message_size}) must be at least max_message_size (${var.max_message_size}): a failure record too large for the bus goes to the retry-exhausted queue whole, as it came through the failure queue."
    }

    precondition {
      # An exhausted S3 record's pointer waits here: the bucket the module makes must keep the object as long.
      condition     = !local.create_records || var.failure_records.expiration_days * 86400 >= var.dlq_message_retention_seconds
      error_message = "failure_records.expiration_days (${var.failure_records.expiration_days}) is shorter than the retry-exhausted queue keeps a message (dlq_message_retention_seconds = ${var.dlq_message_retention_seconds} s): an exhausted record's pointer would outlive its object."
    }
  }
}

# Dead-letter queues of what the machinery itself could not deliver, each `<name>-<key>-dlq`:
# rules: rule targets (EventBridge could not hand an event to the redrive function or the exhausted
# queue); redrive: the redrive function's failed invocations (its on-failure destination); schedule:
# schedules the Scheduler could not deliver (standard, as the Scheduler requires).
resource "aws_sqs_queue" "dlq" {
  for_each = toset(["rules", "redrive", "schedule"])

  name                      = local.names["${each.key}_dlq"]
  message_retention_seconds = var.dlq_message_retention_seconds

  sqs_managed_sse_enabled           = local.queue_encryption.sqs_managed_sse_enabled
  kms_master_key_id                 = local.queue_encryption.kms_master_key_id
  kms_data_key_reuse_period_seconds = local.queue_encryption.kms_data_key_reuse_period_seconds

  tags = var.tags
}

resource "aws_sqs_queue_policy" "exhausted" {
  queue_url = aws_sqs_queue.exhausted.url
  policy    = data.aws_iam_policy_document.exhausted_queue.json
}

resource "aws_sqs_queue_policy" "dlq" {
  for_each = aws_sqs_queue.dlq

  queue_url = each.value.url
  # EventBridge delivers to the rules DLQ itself; the others only refuse plain HTTP.
  policy = each.key == "rules" ? data.aws_iam_policy_document.rules_dlq.json : data.aws_iam_policy_document.tls_only["${each.key}_dlq"].json
}

# The failure queue and its DLQ moved into modules/queue, the other DLQs into one for_each.
moved {
  from = aws_sqs_queue.failures
  to   = module.failure_queue.aws_sqs_queue.source
}

moved {
  from = aws_sqs_queue.failures_dlq
  to   = module.failure_queue.aws_sqs_queue.dlq
}

moved {
  from = aws_sqs_queue_redrive_allow_policy.failures_dlq
  to   = module.failure_queue.aws_sqs_queue_redrive_allow_policy.dlq
}

moved {
  from = aws_sqs_queue_policy.failures
  to   = module.failure_queue.aws_sqs_queue_policy.source
}

moved {
  from = aws_sqs_queue_policy.failures_dlq
  to   = module.failure_queue.aws_sqs_queue_policy.dlq
}

moved {
  from = aws_sqs_queue.rules_dlq
  to   = aws_sqs_queue.dlq["rules"]
}

moved {
  from = aws_sqs_queue.redrive_dlq
  to   = aws_sqs_queue.dlq["redrive"]
}

moved {
  from = aws_sqs_queue.schedule_dlq
  to   = aws_sqs_queue.dlq["schedule"]
}

moved {
  from = aws_sqs_queue_policy.rules_dlq
  to   = aws_sqs_queue_policy.dlq["rules"]
}

moved {
  from = aws_sqs_queue_policy.redrive_dlq
  to   = aws_sqs_queue_policy.dlq["redrive"]
}

moved {
  from = aws_sqs_queue_policy.schedule_dlq
  to   = aws_sqs_queue_policy.dlq["schedule"]
}

# --- the sources: on failure, a destination record to the failure queue (or the bucket) -------------
resource "aws_lambda_function_event_invoke_config" "source" {
  for_each = local.sources

  function_name                = each.value.function_name
  maximum_retry_attempts       = var.maximum_retry_attempts
  maximum_event_age_in_seconds = var.maximum_event_age_in_seconds

  destination_config {
    on_failure {
      destination = contains(local.s3_source_keys, each.key) ? local.records_bucket_arn : module.failure_queue.queue_arn
    }
  }

  # Lambda checks that the function's role may send to the destination when it is configured.
  depends_on = [aws_iam_role_policy.source, module.failure_records]
}

# --- pipe: failure queue -> enrichment -> bus -------------------------------------------------------
resource "aws_cloudwatch_event_bus" "this" {
  name = local.names.bus
  tags = var.tags
}

resource "aws_cloudwatch_log_group" "pipe" {
  #checkov:skip=CKV_AWS_338:Retention is the log_retention_days input (default 30 days of operational logs); set 365 or more where a compliance regime requires it.
  #checkov:skip=CKV_AWS_158:CloudWatch Logs encrypts every log group at rest with keys it manages; a customer managed key is the logs_kms_key_arn input (its key policy must allow logs.<region>.amazonaws.com), not a default, because the module cannot write that key policy for a key it does not own.
  name              = local.names.pipe_log_group
  retention_in_days = var.log_retention_days
  kms_key_id        = var.logs_kms_key_arn
  tags              = var.tags
}

resource "aws_pipes_pipe" "failures" {
  name        = local.names.pipe
  description = "serverless-retry self-healing ${var.name}: failure records -> enrichment -> bus ${local.names.bus}"
  role_arn    = aws_iam_role.pipe.arn
  source      = module.failure_queue.queue_arn
  enrichment  = module.enrichment.function_arn
  target      = aws_cloudwatch_event_bus.this.arn

  source_parameters {
    sqs_queue_parameters {
      batch_size                         = var.pipe_batch_size
      maximum_batching_window_in_seconds = var.pipe_maximum_batching_window_seconds
    }
  }

  # The rules match on exactly these (serverless_retry.selfheal.types BUS_SOURCE / BUS_DETAIL_TYPE).
  target_parameters {
    eventbridge_event_bus_parameters {
      source      = local.bus_source
      detail_type = local.bus_detail_type
    }
  }

  log_configuration {
    level = var.pipe_log_level
    cloudwatch_logs_log_destination {
      log_group_arn = aws_cloudwatch_log_group.pipe.arn
    }
  }

  tags = var.tags

  # The role must be able to read the queue and invoke the enrichment before the pipe starts polling.
  depends_on = [aws_iam_role_policy.pipe]

  # What the enrichment function is given, checked here: the function itself is modules/function's.
  lifecycle {
    precondition {
      condition     = local.enrichment_environment_bytes.planned <= 4096
      error_message = "The enrichment function's environment variables would take ${local.enrichment_environment_bytes.planned} bytes; Lambda allows 4096. Shorten the extra environment or the name."
    }
  }
}
