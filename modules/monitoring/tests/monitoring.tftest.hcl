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
    condition     = length(jsondecode(aws_cloudwatch_dashboard.this.dashboard_body).widgets[1].properties.alarms) == 6
    error_message = "The alarm widget shows all six alarms."
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
