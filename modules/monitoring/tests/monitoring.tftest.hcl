# Plan-level tests with a mock provider: no credentials, no AWS calls.

mock_provider "aws" {
  source = "../../tests/terraform/mocks"
}

variables {
  name = "orders"
  queues = {
    source    = "orders"
    dlq       = "orders-dlq"
    exhausted = "orders-exhausted"
  }
  function_name = "orders"
  alarm_actions = ["arn:aws:sns:us-east-1:123456789012:orders-alarms"]
  ok_actions    = ["arn:aws:sns:us-east-1:123456789012:orders-alarms"]
  tags          = { team = "orders" }
}

run "one_alarm_per_concern" {
  command = plan

  assert {
    condition     = keys(aws_cloudwatch_metric_alarm.this) == ["delivery_failed", "dlq_depth", "exhausted_depth", "function_errors", "oldest_message_age"] && length(aws_cloudwatch_metric_alarm.exhausted_rate) == 1
    error_message = "Every concern gets its alarm when queues, function and service are known: ${jsonencode(keys(aws_cloudwatch_metric_alarm.this))}"
  }

  assert {
    condition = {
      for k, a in aws_cloudwatch_metric_alarm.this : k => "${a.alarm_name} | ${a.namespace} | ${a.metric_name} | ${jsonencode(a.dimensions)} | ${a.statistic} | ${a.comparison_operator} ${a.threshold}"
      } == {
      dlq_depth          = "orders-dlq-depth | AWS/SQS | ApproximateNumberOfMessagesVisible | {\"QueueName\":\"orders-dlq\"} | Maximum | GreaterThanThreshold 0"
      exhausted_depth    = "orders-exhausted-depth | AWS/SQS | ApproximateNumberOfMessagesVisible | {\"QueueName\":\"orders-exhausted\"} | Maximum | GreaterThanThreshold 0"
      oldest_message_age = "orders-oldest-message-age | AWS/SQS | ApproximateAgeOfOldestMessage | {\"QueueName\":\"orders\"} | Maximum | GreaterThanThreshold 1800"
      function_errors    = "orders-function-errors | AWS/Lambda | Errors | {\"FunctionName\":\"orders\"} | Sum | GreaterThanThreshold 0"
      delivery_failed    = "orders-delivery-failed | ServerlessRetry | DeliveryFailed | {\"service\":\"orders\"} | Sum | GreaterThanThreshold 0"
    }
    error_message = "Alarm metrics, dimensions or default thresholds differ."
  }

  assert {
    condition = alltrue([
      for a in concat(values(aws_cloudwatch_metric_alarm.this), aws_cloudwatch_metric_alarm.exhausted_rate) :
      a.treat_missing_data == "notBreaching" && a.evaluation_periods == 1 && a.datapoints_to_alarm == 1 && a.actions_enabled
    ]) && alltrue([for a in values(aws_cloudwatch_metric_alarm.this) : a.period == 300])
    error_message = "Every alarm: notBreaching on missing data (an idle queue or function), one 300 s period, actions enabled."
  }

  assert {
    condition = alltrue([
      for a in concat(values(aws_cloudwatch_metric_alarm.this), aws_cloudwatch_metric_alarm.exhausted_rate) :
      a.alarm_actions == toset(var.alarm_actions) && a.ok_actions == toset(var.ok_actions) && a.tags == tomap({ team = "orders" })
    ])
    error_message = "Every alarm notifies the actions given and carries the tags."
  }

  assert {
    condition = alltrue([
      strcontains(aws_cloudwatch_metric_alarm.this["exhausted_depth"].alarm_description, "serverless-retry inspect --queue-url $(aws sqs get-queue-url --queue-name orders-exhausted --query QueueUrl --output text)"),
      strcontains(aws_cloudwatch_metric_alarm.this["exhausted_depth"].alarm_description, "serverless-retry redrive --from-queue-url $(aws sqs get-queue-url --queue-name orders-exhausted --query QueueUrl --output text) --to-queue-url $(aws sqs get-queue-url --queue-name orders --query QueueUrl --output text)"),
      strcontains(aws_cloudwatch_metric_alarm.exhausted_rate[0].alarm_description, "serverless-retry redrive"),
      strcontains(aws_cloudwatch_metric_alarm.this["dlq_depth"].alarm_description, "start-message-move-task"),
      !strcontains(aws_cloudwatch_metric_alarm.this["dlq_depth"].alarm_description, "\n"),
    ])
    error_message = "Descriptions say what to do, on one line: inspect and redrive the exhausted queue, DLQ redrive the DLQ."
  }
}

