# Orders arrive on the queue; orders_example.process:handle submits each to a (fake) downstream that
# fails by the order's "behaviour" field. Throttles honour Retry-After, timeouts get their own budget,
# validation errors are never retried, and anything longer than SQS's 15-minute delay goes through
# EventBridge Scheduler.
locals {
  package = coalesce(var.package, "${path.module}/../../dist/examples/scheduled-retry.zip")
}

module "orders" {
  source = "../../modules/scheduled-retry"

  name      = var.name
  package   = local.package
  processor = "orders_example.process:handle"
  timeout   = var.function_timeout

  retry_policy = {
    max_attempts = 5
    backoff      = { strategy = "exponential", base_seconds = 10, max_seconds = 3600, jitter = "full" }
    rules = [
      # 429/503 (or a ThrottlingError): wait as long as the server asks, else a minute. A rule's
      # backoff inherits what it leaves unset (here the cap and the full jitter) from the policy's,
      # so "none" keeps these waits exact.
      { errors = ["ThrottlingError"], http_status = [429, 503], honor_retry_after = true, backoff = { strategy = "fixed", base_seconds = 60, jitter = "none" } },
      # Timeouts are usually transient: a slightly larger budget, every 30 s.
      { errors = ["TimeoutError", "ConnectionError"], max_attempts = 6, backoff = { strategy = "fixed", base_seconds = 30, jitter = "none" } },
      # A bad order will not get better: straight to the retry-exhausted queue.
      { errors = ["ValidationError"], retry = false },
    ]
  }

  environment = var.environment
  # With the archive: a final envelope too large for the exhausted queue goes whole to S3.
  archive = var.archive_enabled ? { bucket_arn = module.archive[0].bucket_arn, prefix = module.archive[0].prefix } : null
  tags    = var.tags
}

# Alarms on the DLQ and exhausted-queue depth, the age of the oldest order, the consumer's errors,
# DeliveryFailed and the Exhausted rate, and one dashboard. The thresholds are the module's defaults;
# alarm_actions (e.g. an SNS topic that emails the on-call) is empty unless you give one.
module "monitoring" {
  source = "../../modules/monitoring"
  count  = var.monitoring ? 1 : 0

  name    = var.name
  pattern = "scheduled-retry"
  queues = {
    source    = module.orders.queue_name
    dlq       = module.orders.dlq_name
    exhausted = module.orders.exhausted_queue_name
    # The retry schedules' dead-letter queue: the DLQ itself here, a queue of its own for FIFO sources.
    schedule_dlq = module.orders.schedule_dlq_name
  }
  # The consumer's name is also the service dimension of its ServerlessRetry metrics.
  function_name = module.orders.function_name
  # The archiver's errors alarmed with the rest; with the archive the queues are buffers, so no
  # alarm for their retention (without it, one fires well before SQS would delete a message).
  functions       = { for a in module.archive : "archiver" => { function_name = a.archiver_function_name, role = "other", alarm_errors = true } }
  archive_enabled = var.archive_enabled

  alarm_actions = var.alarm_actions
  ok_actions    = var.alarm_actions
  tags          = var.tags
}

# The dead set in S3 (archive_enabled): an archiver drains the retry-exhausted queue and the DLQ into
# the bucket as messages arrive, so what the consumer gave up on outlives SQS's 14-day retention; the
# consumer also puts a final envelope too large for the exhausted queue there (a claim check).
module "archive" {
  source = "../../modules/archive"
  count  = var.archive_enabled ? 1 : 0

  name    = var.name
  package = local.package
  sources = [
    { key = "exhausted", queue_arn = module.orders.exhausted_queue_arn, place = "exhausted", source_queue_arn = module.orders.queue_arn },
    { key = "dlq", queue_arn = module.orders.dlq_arn, place = "dlq", source_queue_arn = module.orders.queue_arn },
  ]
  tags = var.tags
}
