# The policy as given (type = any keeps every key): checked at plan time, rendered for
# SERVERLESS_RETRY_POLICY, and what it implies here (Scheduler or not, budget, longest wait). The
# consumer checks the rendered JSON again with the same module (when this one fails, it does not
# report the same problems twice).
module "policy" {
  source = "../retry-policy"

  retry_policy = var.retry_policy
  fifo         = var.fifo
  fifo_order   = var.fifo_order
}

locals {
  visibility_timeout_seconds = coalesce(var.visibility_timeout_seconds, 6 * var.timeout)
  schedule_group_name        = "${var.name}-retries"
  needs_scheduler            = module.policy.needs_scheduler

  # Retried in place (visibility transport), every attempt is a receive of the same message, so the
  # DLQ must wait for more receives than the largest budget. FIFO ordered also hands back the records
  # behind a failing one in its group: each is received once per attempt of the head (its whole
  # budget) and then needs its own, hence 2 x max_attempts + 1. Else Lambda's 5.
  fifo_ordered      = var.fifo && var.fifo_order == "ordered"
  max_receive_count = coalesce(var.max_receive_count, local.fifo_ordered ? max(5, 2 * module.policy.max_attempts + 1) : module.policy.transport == "visibility" ? max(5, module.policy.max_attempts + 1) : 5)
}

module "queue" {
  source = "../queue"

  name                            = var.name
  fifo                            = var.fifo
  content_based_deduplication     = true # a FIFO source's retry schedules can pass only a MessageGroupId
  visibility_timeout_seconds      = local.visibility_timeout_seconds
  message_retention_seconds       = var.message_retention_seconds
  max_receive_count               = local.max_receive_count
  allow_max_receive_count_below_5 = var.allow_max_receive_count_below_5
  max_message_size                = var.max_message_size
  exhausted_max_message_size      = var.exhausted_max_message_size
  kms_key_arn                     = var.kms_key_arn
  tags                            = var.tags
}

module "scheduler" {
  source = "../scheduler"
  count  = local.needs_scheduler ? 1 : 0

  name = local.schedule_group_name
  # Retries go back to the source queue; a schedule that cannot be delivered lands in the schedules'
  # standard dead-letter queue (the DLQ, or <name>-schedule-dlq for a FIFO source). Nothing else.
  target_queue_arns        = [module.queue.queue_arn]
  dead_letter_queue_arns   = [module.queue.schedule_dlq_arn]
  kms_key_arns             = var.kms_key_arn == null ? [] : [var.kms_key_arn]
  permissions_boundary_arn = var.permissions_boundary_arn
  tags                     = var.tags
}

module "consumer" {
  source = "../consumer"

  name              = var.name
  package           = var.package
  s3_package        = var.s3_package
  layers            = var.layers
  processor         = var.processor
  handler           = var.handler
  retry_policy_json = module.policy.policy_json
  fifo_order        = var.fifo_order

  queue = {
    arn                         = module.queue.queue_arn
    url                         = module.queue.queue_url
    visibility_timeout_seconds  = module.queue.visibility_timeout_seconds
    dlq_arn                     = module.queue.dlq_arn
    schedule_dlq_arn            = module.queue.schedule_dlq_arn
    exhausted_queue_url         = module.queue.exhausted_queue_url
    exhausted_queue_arn         = module.queue.exhausted_queue_arn
    max_message_size            = module.queue.max_message_size
    exhausted_max_message_size  = module.queue.exhausted_max_message_size
    kms_key_arn                 = var.kms_key_arn
    fifo                        = var.fifo
    content_based_deduplication = module.queue.content_based_deduplication
    message_retention_seconds   = module.queue.message_retention_seconds
    max_receive_count           = module.queue.max_receive_count
    # Known at plan time (the URLs and ARNs are not before the first apply): they bound the size of
    # the function's environment at plan time.
    name                 = module.queue.queue_name
    exhausted_queue_name = module.queue.exhausted_queue_name
    schedule_dlq_name    = module.queue.schedule_dlq_name
  }

  scheduler = local.needs_scheduler ? {
    schedule_group_name = module.scheduler[0].schedule_group_name
    schedule_group_arn  = module.scheduler[0].schedule_group_arn
    role_arn            = module.scheduler[0].scheduler_role_arn
    role_name           = module.scheduler[0].scheduler_role_name
  } : null

  runtime                         = var.runtime
  architectures                   = var.architectures
  memory_size                     = var.memory_size
  timeout                         = var.timeout
  reserved_concurrency            = var.reserved_concurrency
  tracing                         = var.tracing
  log_retention_days              = var.log_retention_days
  logs_kms_key_arn                = var.logs_kms_key_arn
  environment_kms_key_arn         = var.environment_kms_key_arn
  code_signing_config_arn         = var.code_signing_config_arn
  log_level                       = var.log_level
  environment                     = var.environment
  settings                        = var.settings
  archive                         = var.archive
  batch_size                      = var.batch_size
  maximum_batching_window_seconds = var.maximum_batching_window_seconds
  maximum_concurrency             = var.maximum_concurrency
  idempotency_table_arn           = var.idempotency_table_arn
  claims                          = var.claims
  permissions_boundary_arn        = var.permissions_boundary_arn
  vpc                             = var.vpc
  role_arn                        = var.role_arn
  policy_statements               = var.policy_statements
  tags                            = var.tags
}