run "exhausted_rate_is_a_share_of_finished_messages" {
  command = plan

  variables {
    thresholds = { exhausted_percent = 20, exhausted_min_messages = 50 }
  }

  assert {
    condition = {
      for q in aws_cloudwatch_metric_alarm.exhausted_rate[0].metric_query : q.id => q.metric[0].metric_name if length(q.metric) > 0
      } == {
      processed        = "Processed"
      exhausted        = "Exhausted"
      non_retryable    = "NonRetryable"
      invalid_envelope = "InvalidEnvelope"
    }
    error_message = "The rate combines the consumer's four outcome counters."
  }

  assert {
    condition = alltrue([
      for q in aws_cloudwatch_metric_alarm.exhausted_rate[0].metric_query : alltrue([
        for m in q.metric : m.namespace == "ServerlessRetry" && m.dimensions == tomap({ service = "orders" }) && m.stat == "Sum" && m.period == 300
      ])
    ])
    error_message = "Outcome metrics: namespace ServerlessRetry, dimension service = the consumer's name, summed per period."
  }

  assert {
    condition = {
      for q in aws_cloudwatch_metric_alarm.exhausted_rate[0].metric_query : q.id => "${q.expression} | ${q.return_data == true}" if q.expression != null && q.expression != ""
      } == {
      finished          = "FILL(exhausted, 0) + FILL(invalid_envelope, 0) + FILL(non_retryable, 0) + FILL(processed, 0) | false"
      exhausted_percent = "IF(finished >= 50, 100 * FILL(exhausted, 0) / finished, 0) | true"
    }
    error_message = "The alarm returns the Exhausted percentage, only for periods with enough finished messages."
  }

  assert {
    condition     = aws_cloudwatch_metric_alarm.exhausted_rate[0].threshold == 20 && aws_cloudwatch_metric_alarm.exhausted_rate[0].comparison_operator == "GreaterThanThreshold" && aws_cloudwatch_metric_alarm.exhausted_rate[0].alarm_name == "orders-exhausted-rate"
    error_message = "exhausted_percent is the rate alarm's threshold."
  }
}

run "thresholds_and_evaluation_reach_the_alarms" {
  command = plan

  variables {
    service           = "orders-consumer"
    metrics_namespace = "Orders"
    thresholds = {
      dlq_depth                  = 3
      exhausted_depth            = 25
      oldest_message_age_seconds = 3600
      function_errors            = 2
      delivery_failed            = 1
    }
    evaluation = { period_seconds = 60, evaluation_periods = 5, datapoints_to_alarm = 3 }
  }

  assert {
    condition     = { for k, a in aws_cloudwatch_metric_alarm.this : k => a.threshold } == { dlq_depth = 3, exhausted_depth = 25, oldest_message_age = 3600, function_errors = 2, delivery_failed = 1 }
    error_message = "Each threshold reaches its alarm."
  }

  assert {
    condition = alltrue([
      for a in values(aws_cloudwatch_metric_alarm.this) : a.period == 60 && a.evaluation_periods == 5 && a.datapoints_to_alarm == 3
    ])
    error_message = "evaluation sets the period and M of N of every alarm."
  }

  assert {
    condition     = aws_cloudwatch_metric_alarm.this["delivery_failed"].namespace == "Orders" && aws_cloudwatch_metric_alarm.this["delivery_failed"].dimensions == tomap({ service = "orders-consumer" })
    error_message = "An explicit service and namespace override the function name and ServerlessRetry."
  }
}

run "only_what_is_given_is_watched" {
  command = plan

  variables {
    queues        = { exhausted = "orders-exhausted" }
    function_name = null
    alarm_actions = []
    ok_actions    = []
  }

  assert {
    condition     = keys(aws_cloudwatch_metric_alarm.this) == ["exhausted_depth"] && length(aws_cloudwatch_metric_alarm.exhausted_rate) == 0
    error_message = "Without a source, DLQ, function or service only the exhausted-queue alarm is made."
  }

  assert {
    condition     = strcontains(aws_cloudwatch_metric_alarm.this["exhausted_depth"].alarm_description, "--to-queue-url <source queue URL>")
    error_message = "Without a source queue name the redrive command shows a placeholder."
  }

  assert {
    condition     = [for w in jsondecode(aws_cloudwatch_dashboard.this.dashboard_body).widgets : w.properties.title if w.type == "metric"] == ["Queue depth (messages)", "Age of the oldest message (seconds)"]
    error_message = "The dashboard graphs only what is given."
  }
}

run "dashboard_draws_every_concern" {
  command = plan

  assert {
    condition     = aws_cloudwatch_dashboard.this.dashboard_name == "orders"
    error_message = "The dashboard is named after name."
  }

  assert {
    condition = [for w in jsondecode(aws_cloudwatch_dashboard.this.dashboard_body).widgets : w.type] == [
      "text", "alarm", "metric", "metric", "metric", "metric", "metric", "metric",
    ]
    error_message = "A header, the alarm states, and six graphs."
  }

  assert {
    condition = toset(flatten([
      for w in jsondecode(aws_cloudwatch_dashboard.this.dashboard_body).widgets : [
        for m in w.properties.metrics : join("/", slice(m, 0, length(m) - 1))
      ] if w.type == "metric"
      ])) == toset([
      "AWS/SQS/ApproximateNumberOfMessagesVisible/QueueName/orders",
      "AWS/SQS/ApproximateNumberOfMessagesNotVisible/QueueName/orders",
      "AWS/SQS/ApproximateNumberOfMessagesDelayed/QueueName/orders",
      "AWS/SQS/ApproximateNumberOfMessagesVisible/QueueName/orders-dlq",
      "AWS/SQS/ApproximateNumberOfMessagesVisible/QueueName/orders-exhausted",
      "AWS/SQS/ApproximateAgeOfOldestMessage/QueueName/orders",
      "AWS/SQS/ApproximateAgeOfOldestMessage/QueueName/orders-dlq",
      "AWS/SQS/ApproximateAgeOfOldestMessage/QueueName/orders-exhausted",
      "ServerlessRetry/Processed/service/orders",
      "ServerlessRetry/Exhausted/service/orders",
      "ServerlessRetry/NonRetryable/service/orders",
      "ServerlessRetry/InvalidEnvelope/service/orders",
      "ServerlessRetry/DeliveryFailed/service/orders",
      "ServerlessRetry/RetryScheduled/service/orders/transport/sqs-delay",
      "ServerlessRetry/RetryScheduled/service/orders/transport/scheduler",
      "ServerlessRetry/RetryScheduled/service/orders/transport/visibility",
      "AWS/Lambda/Invocations/FunctionName/orders",
      "AWS/Lambda/Errors/FunctionName/orders",
      "AWS/Lambda/Throttles/FunctionName/orders",
      "AWS/Lambda/Duration/FunctionName/orders",
    ])
    error_message = "The graphs show the queue depths (delayed included), message ages, every outcome, retries by transport, and the function."
  }

  assert {
    condition = alltrue([
      for w in jsondecode(aws_cloudwatch_dashboard.this.dashboard_body).widgets :
      w.properties.region == "us-east-1" && w.x + w.width <= 24 if w.type == "metric"
    ])
    error_message = "Every graph names its region and fits the 24-column grid."
  }

  assert {
    condition = [
      for w in jsondecode(aws_cloudwatch_dashboard.this.dashboard_body).widgets : try(w.properties.annotations.horizontal, null) if w.type == "metric"
    ] == [null, [{ label = "source alarm", value = 1800 }], null, null, null, null]
    error_message = "The age graph draws the age alarm's threshold; no other graph has an annotation."
  }

  assert {
    condition     = length(jsondecode(aws_cloudwatch_dashboard.this.dashboard_body).widgets[1].properties.alarms) == 6 + 2
    error_message = "The alarm widget shows all eight alarms: six, and the DLQ's and the exhausted queue's expiry alarms."
  }
}

