# Orders arrive on the queue; orders_example.process:handle submits each to a (fake) downstream that
# fails by the order's "behaviour" field. Throttles honour Retry-After, timeouts get their own budget,
# validation errors are never retried, and anything longer than SQS's 15-minute delay goes through
# EventBridge Scheduler.
module "orders" {
  source = "../../modules/scheduled-retry"

  name      = var.name
  package   = coalesce(var.package, "${path.module}/../../dist/examples/scheduled-retry.zip")
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
  tags        = var.tags
}

# Monitoring hooks: the monitoring module (alarms on the DLQ and exhausted-queue depth, message age,
# consumer errors, and a dashboard) plugs in here from these outputs once it exists:
#   queue_arn, dlq_arn, exhausted_queue_arn, function_name.
