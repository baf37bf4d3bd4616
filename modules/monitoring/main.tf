locals {
  queues  = var.queues
  healing = var.pattern == "self-healing"
  # The queue roles each pattern has (the self-healing ones are modules/self-healing's queue_names).
  pattern_roles = {
    "scheduled-retry" = ["source", "dlq", "exhausted", "schedule_dlq"]
    "native-retry"    = ["source", "dlq"]
    "self-healing"    = ["failure", "failure_dlq", "exhausted", "rules_dlq", "redrive_dlq", "schedule_dlq"]
  }
  foreign_roles = sort([for role, queue in local.queues : role if queue != null && !contains(local.pattern_roles[var.pattern], role)])
  healing_roles = sort([for key, f in var.functions : "${key} (${f.role})" if contains(["enrichment", "redrive", "source"], f.role) && !local.healing])

  # The consumer module sets POWERTOOLS_SERVICE_NAME to its name, which is also the function's. Only our
  # consumer (scheduled-retry) writes the outcome metrics.
  service    = var.pattern == "scheduled-retry" ? (var.service != null ? var.service : var.function_name) : null
  period     = var.evaluation.period_seconds
  datapoints = coalesce(var.evaluation.datapoints_to_alarm, var.evaluation.evaluation_periods)

  # Native retry: a failing record is received every visibility timeout V and SQS moves it to the DLQ
  # about maxReceiveCount x V after its first receive (the window). The records_failing alarm counts
  # receives that ended without a delete (received - deleted, per period): a period of at least V
  # holds at least one receive of every failing record, and the alarm looks at 2 periods of which 1
  # must breach, so it stays in ALARM between receives. It fires at most one period after the first
  # failed receive, plus a minute for SQS to publish the metric and one for the alarm to evaluate.
  native               = var.pattern == "native-retry"
  records_failing      = local.native && local.queues.source != null && var.source_redrive != null
  redrive_visibility   = try(var.source_redrive.visibility_timeout_seconds, 0)
  redrive_window       = try(var.source_redrive.max_receive_count * var.source_redrive.visibility_timeout_seconds, 0)
  failing_period       = max(60, ceil(local.redrive_visibility / 60) * 60)
  failing_fires_within = local.failing_period + 120
  # ApproximateAgeOfOldestMessage leaves a message out from its third receive on (a poison pill), so
  # for native retry the default age threshold is 2 x V: it fires before the metric loses the message.
  oldest_age_threshold = coalesce(var.thresholds.oldest_message_age_seconds, local.native && var.source_redrive != null ? max(60, 2 * local.redrive_visibility) : 1800)

  # Descriptions give commands one can paste: a queue URL is looked up from its name. `q` and `url`
  # have every role, "-" where none is given (those descriptions are never used).
  queue_url = {
    for role, queue in local.queues : role => "$(aws sqs get-queue-url --queue-name ${queue} --query QueueUrl --output text)" if queue != null
  }
  q               = { for role, queue in local.queues : role => coalesce(queue, "-") }
  url             = { for role, queue in local.queues : role => lookup(local.queue_url, role, "-") }
  inspect_command = try("serverless-retry inspect --queue-url ${local.queue_url.exhausted}", "serverless-retry inspect --queue-url <exhausted queue URL>")
  redrive_command = (local.healing
    ? "serverless-retry redrive --from-queue-url ${try(local.queue_url.exhausted, "<exhausted queue URL>")} --to-function"
    : "serverless-retry redrive --from-queue-url ${try(local.queue_url.exhausted, "<exhausted queue URL>")} --to-queue-url ${try(local.queue_url.source, "<source queue URL>")}"
  )

  # --- queue alarms: one concern per queue role and metric, described by pattern ----------------------
  depth = "ApproximateNumberOfMessagesVisible"
  age   = "ApproximateAgeOfOldestMessage"
  queue_concerns = {
    dlq_depth          = { role = "dlq", metric = local.depth, threshold = var.thresholds.dlq_depth }
    schedule_dlq_depth = { role = "schedule_dlq", metric = local.depth, threshold = var.thresholds.dlq_depth }
    exhausted_depth    = { role = "exhausted", metric = local.depth, threshold = var.thresholds.exhausted_depth }
    oldest_message_age = { role = "source", metric = local.age, threshold = local.oldest_age_threshold }
    failure_queue_age  = { role = "failure", metric = local.age, threshold = local.oldest_age_threshold }
    failure_dlq_depth  = { role = "failure_dlq", metric = local.depth, threshold = var.thresholds.dlq_depth }
    rules_dlq_depth    = { role = "rules_dlq", metric = local.depth, threshold = var.thresholds.dlq_depth }
    redrive_dlq_depth  = { role = "redrive_dlq", metric = local.depth, threshold = var.thresholds.dlq_depth }
  }
  queue_descriptions = {
    "scheduled-retry" = {
      dlq_depth          = <<-EOT
        serverless-retry: more than ${var.thresholds.dlq_depth} message(s) in the DLQ
        ${local.q.dlq}. They are records the consumer could not hand on (sending a retry, a
        schedule or an exhausted copy kept failing, or whole batches failed) maxReceiveCount times,
        or retry schedules the Scheduler could not deliver. Find the error in the consumer's logs
        ("SendMessageBatch failed", "CreateSchedule failed", or the invocation's exception), fix it,
        then move the messages back with SQS DLQ redrive: aws sqs start-message-move-task
        --source-arn <ARN of ${local.q.dlq}>.
      EOT
      schedule_dlq_depth = <<-EOT
        serverless-retry: more than ${var.thresholds.dlq_depth} message(s) in
        ${local.q.schedule_dlq}, the dead-letter queue of the retry schedules: EventBridge
        Scheduler could not deliver those retries to the source queue (e.g. its role lost
        sqs:SendMessage or the queue's key, or the queue was deleted). Each dead-letter event
        names its schedule and the error. Fix the cause, then look at them (removes nothing):
        serverless-retry inspect --queue-url ${local.url.schedule_dlq}.
      EOT
      exhausted_depth    = <<-EOT
        serverless-retry: more than ${var.thresholds.exhausted_depth} message(s) in the
        retry-exhausted queue ${local.q.exhausted}. The consumer gave up on them (retry budget
        or max age used up, non-retryable error, invalid envelope, too large to retry); each
        envelope says why. Inspect (removes nothing): ${local.inspect_command}. Once the cause is
        fixed, redrive with a fresh budget: ${local.redrive_command} --dry-run, then with --yes
        instead of --dry-run.
      EOT
      oldest_message_age = <<-EOT
        serverless-retry: the oldest message in ${local.q.source} is older than
        ${local.oldest_age_threshold} s, so the consumer is not keeping up or not
        consuming. Check the function's Errors and Throttles (reserved or maximum concurrency), that
        its SQS event source mapping is Enabled, and the ${var.name} dashboard. A healthy retry
        waits in the queue at most 900 s (SQS delay), or the policy's max_seconds with the
        visibility transport.
      EOT
    }
    "native-retry" = {
      dlq_depth          = <<-EOT
        serverless-retry native retry: more than ${var.thresholds.dlq_depth} message(s) in the DLQ
        ${local.q.dlq}: the consumer's handler failed each of them maxReceiveCount times (SQS moved
        them after the last visibility timeout). Find the handler's exception for those records in
        the consumer's logs, fix it, then move them back to the source queue with SQS DLQ redrive:
        serverless-retry redrive --from-queue-url ${local.url.dlq} --native (or aws sqs
        start-message-move-task --source-arn <ARN of ${local.q.dlq}>).
      EOT
      oldest_message_age = <<-EOT
        serverless-retry native retry: the oldest message in ${local.q.source} is older than
        ${local.oldest_age_threshold} s: the consumer is not keeping up, not consuming, or keeps
        failing a message that waits out the visibility timeout between receives (SQS stops counting
        a message here from its third receive on: the records-failing alarm sees it). Check the
        function's Errors and Throttles, that its SQS event source mapping is Enabled, and the
        ${var.name} dashboard.
      EOT
    }
    "self-healing" = {
      failure_queue_age  = <<-EOT
        serverless-retry self-healing: the oldest failure record in ${local.q.failure} is older
        than ${local.oldest_age_threshold} s: the pipe is not taking records (stopped,
        failing, or its role lost access to the queue) or the enrichment keeps failing. A healthy
        record waits only for the pipe's next poll. Check the pipe's state and log group and the
        enrichment function's errors; after maxReceiveCount the records go to ${local.q.failure_dlq}.
      EOT
      failure_dlq_depth  = <<-EOT
        serverless-retry self-healing: more than ${var.thresholds.dlq_depth} failure record(s) in
        ${local.q.failure_dlq}: the pipe could not enrich them or put them on the bus
        maxReceiveCount times (the enrichment function failing, an SQS send it needs refused,
        PutEvents refused). Each is a Lambda destination record. Fix the cause (the enrichment's
        logs, the pipe's log group), then move them back to the failure queue: aws sqs
        start-message-move-task --source-arn <ARN of ${local.q.failure_dlq}>, or re-invoke each
        failed function directly: serverless-retry redrive --from-queue-url ${local.url.failure_dlq}
        --to-function --dry-run.
      EOT
      exhausted_depth    = <<-EOT
        serverless-retry self-healing: more than ${var.thresholds.exhausted_depth} event(s) in the
        retry-exhausted queue ${local.q.exhausted}: the rules or the redrive gave up on them
        (retry budget spent, do-not-retry error, unknown source, invalid failure record, too large);
        each record says why. Inspect (removes nothing): ${local.inspect_command}. Once the cause is
        fixed, re-invoke the functions that failed: ${local.redrive_command} --dry-run, then with --yes
        instead of --dry-run (--reset-attempts for a fresh budget).
      EOT
      rules_dlq_depth    = <<-EOT
        serverless-retry self-healing: EventBridge could not deliver more than
        ${var.thresholds.dlq_depth} failure event(s) to a rule target (the redrive function or the
        retry-exhausted queue) and put them in ${local.q.rules_dlq}: a permission (the redrive
        function's resource policy, the exhausted queue's policy or key) or a deleted target. Each
        message is the bus event with the error in its attributes: serverless-retry inspect
        --queue-url ${local.url.rules_dlq}.
      EOT
      redrive_dlq_depth  = <<-EOT
        serverless-retry self-healing: the redrive function failed more than
        ${var.thresholds.dlq_depth} retry event(s) after Lambda's own retries, and its on-failure
        destination put them in ${local.q.redrive_dlq} (an async Invoke of the source, Publish,
        CreateSchedule or SendMessage refused: its logs say which). Once fixed, run the redrive
        again with each event as it was: serverless-retry redrive --from-queue-url
        ${local.url.redrive_dlq} --to-function --reset-attempts --dry-run.
      EOT
      schedule_dlq_depth = <<-EOT
        serverless-retry self-healing: EventBridge Scheduler could not deliver more than
        ${var.thresholds.dlq_depth} delayed retr(ies) to the source function or topic and put them
        in ${local.q.schedule_dlq} (the scheduler role lost lambda:InvokeFunction or sns:Publish, or
        the target was deleted). Each dead-letter event names its schedule and the error:
        serverless-retry inspect --queue-url ${local.url.schedule_dlq}.
      EOT
    }
  }
  queue_alarms = {
    for concern, description in local.queue_descriptions[var.pattern] : concern => {
      namespace   = "AWS/SQS"
      metric      = local.queue_concerns[concern].metric
      dimensions  = { QueueName = local.queues[local.queue_concerns[concern].role] }
      statistic   = "Maximum"
      threshold   = local.queue_concerns[concern].threshold
      description = description
    }
    # A standard source's retry schedules dead-letter to the DLQ, already watched.
    if local.queues[local.queue_concerns[concern].role] != null && !(concern == "schedule_dlq_depth" && local.queues.schedule_dlq == local.queues.dlq)
  }

  # --- function alarms: the consumer (function_name) and the others (functions) -----------------------
  function_errors_text = {
    consumer   = "the consumer function %s failed more than %d whole invocation(s) in %d s: an exception outside the per-record handling (bad configuration at cold start, timeout, out of memory). Records that fail one by one are retried by policy and do not count here. Every record of a failed batch comes back after the visibility timeout and reaches the DLQ after maxReceiveCount. Read the error in the function's logs (/aws/lambda/%s)."
    native     = "the consumer function %s (a plain handler, native SQS retry) failed more than %d whole invocation(s) in %d s: an exception the handler did not turn into batch item failures, a timeout, out of memory or bad configuration. Every record of a failed batch comes back after the visibility timeout and reaches the DLQ after maxReceiveCount; records the handler reports as failed do not count here (the records-failing alarm counts them). Read the error in /aws/lambda/%s."
    enrichment = "the pipe's enrichment function %s failed more than %d invocation(s) in %d s: each failed pipe batch returns to the failure queue (its DLQ after maxReceiveCount). It fails only when an SQS send it needs is refused (\"SQS send failed\" in its logs) or on a crash, timeout or bad configuration: /aws/lambda/%s."
    redrive    = "the redrive function %s failed more than %d invocation(s) in %d s: Lambda retries each failed retry event twice, then its on-failure destination (the redrive DLQ) keeps it. Its logs (/aws/lambda/%s) name the call that failed: the source's async Invoke, Publish, CreateSchedule or SendMessage."
    source     = "the self-healing source %s failed more than %d invocation(s) in %d s. Each failure goes to the failure queue and is retried by its policy, which is expected while a dependency is down; see the retry-exhausted queue for what was given up and /aws/lambda/%s for the errors."
    other      = "the function %s failed more than %d invocation(s) in %d s: read the error in /aws/lambda/%s."
  }
  function_alarms = {
    # The consumer keeps its key function_errors; the others are <key>_function_errors.
    for key, f in local.all_functions : (f.role == "consumer" ? "function_errors" : "${key}_function_errors") => {
      namespace   = "AWS/Lambda"
      metric      = "Errors"
      dimensions  = { FunctionName = f.function_name }
      statistic   = "Sum"
      threshold   = var.thresholds.function_errors
      description = "serverless-retry: ${format(local.function_errors_text[f.role == "consumer" && local.native ? "native" : f.role], f.function_name, var.thresholds.function_errors, local.period, f.function_name)}"
    } if f.alarm_errors
  }

  # One alarm per concern, each on one metric. Keys are the concerns (and the alarm_arns keys).
  metric_alarms = merge(
    local.queue_alarms,
    local.function_alarms,
    local.service == null ? {} : {
      delivery_failed = {
        namespace   = var.metrics_namespace
        metric      = "DeliveryFailed"
        dimensions  = { service = local.service }
        statistic   = "Sum"
        threshold   = var.thresholds.delivery_failed
        description = <<-EOT
          serverless-retry: the consumer (service ${local.service}) could not send the
          delayed retry, schedule or exhausted copy of more than ${var.thresholds.delivery_failed}
          message(s) in ${local.period} s. Nothing is lost yet: those records went back to the queue
          as batch item failures, but they reach the DLQ after maxReceiveCount if this persists. Look
          for "SendMessageBatch failed" or "CreateSchedule failed" in the consumer's logs: usually
          IAM, KMS, a Scheduler quota or throttling.
        EOT
      }
    },
  )

  # The Exhausted rate: the consumer's outcome counters (EMF, dimension service), combined below.
  outcome_metrics = {
    processed        = "Processed"
    exhausted        = "Exhausted"
    non_retryable    = "NonRetryable"
    invalid_envelope = "InvalidEnvelope"
  }
  # Only Processed is written on every invocation; the others only when non-zero, hence FILL.
  finished_expression          = join(" + ", [for id in keys(local.outcome_metrics) : "FILL(${id}, 0)"])
  exhausted_percent_expression = "IF(finished >= ${var.thresholds.exhausted_min_messages}, 100 * FILL(exhausted, 0) / finished, 0)"
  exhausted_rate_description = local.service == null ? null : replace(trimspace(<<-EOT
    serverless-retry: more than ${var.thresholds.exhausted_percent}% of the messages the consumer
    (service ${local.service}) finished in ${local.period} s used up their retry budget (Exhausted /
    (Processed + Exhausted + NonRetryable + InvalidEnvelope), evaluated when at least
    ${var.thresholds.exhausted_min_messages} finished): a dependency fails for longer than the retry
    policy waits. Inspect (removes nothing): ${local.inspect_command}. After the fix, redrive:
    ${local.redrive_command} --dry-run, then with --yes instead of --dry-run.
  EOT
  ), "\n", " ")

  records_failing_description = !local.records_failing ? null : replace(trimspace(<<-EOT
    serverless-retry native retry: more than ${var.thresholds.records_failing} receive(s) of
    ${local.q.source} in ${local.failing_period} s ended without a delete: the handler reported
    those records as batch item failures, or the invocation failed or was throttled. Each comes back
    after the visibility timeout (${local.redrive_visibility} s) and SQS moves it to the DLQ after
    maxReceiveCount, about ${local.redrive_window} s after its first receive; this alarm fires
    within about ${local.failing_fires_within} s of it, so a fix (a terraform apply of the handler)
    deployed in the next ${local.redrive_window - local.failing_fires_within} s still saves the
    backlog. Read the handler's exception for each failed record in
    /aws/lambda/${coalesce(var.function_name, "<consumer function>")}; see the backlog without
    receiving it: serverless-retry inspect --queue-url ${local.url.source}.
  EOT
  ), "\n", " ")

  # CloudWatch takes descriptions of one line, up to 1024 characters.
  descriptions = { for concern, alarm in local.metric_alarms : concern => replace(trimspace(alarm.description), "\n", " ") }
}

resource "aws_cloudwatch_metric_alarm" "this" {
  for_each = local.metric_alarms

  alarm_name          = "${var.name}-${replace(each.key, "_", "-")}"
  alarm_description   = local.descriptions[each.key]
  namespace           = each.value.namespace
  metric_name         = each.value.metric
  dimensions          = each.value.dimensions
  statistic           = each.value.statistic
  period              = local.period
  evaluation_periods  = var.evaluation.evaluation_periods
  datapoints_to_alarm = local.datapoints
  comparison_operator = "GreaterThanThreshold"
  threshold           = each.value.threshold
  # No data means an idle queue or function (SQS publishes for a queue while it holds messages).
  treat_missing_data = "notBreaching"

  actions_enabled = true
  alarm_actions   = var.alarm_actions
  ok_actions      = var.ok_actions

  tags = var.tags

  lifecycle {
    precondition {
      condition     = length(local.descriptions[each.key]) <= 1024
      error_message = "The ${each.key} alarm's description exceeds CloudWatch's 1024 characters: shorten the queue names or name."
    }
  }
}

resource "aws_cloudwatch_metric_alarm" "exhausted_rate" {
  count = local.service == null ? 0 : 1

  alarm_name          = "${var.name}-exhausted-rate"
  alarm_description   = local.exhausted_rate_description
  evaluation_periods  = var.evaluation.evaluation_periods
  datapoints_to_alarm = local.datapoints
  comparison_operator = "GreaterThanThreshold"
  threshold           = var.thresholds.exhausted_percent
  treat_missing_data  = "notBreaching"

  dynamic "metric_query" {
    for_each = local.outcome_metrics
    content {
      id = metric_query.key
      metric {
        namespace   = var.metrics_namespace
        metric_name = metric_query.value
        dimensions  = { service = local.service }
        stat        = "Sum"
        period      = local.period
      }
    }
  }

  metric_query {
    id         = "finished"
    expression = local.finished_expression
    label      = "Messages finished"
  }

  metric_query {
    id          = "exhausted_percent"
    expression  = local.exhausted_percent_expression
    label       = "Exhausted (% of finished)"
    return_data = true
  }

  actions_enabled = true
  alarm_actions   = var.alarm_actions
  ok_actions      = var.ok_actions

  tags = var.tags

  lifecycle {
    precondition {
      condition     = length(local.exhausted_rate_description) <= 1024
      error_message = "The exhausted_rate alarm's description exceeds CloudWatch's 1024 characters: shorten the queue names or service."
    }
  }
}

# Native retry: records failing, counted while the backlog can still be saved (see the locals above
# and the module README). received - deleted per period is the number of receives that ended without
# a delete; in a steady flow the messages in flight at either end of a period cancel out.
resource "aws_cloudwatch_metric_alarm" "records_failing" {
  count = local.records_failing ? 1 : 0

  alarm_name          = "${var.name}-records-failing"
  alarm_description   = local.records_failing_description
  evaluation_periods  = 2
  datapoints_to_alarm = 1
  comparison_operator = "GreaterThanThreshold"
  threshold           = var.thresholds.records_failing
  treat_missing_data  = "notBreaching"

  metric_query {
    id = "received"
    metric {
      namespace   = "AWS/SQS"
      metric_name = "NumberOfMessagesReceived"
      dimensions  = { QueueName = local.queues.source }
      stat        = "Sum"
      period      = local.failing_period
    }
  }

  metric_query {
    id = "deleted"
    metric {
      namespace   = "AWS/SQS"
      metric_name = "NumberOfMessagesDeleted"
      dimensions  = { QueueName = local.queues.source }
      stat        = "Sum"
      period      = local.failing_period
    }
  }

  metric_query {
    id          = "failing"
    expression  = "FILL(received, 0) - FILL(deleted, 0)"
    label       = "Receives that ended without a delete"
    return_data = true
  }

  actions_enabled = true
  alarm_actions   = var.alarm_actions
  ok_actions      = var.ok_actions

  tags = var.tags

  lifecycle {
    precondition {
      condition     = length(local.records_failing_description) <= 1024
      error_message = "The records_failing alarm's description exceeds CloudWatch's 1024 characters: shorten the queue names or function_name."
    }
  }
}

# The alarm is only worth having if it fires before SQS moves a failing record to the DLQ. A warning,
# not an error: with a short visibility timeout the window can be shorter than CloudWatch can see.
check "records_failing_fires_before_the_dlq" {
  assert {
    condition     = !local.records_failing || local.failing_fires_within < local.redrive_window
    error_message = "The records-failing alarm fires up to ${local.failing_fires_within} s after a record's first failed receive (a ${local.failing_period} s period, plus a minute for SQS to publish and one to evaluate), but SQS moves it to the DLQ after maxReceiveCount (${try(var.source_redrive.max_receive_count, 0)}) x the visibility timeout (${local.redrive_visibility} s) = ${local.redrive_window} s: on-call would hear of it after the DLQ. Raise the source queue's max_receive_count or visibility timeout."
  }
}

# --- no silent expiry: a terminal queue's oldest message against its retention ------------------------
# Without an archive (modules/archive), what the retry-exhausted queue and the DLQs hold is deleted by
# SQS at the end of their retention, without a trace. This alarm fires well before that: at retention
# minus max(1 day, 20 % of it), over 1 h periods (SQS publishes the metric every minute while the queue
# holds a message), so on-call has at least a day to inspect and redrive. Off with archive_enabled.
locals {
  expiry_roles = {
    "scheduled-retry" = ["dlq", "exhausted", "schedule_dlq"]
    "native-retry"    = ["dlq"]
    "self-healing"    = ["failure_dlq", "exhausted", "rules_dlq", "redrive_dlq", "schedule_dlq"]
  }
  expiry_period = 3600
  expiry = var.archive_enabled ? {} : {
    for role in local.expiry_roles[var.pattern] : role => {
      retention_seconds = var.retention_seconds[role]
      lead_seconds      = max(86400, floor(var.retention_seconds[role] / 5))
      # A retention of a day or less leaves no day of lead: fire on any message a minute old.
      threshold_seconds = max(60, var.retention_seconds[role] - max(86400, floor(var.retention_seconds[role] / 5)))
    }
    # A standard source's schedules dead-letter to the DLQ, already watched.
    if local.queues[role] != null && !(role == "schedule_dlq" && local.queues.schedule_dlq == local.queues.dlq)
  }

  # Where each queue's messages go back to once the cause is fixed (the depth alarms' commands).
  expiry_redrive = {
    "scheduled-retry" = {
      dlq          = "serverless-retry redrive --from-queue-url ${local.url.dlq} --native --yes"
      exhausted    = "${local.redrive_command} --dry-run, then --yes"
      schedule_dlq = "serverless-retry redrive --from-queue-url ${local.url.schedule_dlq} --to-queue-url ${local.url.source} --dry-run, then --yes"
    }
    "native-retry" = {
      dlq = "serverless-retry redrive --from-queue-url ${local.url.dlq} --native --yes"
    }
    "self-healing" = {
      for role in ["failure_dlq", "exhausted", "rules_dlq", "redrive_dlq", "schedule_dlq"] :
      role => "serverless-retry redrive --from-queue-url ${local.url[role]} --to-function --dry-run, then --yes"
    }
  }
  expiry_descriptions = {
    for role, e in local.expiry : role => replace(trimspace(<<-EOT
      serverless-retry: the oldest message in ${local.q[role]} is older than ${e.threshold_seconds} s
      (${format("%.1f", e.threshold_seconds / 86400)} d); SQS deletes messages ${e.retention_seconds} s
      (${format("%.1f", e.retention_seconds / 86400)} d) after they were sent, and nothing archives this
      queue. Before then, inspect (removes nothing): serverless-retry inspect --queue-url
      ${local.url[role]}; once fixed, redrive: ${local.expiry_redrive[var.pattern][role]}. To end this:
      modules/archive, then archive_enabled = true. SQS leaves a message received 3+ times (inspect
      receives) out of this metric.
    EOT
    ), "\n", " ")
  }
}

resource "aws_cloudwatch_metric_alarm" "expiry" {
  for_each = local.expiry

  alarm_name          = "${var.name}-${replace(each.key, "_", "-")}-expiry"
  alarm_description   = local.expiry_descriptions[each.key]
  namespace           = "AWS/SQS"
  metric_name         = "ApproximateAgeOfOldestMessage"
  dimensions          = { QueueName = local.queues[each.key] }
  statistic           = "Maximum"
  period              = local.expiry_period
  evaluation_periods  = 1
  datapoints_to_alarm = 1
  comparison_operator = "GreaterThanThreshold"
  threshold           = each.value.threshold_seconds
  # SQS publishes the metric only while the queue holds a message: no data is an empty queue.
  treat_missing_data = "notBreaching"

  actions_enabled = true
  alarm_actions   = var.alarm_actions
  ok_actions      = var.ok_actions

  tags = var.tags

  lifecycle {
    precondition {
      condition     = length(local.expiry_descriptions[each.key]) <= 1024
      error_message = "The ${each.key} expiry alarm's description exceeds CloudWatch's 1024 characters: shorten the queue names."
    }
  }
}

# A standard DLQ's message expires counting from when it was first sent, but the metric counts from
# its move to the DLQ: the lead must cover the time a failing record spends in the source first.
check "dlq_expiry_lead_covers_the_redrive_window" {
  assert {
    condition     = !local.native || !contains(keys(local.expiry), "dlq") || local.redrive_window < try(local.expiry.dlq.lead_seconds, 0)
    error_message = "A record spends up to max_receive_count x the visibility timeout (${local.redrive_window} s) in the source before SQS moves it to the DLQ, and its DLQ retention counts from its first send, but the dlq expiry alarm's lead is only ${try(local.expiry.dlq.lead_seconds, 0)} s: it could fire after SQS deleted the message. Lower the source's max_receive_count or visibility timeout, or archive the DLQ (modules/archive)."
  }
}