run "nothing_to_monitor" {
  command = plan

  variables {
    queues        = {}
    function_name = null
  }

  expect_failures = [aws_cloudwatch_dashboard.this]
}

run "negative_depth_threshold" {
  command = plan

  variables {
    thresholds = { dlq_depth = -1 }
  }

  expect_failures = [var.thresholds]
}

run "fractional_error_threshold" {
  command = plan

  variables {
    thresholds = { function_errors = 0.5 }
  }

  expect_failures = [var.thresholds]
}

run "age_threshold_beyond_retention" {
  command = plan

  variables {
    thresholds = { oldest_message_age_seconds = 1209601 }
  }

  expect_failures = [var.thresholds]
}

run "exhausted_percent_of_100" {
  command = plan

  variables {
    thresholds = { exhausted_percent = 100 }
  }

  expect_failures = [var.thresholds]
}

run "period_not_a_whole_minute" {
  command = plan

  variables {
    evaluation = { period_seconds = 90 }
  }

  expect_failures = [var.evaluation]
}

run "more_datapoints_than_periods" {
  command = plan

  variables {
    evaluation = { evaluation_periods = 2, datapoints_to_alarm = 3 }
  }

  expect_failures = [var.evaluation]
}

run "alarm_action_not_an_arn" {
  command = plan

  variables {
    alarm_actions = ["orders-alarms"]
  }

  expect_failures = [var.alarm_actions]
}

run "ok_action_not_an_arn" {
  command = plan

  variables {
    ok_actions = ["https://sns.us-east-1.amazonaws.com/orders-alarms"]
  }

  expect_failures = [var.ok_actions]
}

run "queue_url_instead_of_a_name" {
  command = plan

  variables {
    queues = { source = "https://sqs.us-east-1.amazonaws.com/123456789012/orders" }
  }

  expect_failures = [var.queues]
}

run "description_over_1024_characters" {
  command = plan

  variables {
    service = join("", [for i in range(51) : "svc-x"])
    queues = {
      source    = "orders"
      exhausted = join("", [for i in range(15) : "exhst"])
    }
  }

  expect_failures = [aws_cloudwatch_metric_alarm.exhausted_rate]
}

run "fifo_schedule_dlq_is_watched_too" {
  command = plan

  variables {
    queues = {
      source       = "orders.fifo"
      dlq          = "orders-dlq.fifo"
      exhausted    = "orders-exhausted.fifo"
      schedule_dlq = "orders-schedule-dlq"
    }
  }

  assert {
    condition = alltrue([
      aws_cloudwatch_metric_alarm.this["schedule_dlq_depth"].dimensions == tomap({ QueueName = "orders-schedule-dlq" }),
      aws_cloudwatch_metric_alarm.this["schedule_dlq_depth"].threshold == 0,
      strcontains(aws_cloudwatch_metric_alarm.this["schedule_dlq_depth"].alarm_description, "retry schedules"),
      strcontains(aws_cloudwatch_dashboard.this.dashboard_body, "orders-schedule-dlq"),
    ])
    error_message = "A FIFO source's schedule DLQ gets its own depth alarm and graph line."
  }
}

run "schedule_dlq_that_is_the_dlq_is_not_watched_twice" {
  command = plan

  variables {
    queues = {
      source       = "orders"
      dlq          = "orders-dlq"
      schedule_dlq = "orders-dlq"
    }
  }

  assert {
    condition     = !contains(keys(aws_cloudwatch_metric_alarm.this), "schedule_dlq_depth")
    error_message = "For a standard source the schedules dead-letter to the DLQ, already alarmed."
  }
}

# --- the self-healing pattern: every queue and function of modules/self-healing in one instance -----

