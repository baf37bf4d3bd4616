data "aws_region" "current" {}

locals {
  region = data.aws_region.current.name

  alarm_arns = merge(
    { for concern, alarm in aws_cloudwatch_metric_alarm.this : concern => alarm.arn },
    { for alarm in aws_cloudwatch_metric_alarm.exhausted_rate : "exhausted_rate" => alarm.arn },
  )

  # Queue graphs: each line only for the queues given.
  queue_lines = [
    for line in [
      { queue = local.queues.source, metric = "ApproximateNumberOfMessagesVisible", label = "source: waiting" },
      { queue = local.queues.source, metric = "ApproximateNumberOfMessagesNotVisible", label = "source: in flight" },
      { queue = local.queues.source, metric = "ApproximateNumberOfMessagesDelayed", label = "source: delayed retries" },
      { queue = local.queues.dlq, metric = "ApproximateNumberOfMessagesVisible", label = "DLQ" },
      { queue = local.queues.schedule_dlq == local.queues.dlq ? null : local.queues.schedule_dlq, metric = "ApproximateNumberOfMessagesVisible", label = "schedule DLQ" },
      { queue = local.queues.exhausted, metric = "ApproximateNumberOfMessagesVisible", label = "retry-exhausted" },
    ] : ["AWS/SQS", line.metric, "QueueName", line.queue, { label = line.label }] if line.queue != null
  ]
  age_lines = [
    for line in [
      { queue = local.queues.source, label = "source" },
      { queue = local.queues.dlq, label = "DLQ" },
      { queue = local.queues.exhausted, label = "retry-exhausted" },
    ] : ["AWS/SQS", "ApproximateAgeOfOldestMessage", "QueueName", line.queue, { label = line.label }] if line.queue != null
  ]

  # What each graph shows, in dashboard order; null entries (nothing to show) are dropped.
  graphs = [
    for graph in [
      length(local.queue_lines) == 0 ? null : {
        title   = "Queue depth (messages)"
        stat    = "Maximum"
        metrics = local.queue_lines
        lines   = []
      },
      length(local.age_lines) == 0 ? null : {
        title   = "Age of the oldest message (seconds)"
        stat    = "Maximum"
        metrics = local.age_lines
        lines = local.queues.source == null ? [] : [
          { label = "source alarm", value = var.thresholds.oldest_message_age_seconds },
        ]
      },
      local.service == null ? null : {
        title = "Outcomes per ${local.period} s (service ${local.service})"
        stat  = "Sum"
        metrics = [
          for metric in ["Processed", "Exhausted", "NonRetryable", "InvalidEnvelope", "DeliveryFailed"] :
          [var.metrics_namespace, metric, "service", local.service, { label = metric }]
        ]
        lines = []
      },
      local.service == null ? null : {
        title = "Retries scheduled, by transport"
        stat  = "Sum"
        metrics = [
          for transport in ["sqs-delay", "scheduler", "visibility"] :
          [var.metrics_namespace, "RetryScheduled", "service", local.service, "transport", transport, { label = transport }]
        ]
        lines = []
      },
      var.function_name == null ? null : {
        title = "Consumer invocations (${var.function_name})"
        stat  = "Sum"
        metrics = [
          for metric in ["Invocations", "Errors", "Throttles"] :
          ["AWS/Lambda", metric, "FunctionName", var.function_name, { label = metric }]
        ]
        lines = []
      },
      var.function_name == null ? null : {
        title = "Consumer duration (ms)"
        stat  = "Average"
        metrics = [
          for stat in ["Average", "p99", "Maximum"] :
          ["AWS/Lambda", "Duration", "FunctionName", var.function_name, { label = stat, stat = stat }]
        ]
        lines = []
      },
    ] : graph if graph != null
  ]

  header_markdown = join("\n", compact([
    "## serverless-retry: ${var.name}",
    join(" · ", compact([
      local.queues.source == null ? "" : "source queue `${local.queues.source}`",
      local.queues.dlq == null ? "" : "DLQ `${local.queues.dlq}`",
      local.queues.exhausted == null ? "" : "retry-exhausted queue `${local.queues.exhausted}`",
      var.function_name == null ? "" : "consumer `${var.function_name}`",
    ])),
    local.queues.exhausted == null ? "" : "Exhausted messages: inspect with `${local.inspect_command}`, redrive with `${local.redrive_command} --dry-run` (then without `--dry-run`).",
    local.queues.dlq == null ? "" : "DLQ: fix the cause in the consumer's logs, then SQS DLQ redrive (`aws sqs start-message-move-task --source-arn <DLQ ARN>`).",
  ]))

  header_widgets = [
    { type = "text", x = 0, y = 0, width = 24, height = 3, properties = { markdown = local.header_markdown } },
    {
      type       = "alarm", x = 0, y = 3, width = 24, height = 2,
      properties = { title = "Alarms", alarms = values(local.alarm_arns), sortBy = "stateUpdatedTimestamp" }
    },
  ]

  # Two graphs per row under the header.
  graph_widgets = [
    for i, graph in local.graphs : {
      type   = "metric"
      x      = (i % 2) * 12
      y      = 5 + floor(i / 2) * 6
      width  = 12
      height = 6
      properties = merge(
        {
          title   = graph.title
          region  = local.region
          view    = "timeSeries"
          stacked = false
          period  = local.period
          stat    = graph.stat
          metrics = graph.metrics
          yAxis   = { left = { min = 0 } }
        },
        # A line at an alarm's threshold, where a graph has one.
        length(graph.lines) == 0 ? {} : { annotations = { horizontal = graph.lines } },
      )
    }
  ]
}

resource "aws_cloudwatch_dashboard" "this" {
  dashboard_name = var.name
  dashboard_body = jsonencode({ widgets = concat(local.header_widgets, local.graph_widgets) })

  lifecycle {
    precondition {
      condition     = length(local.alarm_arns) > 0
      error_message = "Nothing to monitor: give at least one of queues.source, queues.dlq, queues.exhausted, function_name or service."
    }
  }
}
