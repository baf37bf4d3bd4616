locals {
  policy = var.retry_policy

  # Render the policy for SERVERLESS_RETRY_POLICY without the attributes left unset: the Python
  # parser treats absent and null alike, and every byte counts against Lambda's 4 KB environment.
  policy_document = merge(
    { for k, v in local.policy : k => v if v != null && !contains(["backoff", "rules"], k) },
    {
      backoff = { for k, v in local.policy.backoff : k => v if v != null }
      rules = [
        for r in local.policy.rules : merge(
          { for k, v in r : k => v if v != null && k != "backoff" },
          r.backoff == null ? {} : { backoff = { for k, v in r.backoff : k => v if v != null } },
        )
      ]
    },
  )
  policy_json = jsonencode(local.policy_document)

  # Mirrors serverless_retry.config.needs_scheduler: the Scheduler is only created (and the consumer
  # only allowed to use it) when some decision of this policy can pick it.
  backoff_caps = concat(
    [local.policy.backoff.max_seconds],
    [for r in local.policy.rules : coalesce(try(r.backoff.max_seconds, null), local.policy.backoff.max_seconds) if r.backoff != null],
  )
  needs_scheduler = (
    local.policy.transport == "scheduler" ||
    (local.policy.transport == "sqs-delay" && var.fifo) ||
    (local.policy.transport == "auto" && (var.fifo || max(local.backoff_caps...) > 900))
  )

  visibility_timeout_seconds = coalesce(var.visibility_timeout_seconds, 6 * var.timeout)
  schedule_group_name        = "${var.name}-retries"
}

module "queue" {
  source = "../queue"

  name                       = var.name
  fifo                       = var.fifo
  visibility_timeout_seconds = local.visibility_timeout_seconds
  message_retention_seconds  = var.message_retention_seconds
  max_receive_count          = var.max_receive_count
  kms_key_arn                = var.kms_key_arn
  tags                       = var.tags
}

module "scheduler" {
  source = "../scheduler"
  count  = local.needs_scheduler ? 1 : 0

  name = local.schedule_group_name
  # Retries go back to the source queue; a schedule that cannot be delivered lands in the DLQ.
  target_queue_arns        = [module.queue.queue_arn]
  dead_letter_queue_arns   = [module.queue.dlq_arn]
  kms_key_arns             = var.kms_key_arn == null ? [] : [var.kms_key_arn]
  permissions_boundary_arn = var.permissions_boundary_arn
  tags                     = var.tags
}

module "consumer" {
  source = "../consumer"

  name              = var.name
  package           = var.package
  processor         = var.processor
  handler           = var.handler
  retry_policy_json = local.policy_json

  queue = {
    arn                        = module.queue.queue_arn
    url                        = module.queue.queue_url
    visibility_timeout_seconds = module.queue.visibility_timeout_seconds
    dlq_arn                    = module.queue.dlq_arn
    exhausted_queue_url        = module.queue.exhausted_queue_url
    exhausted_queue_arn        = module.queue.exhausted_queue_arn
    max_message_size           = module.queue.max_message_size
    kms_key_arn                = var.kms_key_arn
  }

  scheduler = local.needs_scheduler ? {
    schedule_group_name = module.scheduler[0].schedule_group_name
    schedule_group_arn  = module.scheduler[0].schedule_group_arn
    role_arn            = module.scheduler[0].scheduler_role_arn
  } : null

  runtime                         = var.runtime
  architecture                    = var.architecture
  memory_size                     = var.memory_size
  timeout                         = var.timeout
  reserved_concurrency            = var.reserved_concurrency
  tracing                         = var.tracing
  log_retention_days              = var.log_retention_days
  log_level                       = var.log_level
  environment                     = var.environment
  batch_size                      = var.batch_size
  maximum_batching_window_seconds = var.maximum_batching_window_seconds
  maximum_concurrency             = var.maximum_concurrency
  idempotency_table_arn           = var.idempotency_table_arn
  permissions_boundary_arn        = var.permissions_boundary_arn
  tags                            = var.tags
}