run "self_healing_queue_set_in_one_instance" {
  command = plan

  variables {
    name    = "heal"
    pattern = "self-healing"
    queues = {
      failure      = "heal-failures"
      failure_dlq  = "heal-failures-dlq"
      exhausted    = "heal-exhausted"
      rules_dlq    = "heal-rules-dlq"
      redrive_dlq  = "heal-redrive-dlq"
      schedule_dlq = "heal-schedule-dlq"
    }
    function_name = null
    functions = {
      enrichment = { function_name = "heal-enrichment", role = "enrichment" }
      redrive    = { function_name = "heal-redrive", role = "redrive" }
      charge     = { function_name = "shop-charge", role = "source" }
      invoice    = { function_name = "shop-invoice", role = "source" }
    }
  }

  assert {
    condition = {
      for k, a in aws_cloudwatch_metric_alarm.this : k => "${a.alarm_name} | ${a.metric_name} | ${jsonencode(a.dimensions)} | ${a.threshold}"
      } == {
      failure_queue_age          = "heal-failure-queue-age | ApproximateAgeOfOldestMessage | {\"QueueName\":\"heal-failures\"} | 1800"
      failure_dlq_depth          = "heal-failure-dlq-depth | ApproximateNumberOfMessagesVisible | {\"QueueName\":\"heal-failures-dlq\"} | 0"
      exhausted_depth            = "heal-exhausted-depth | ApproximateNumberOfMessagesVisible | {\"QueueName\":\"heal-exhausted\"} | 0"
      rules_dlq_depth            = "heal-rules-dlq-depth | ApproximateNumberOfMessagesVisible | {\"QueueName\":\"heal-rules-dlq\"} | 0"
      redrive_dlq_depth          = "heal-redrive-dlq-depth | ApproximateNumberOfMessagesVisible | {\"QueueName\":\"heal-redrive-dlq\"} | 0"
      schedule_dlq_depth         = "heal-schedule-dlq-depth | ApproximateNumberOfMessagesVisible | {\"QueueName\":\"heal-schedule-dlq\"} | 0"
      enrichment_function_errors = "heal-enrichment-function-errors | Errors | {\"FunctionName\":\"heal-enrichment\"} | 0"
      redrive_function_errors    = "heal-redrive-function-errors | Errors | {\"FunctionName\":\"heal-redrive\"} | 0"
    }
    error_message = "One alarm per queue where an event can stop, and on the enrichment and redrive functions (not on the sources, whose failures the pattern heals)."
  }

  assert {
    condition     = length(aws_cloudwatch_metric_alarm.exhausted_rate) == 0
    error_message = "The consumer's Exhausted rate is not a self-healing metric."
  }

  assert {
    condition = alltrue([
      for a in values(aws_cloudwatch_metric_alarm.this) :
      !strcontains(a.alarm_description, "consumer") && !strcontains(a.alarm_description, "\n") && length(a.alarm_description) <= 1024
    ])
    error_message = "No self-healing alarm speaks of a consumer; every description is one line within CloudWatch's 1024 characters."
  }

  assert {
    condition = alltrue([
      strcontains(aws_cloudwatch_metric_alarm.this["exhausted_depth"].alarm_description, "serverless-retry redrive --from-queue-url $(aws sqs get-queue-url --queue-name heal-exhausted --query QueueUrl --output text) --to-function --dry-run"),
      !strcontains(aws_cloudwatch_metric_alarm.this["exhausted_depth"].alarm_description, "--to-queue-url"),
      strcontains(aws_cloudwatch_metric_alarm.this["failure_dlq_depth"].alarm_description, "start-message-move-task"),
      strcontains(aws_cloudwatch_metric_alarm.this["redrive_dlq_depth"].alarm_description, "--to-function --reset-attempts"),
      strcontains(aws_cloudwatch_metric_alarm.this["failure_queue_age"].alarm_description, "pipe"),
      strcontains(aws_cloudwatch_metric_alarm.this["schedule_dlq_depth"].alarm_description, "Scheduler"),
      strcontains(aws_cloudwatch_metric_alarm.this["enrichment_function_errors"].alarm_description, "pipe batch"),
    ])
    error_message = "Each self-healing description says what stopped there and how to bring it back."
  }

  assert {
    condition = [for w in jsondecode(aws_cloudwatch_dashboard.this.dashboard_body).widgets : w.properties.title if w.type == "metric"] == [
      "Queue depth (messages)",
      "Age of the oldest message (seconds)",
      "Redriven, by path (heal-redrive)",
      "Given up by the redrive, by outcome (heal-redrive)",
      "Failure records enriched (heal-enrichment)",
      "Errors and throttles by function",
      "Invocations by function",
      "Duration p99 by function (ms)",
    ]
    error_message = "One dashboard: the queues, the redrive's and the enrichment's counters, and every function."
  }

  assert {
    condition = toset(flatten([
      for w in jsondecode(aws_cloudwatch_dashboard.this.dashboard_body).widgets : [
        for m in w.properties.metrics : join("/", slice(m, 0, length(m) - 1))
      ] if w.type == "metric" ? w.properties.title == "Queue depth (messages)" : false
      ])) == toset([
      "AWS/SQS/ApproximateNumberOfMessagesVisible/QueueName/heal-failures",
      "AWS/SQS/ApproximateNumberOfMessagesNotVisible/QueueName/heal-failures",
      "AWS/SQS/ApproximateNumberOfMessagesVisible/QueueName/heal-failures-dlq",
      "AWS/SQS/ApproximateNumberOfMessagesVisible/QueueName/heal-schedule-dlq",
      "AWS/SQS/ApproximateNumberOfMessagesVisible/QueueName/heal-rules-dlq",
      "AWS/SQS/ApproximateNumberOfMessagesVisible/QueueName/heal-redrive-dlq",
      "AWS/SQS/ApproximateNumberOfMessagesVisible/QueueName/heal-exhausted",
    ])
    error_message = "The depth graph shows every queue of the set."
  }

  assert {
    condition = alltrue(flatten([
      for w in jsondecode(aws_cloudwatch_dashboard.this.dashboard_body).widgets : [
        for m in w.properties.metrics : length(m) >= 5 && can(m[length(m) - 1].label)
      ] if w.type == "metric"
    ])) && length(regexall("\"Errors\",\"FunctionName\"", aws_cloudwatch_dashboard.this.dashboard_body)) == 4
    error_message = "Every function, sources included, is graphed; every metric is one [namespace, name, dimensions..., {label}] entry."
  }

  assert {
    condition     = strcontains(jsondecode(aws_cloudwatch_dashboard.this.dashboard_body).widgets[0].properties.markdown, "serverless-retry (self-healing): heal")
    error_message = "The header names the pattern."
  }

  assert {
    condition     = length(jsondecode(aws_cloudwatch_dashboard.this.dashboard_body).widgets[1].properties.alarms) == 8 + 5
    error_message = "The alarm widget shows all thirteen alarms: eight, and the expiry alarms of the five terminal queues."
  }
}

run "a_queue_of_another_pattern_is_refused" {
  command = plan

  variables {
    pattern       = "self-healing"
    function_name = null
    queues        = { source = "orders", exhausted = "orders-exhausted" }
  }

  expect_failures = [aws_cloudwatch_dashboard.this]
}

run "self_healing_roles_need_the_pattern" {
  command = plan

  variables {
    functions = { redrive = { function_name = "heal-redrive", role = "redrive" } }
  }

  expect_failures = [aws_cloudwatch_dashboard.this]
}

run "self_healing_has_no_consumer" {
  command = plan

  variables {
    pattern = "self-healing"
    queues  = { exhausted = "heal-exhausted" }
  }

  expect_failures = [aws_cloudwatch_dashboard.this]
}

run "unknown_pattern" {
  command = plan

  variables {
    pattern = "fifo"
  }

  expect_failures = [var.pattern]
}

run "unknown_function_role" {
  command = plan

  variables {
    functions = { audit = { function_name = "audit", role = "auditor" } }
  }

  expect_failures = [var.functions]
}

# --- native SQS retry: a source queue, the DLQ its redrive policy fills, the consumer ------------------

run "native_retry_describes_the_redrive_policy" {
  command = plan

  variables {
    pattern        = "native-retry"
    queues         = { source = "orders", dlq = "orders-dlq" }
    source_redrive = { visibility_timeout_seconds = 180, max_receive_count = 5 }
    functions = {
      audit = { function_name = "orders-audit", role = "other", alarm_errors = true }
    }
  }

  assert {
    condition     = keys(aws_cloudwatch_metric_alarm.this) == ["audit_function_errors", "dlq_depth", "function_errors", "oldest_message_age"] && length(aws_cloudwatch_metric_alarm.exhausted_rate) == 0
    error_message = "Native retry: the DLQ, the source's age and the functions; no serverless-retry outcome metrics."
  }

  assert {
    condition = alltrue([
      strcontains(aws_cloudwatch_metric_alarm.this["dlq_depth"].alarm_description, "failed each of them maxReceiveCount times"),
      strcontains(aws_cloudwatch_metric_alarm.this["dlq_depth"].alarm_description, "--native"),
      !strcontains(aws_cloudwatch_metric_alarm.this["dlq_depth"].alarm_description, "schedule"),
    ])
    error_message = "The native DLQ is filled by the redrive policy, not by failed retry sends or schedules."
  }

  assert {
    condition     = !strcontains(aws_cloudwatch_dashboard.this.dashboard_body, "ApproximateNumberOfMessagesDelayed") && strcontains(aws_cloudwatch_dashboard.this.dashboard_body, "Errors and throttles by function")
    error_message = "No delayed retries to draw; the consumer and the other function share the function graphs."
  }
}

# --- native retry: an alarm on records failing that fires while the backlog can still be saved -----

run "native_retry_alarms_on_records_failing_within_the_redrive_window" {
  command = plan

  variables {
    pattern        = "native-retry"
    queues         = { source = "orders", dlq = "orders-dlq" }
    source_redrive = { visibility_timeout_seconds = 180, max_receive_count = 5 }
  }

  assert {
    condition     = length(aws_cloudwatch_metric_alarm.records_failing) == 1 && aws_cloudwatch_metric_alarm.records_failing[0].alarm_name == "orders-records-failing"
    error_message = "Native retry with a source queue gets the records-failing alarm."
  }

  assert {
    # Receives and deletes of the source queue, summed per period, and their difference.
    condition = {
      for q in aws_cloudwatch_metric_alarm.records_failing[0].metric_query : q.id => (
        length(q.metric) == 0 ? "= ${q.expression}" : "${q.metric[0].namespace} ${q.metric[0].metric_name} ${jsonencode(q.metric[0].dimensions)} ${q.metric[0].stat} ${q.metric[0].period}"
      )
      } == {
      received = "AWS/SQS NumberOfMessagesReceived {\"QueueName\":\"orders\"} Sum 180"
      deleted  = "AWS/SQS NumberOfMessagesDeleted {\"QueueName\":\"orders\"} Sum 180"
      failing  = "= FILL(received, 0) - FILL(deleted, 0)"
    }
    error_message = "The alarm counts receives that ended without a delete, over periods of the visibility timeout (180 s)."
  }

  assert {
    condition     = [for q in aws_cloudwatch_metric_alarm.records_failing[0].metric_query : q.id if q.return_data == true] == ["failing"]
    error_message = "Only the difference is alarmed on."
  }

  assert {
    condition = alltrue([
      aws_cloudwatch_metric_alarm.records_failing[0].comparison_operator == "GreaterThanThreshold",
      aws_cloudwatch_metric_alarm.records_failing[0].threshold == 0,
      aws_cloudwatch_metric_alarm.records_failing[0].evaluation_periods == 2,
      aws_cloudwatch_metric_alarm.records_failing[0].datapoints_to_alarm == 1,
      aws_cloudwatch_metric_alarm.records_failing[0].treat_missing_data == "notBreaching",
    ])
    error_message = "One failed receive in either of the last two periods fires it (and keeps it firing between receives)."
  }

  assert {
    # A failing record reaches the DLQ 5 x 180 = 900 s after its first receive; the alarm fires within
    # one period (180 s) plus two minutes: 300 s, leaving 600 s to deploy a fix.
    condition     = output.records_failing_timing == { period_seconds = 180, fires_within_seconds = 300, dlq_after_seconds = 900 }
    error_message = "The alarm must fire well inside the maxReceiveCount x visibility window: ${jsonencode(output.records_failing_timing)}"
  }

  assert {
    condition     = output.records_failing_timing.fires_within_seconds < output.records_failing_timing.dlq_after_seconds && output.records_failing_timing.period_seconds >= var.source_redrive.visibility_timeout_seconds
    error_message = "Fires before the DLQ move, with a period long enough to hold a receive of every failing record."
  }

  assert {
    # SQS leaves a message out of ApproximateAgeOfOldestMessage from its third receive on: the age
    # alarm's native default is 2 x the visibility timeout, below the 900 s window and the old 1800 s.
    condition     = aws_cloudwatch_metric_alarm.this["oldest_message_age"].threshold == 360
    error_message = "The native-retry age alarm defaults to 2 x the visibility timeout."
  }

  assert {
    condition = alltrue([
      strcontains(aws_cloudwatch_metric_alarm.records_failing[0].alarm_description, "about 900 s after its first receive"),
      strcontains(aws_cloudwatch_metric_alarm.records_failing[0].alarm_description, "fires within about 300 s"),
      strcontains(aws_cloudwatch_metric_alarm.records_failing[0].alarm_description, "/aws/lambda/orders"),
      !strcontains(aws_cloudwatch_metric_alarm.records_failing[0].alarm_description, "SendMessageBatch"),
      !strcontains(aws_cloudwatch_metric_alarm.this["function_errors"].alarm_description, "retried by policy"),
      strcontains(aws_cloudwatch_metric_alarm.this["function_errors"].alarm_description, "plain handler"),
    ])
    error_message = "The runbook text says what a plain handler logs and how long is left, never a serverless_retry log line."
  }

  assert {
    condition     = output.alarm_arns["records_failing"] != null && output.alarm_names["records_failing"] == "orders-records-failing"
    error_message = "The alarm is in the outputs."
  }
}

run "native_retry_records_failing_follows_the_visibility_timeout" {
  command = plan

  variables {
    pattern        = "native-retry"
    queues         = { source = "orders", dlq = "orders-dlq" }
    source_redrive = { visibility_timeout_seconds = 150, max_receive_count = 10 }
    thresholds     = { records_failing = 5 }
  }

  assert {
    condition     = output.records_failing_timing == { period_seconds = 180, fires_within_seconds = 300, dlq_after_seconds = 1500 } && aws_cloudwatch_metric_alarm.records_failing[0].threshold == 5
    error_message = "The period rounds the visibility timeout up to whole minutes; the threshold is the input's: ${jsonencode(output.records_failing_timing)}"
  }
}

run "native_retry_window_too_short_to_alarm_in_time" {
  command = plan

  variables {
    # 5 x 30 s = 150 s to the DLQ; CloudWatch cannot tell before 60 s + 2 minutes.
    pattern        = "native-retry"
    queues         = { source = "orders", dlq = "orders-dlq" }
    source_redrive = { visibility_timeout_seconds = 30, max_receive_count = 5 }
  }

  expect_failures = [check.records_failing_fires_before_the_dlq]
}

run "native_retry_needs_the_redrive_settings" {
  command = plan

  variables {
    pattern = "native-retry"
    queues  = { source = "orders", dlq = "orders-dlq" }
  }

  expect_failures = [aws_cloudwatch_dashboard.this]
}

run "scheduled_retry_has_no_records_failing_alarm" {
  command = plan

  variables {
    source_redrive = { visibility_timeout_seconds = 180, max_receive_count = 5 }
  }

  assert {
    condition     = length(aws_cloudwatch_metric_alarm.records_failing) == 0 && output.records_failing_timing == null && aws_cloudwatch_metric_alarm.this["oldest_message_age"].threshold == 1800
    error_message = "Our consumer hands failures to its retry policy: no records-failing alarm, and the age alarm keeps 1800 s."
  }
}

run "native_retry_has_no_exhausted_queue" {
  command = plan

  variables {
    pattern        = "native-retry"
    queues         = { source = "orders", exhausted = "orders-exhausted" }
    source_redrive = { visibility_timeout_seconds = 180, max_receive_count = 5 }
  }

  expect_failures = [aws_cloudwatch_dashboard.this]
}

# --- no silent expiry without an archive -------------------------------------------------------------

run "expiry_alarms_fire_a_lead_before_the_default_14_day_retention" {
  command = plan

  assert {
    condition = {
      for k, a in aws_cloudwatch_metric_alarm.expiry : k => "${a.alarm_name} | ${a.namespace} | ${a.metric_name} | ${jsonencode(a.dimensions)} | ${a.statistic} ${a.period} x ${a.evaluation_periods} | ${a.comparison_operator} ${a.threshold}"
      } == {
      # 14 days = 1209600 s; lead = max(1 day, 20 %) = 241920 s; 1209600 - 241920 = 967680 s (11.2 days).
      dlq       = "orders-dlq-expiry | AWS/SQS | ApproximateAgeOfOldestMessage | {\"QueueName\":\"orders-dlq\"} | Maximum 3600 x 1 | GreaterThanThreshold 967680"
      exhausted = "orders-exhausted-expiry | AWS/SQS | ApproximateAgeOfOldestMessage | {\"QueueName\":\"orders-exhausted\"} | Maximum 3600 x 1 | GreaterThanThreshold 967680"
    }
    error_message = "One expiry alarm per terminal queue, on the oldest message's age, at retention - 20 %, over 1 h periods: ${jsonencode({ for k, a in aws_cloudwatch_metric_alarm.expiry : k => a.threshold })}"
  }

  assert {
    condition = alltrue([
      for a in values(aws_cloudwatch_metric_alarm.expiry) :
      a.treat_missing_data == "notBreaching" && a.actions_enabled && a.alarm_actions == toset(var.alarm_actions) && a.ok_actions == toset(var.ok_actions) && a.tags == tomap({ team = "orders" })
    ])
    error_message = "Expiry alarms notify like the others, treat an empty queue's missing data as OK, and carry the tags."
  }

  assert {
    condition = alltrue([
      strcontains(aws_cloudwatch_metric_alarm.expiry["exhausted"].alarm_description, "serverless-retry inspect --queue-url $(aws sqs get-queue-url --queue-name orders-exhausted --query QueueUrl --output text)"),
      strcontains(aws_cloudwatch_metric_alarm.expiry["exhausted"].alarm_description, "serverless-retry redrive --from-queue-url $(aws sqs get-queue-url --queue-name orders-exhausted --query QueueUrl --output text) --to-queue-url $(aws sqs get-queue-url --queue-name orders --query QueueUrl --output text) --dry-run"),
      strcontains(aws_cloudwatch_metric_alarm.expiry["dlq"].alarm_description, "serverless-retry inspect --queue-url $(aws sqs get-queue-url --queue-name orders-dlq --query QueueUrl --output text)"),
      strcontains(aws_cloudwatch_metric_alarm.expiry["dlq"].alarm_description, "serverless-retry redrive --from-queue-url $(aws sqs get-queue-url --queue-name orders-dlq --query QueueUrl --output text) --native --yes"),
      strcontains(aws_cloudwatch_metric_alarm.expiry["dlq"].alarm_description, "967680 s (11.2 d)"),
      strcontains(aws_cloudwatch_metric_alarm.expiry["dlq"].alarm_description, "1209600 s (14.0 d)"),
      strcontains(aws_cloudwatch_metric_alarm.expiry["dlq"].alarm_description, "modules/archive, then archive_enabled = true"),
      !strcontains(aws_cloudwatch_metric_alarm.expiry["dlq"].alarm_description, "\n"),
    ])
    error_message = "The description says when SQS deletes, and the commands to inspect and redrive before then: ${aws_cloudwatch_metric_alarm.expiry["dlq"].alarm_description}"
  }

  assert {
    condition     = output.alarm_names["dlq_expiry"] == "orders-dlq-expiry" && output.alarm_names["exhausted_expiry"] == "orders-exhausted-expiry" && length(output.alarm_arns) == 8
    error_message = "The expiry alarms are in alarm_arns and alarm_names as <role>_expiry."
  }

  assert {
    condition     = output.expiry_alarms.dlq == { retention_seconds = 1209600, lead_seconds = 241920, threshold_seconds = 967680, period_seconds = 3600 }
    error_message = "expiry_alarms shows the arithmetic: ${jsonencode(output.expiry_alarms)}"
  }
}

run "expiry_lead_is_at_least_a_day_for_a_4_day_retention" {
  command = plan

  variables {
    # 4 days: 20 % is 69120 s, under a day, so the lead is a day: 345600 - 86400 = 259200 s (3 days).
    retention_seconds = { exhausted = 345600 }
  }

  assert {
    condition = (
      aws_cloudwatch_metric_alarm.expiry["exhausted"].threshold == 259200 &&
      aws_cloudwatch_metric_alarm.expiry["dlq"].threshold == 967680 &&
      output.expiry_alarms.exhausted.lead_seconds == 86400
    )
    error_message = "A 4-day retention alarms at 3 days (a day's lead); the DLQ keeps its 14-day default."
  }

  assert {
    condition     = strcontains(aws_cloudwatch_metric_alarm.expiry["exhausted"].alarm_description, "259200 s (3.0 d)") && strcontains(aws_cloudwatch_metric_alarm.expiry["exhausted"].alarm_description, "345600 s (4.0 d)")
    error_message = "The description gives the threshold and the retention in seconds and days."
  }
}

run "expiry_of_a_retention_of_a_day_or_less_fires_at_a_minute" {
  command = plan

  variables {
    retention_seconds = { dlq = 3600 }
  }

  assert {
    condition     = aws_cloudwatch_metric_alarm.expiry["dlq"].threshold == 60
    error_message = "No day of lead fits in an hour: the alarm fires on any message a minute old."
  }
}

run "archive_enabled_turns_the_expiry_alarms_off" {
  command = plan

  variables {
    archive_enabled = true
  }

  assert {
    condition     = length(aws_cloudwatch_metric_alarm.expiry) == 0 && output.expiry_alarms == {} && !anytrue([for k in keys(output.alarm_arns) : endswith(k, "_expiry")])
    error_message = "With an archive the queues are buffers: no expiry alarm."
  }

  assert {
    condition     = keys(aws_cloudwatch_metric_alarm.this) == ["delivery_failed", "dlq_depth", "exhausted_depth", "function_errors", "oldest_message_age"]
    error_message = "archive_enabled changes nothing else."
  }
}

run "expiry_alarms_of_the_self_healing_terminal_queues" {
  command = plan

  variables {
    pattern       = "self-healing"
    function_name = null
    queues = {
      failure      = "heal-failures"
      failure_dlq  = "heal-failures-dlq"
      exhausted    = "heal-exhausted"
      rules_dlq    = "heal-rules-dlq"
      redrive_dlq  = "heal-redrive-dlq"
      schedule_dlq = "heal-schedule-dlq"
    }
  }

  assert {
    condition     = { for k, a in aws_cloudwatch_metric_alarm.expiry : k => a.dimensions.QueueName } == { failure_dlq = "heal-failures-dlq", exhausted = "heal-exhausted", rules_dlq = "heal-rules-dlq", redrive_dlq = "heal-redrive-dlq", schedule_dlq = "heal-schedule-dlq" }
    error_message = "Every terminal queue of self-healing gets one; the failure queue (a working queue) does not."
  }

  assert {
    condition     = strcontains(aws_cloudwatch_metric_alarm.expiry["exhausted"].alarm_description, "serverless-retry redrive --from-queue-url $(aws sqs get-queue-url --queue-name heal-exhausted --query QueueUrl --output text) --to-function --dry-run")
    error_message = "Self-healing redrives re-invoke the functions that failed."
  }
}

run "expiry_of_a_fifo_schedule_dlq_and_not_twice_for_a_standard_one" {
  command = plan

  variables {
    queues = {
      source       = "orders.fifo"
      dlq          = "orders-dlq.fifo"
      exhausted    = "orders-exhausted.fifo"
      schedule_dlq = "orders-schedule-dlq"
    }
  }

  assert {
    condition     = keys(aws_cloudwatch_metric_alarm.expiry) == ["dlq", "exhausted", "schedule_dlq"] && aws_cloudwatch_metric_alarm.expiry["schedule_dlq"].alarm_name == "orders-schedule-dlq-expiry"
    error_message = "A FIFO set's standard schedule DLQ has its own expiry alarm."
  }
}

run "expiry_native_retry_watches_the_dlq_only" {
  command = plan

  variables {
    pattern        = "native-retry"
    queues         = { source = "orders", dlq = "orders-dlq" }
    source_redrive = { visibility_timeout_seconds = 180, max_receive_count = 5 }
  }

  assert {
    condition     = keys(aws_cloudwatch_metric_alarm.expiry) == ["dlq"] && strcontains(aws_cloudwatch_metric_alarm.expiry["dlq"].alarm_description, "--native --yes")
    error_message = "Native retry has one terminal queue, the DLQ, redriven with SQS's move task."
  }
}

run "expiry_lead_shorter_than_the_time_in_the_source_warns" {
  command = plan

  # 10 receives 12 h apart: 5 days in the source, while the 14-day DLQ's lead is 2.8 days, and a
  # standard DLQ's retention counts from the first send.
  variables {
    pattern        = "native-retry"
    queues         = { source = "orders", dlq = "orders-dlq" }
    source_redrive = { visibility_timeout_seconds = 43200, max_receive_count = 10 }
  }

  expect_failures = [check.dlq_expiry_lead_covers_the_redrive_window]
}

run "expiry_retention_beyond_14_days_is_refused" {
  command = plan

  variables {
    retention_seconds = { dlq = 1209601 }
  }

  expect_failures = [var.retention_seconds]
}

run "expiry_fractional_retention_is_refused" {
  command = plan

  variables {
    retention_seconds = { exhausted = 86400.5 }
  }

  expect_failures = [var.retention_seconds]
}

run "expiry_description_fits_with_the_longest_queue_names" {
  command = plan

  # 75 characters, the longest standard queue name this module takes: the exhausted queue's description names it and the source.
  variables {
    queues = {
      source    = "s23456789012345678901234567890123456789012345678901234567890123456789012345"
      exhausted = "e23456789012345678901234567890123456789012345678901234567890123456789012345"
    }
  }

  assert {
    condition     = length(aws_cloudwatch_metric_alarm.expiry["exhausted"].alarm_description) <= 1024
    error_message = "The expiry description fits CloudWatch's 1024 characters even with 75-character queue names."
  }
}
