data "aws_region" "current" {}

locals {
  region = data.aws_region.current.name

  alarm_arns = merge(
    { for concern, alarm in aws_cloudwatch_metric_alarm.this : concern => alarm.arn },
    { for alarm in aws_cloudwatch_metric_alarm.exhausted_rate : "exhausted_rate" => alarm.arn },
    { for alarm in aws_cloudwatch_metric_alarm.records_failing : "records_failing" => alarm.arn },
    { for role, alarm in aws_cloudwatch_metric_alarm.expiry : "${role}_expiry" => alarm.arn },
  )

  # Queue graphs: each line only for the queues given (the roles of other patterns are null).
  queue_lines = [
    for line in [
      { queue = local.queues.source, metric = "ApproximateNumberOfMessagesVisible", label = "source: waiting" },
      { queue = local.queues.source, metric = "ApproximateNumberOfMessagesNotVisible", label = "source: in flight" },
      { queue = var.pattern == "native-retry" ? null : local.queues.source, metric = "ApproximateNumberOfMessagesDelayed", label = "source: delayed retries" },
      { queue = local.queues.failure, metric = "ApproximateNumberOfMessagesVisible", label = "failure queue: waiting" },
      { queue = local.queues.failure, metric = "ApproximateNumberOfMessagesNotVisible", label = "failure queue: in flight" },
      { queue = local.queues.dlq, metric = "ApproximateNumberOfMessagesVisible", label = "DLQ" },
      { queue = local.queues.failure_dlq, metric = "ApproximateNumberOfMessagesVisible", label = "failure DLQ" },
      { queue = local.queues.schedule_dlq == local.queues.dlq ? null : local.queues.schedule_dlq, metric = "ApproximateNumberOfMessagesVisible", label = "schedule DLQ" },
      { queue = local.queues.rules_dlq, metric = "ApproximateNumberOfMessagesVisible", label = "rule targets' DLQ" },
      { queue = local.queues.redrive_dlq, metric = "ApproximateNumberOfMessagesVisible", label = "redrive DLQ" },
      { queue = local.queues.exhausted, metric = "ApproximateNumberOfMessagesVisible", label = "retry-exhausted" },
    ] : ["AWS/SQS", line.metric, "QueueName", line.queue, { label = line.label }] if line.queue != null
  ]
  age_lines = [
    for line in [
      { queue = local.queues.source, label = "source" },
      { queue = local.queues.failure, label = "failure queue" },
      { queue = local.queues.dlq, label = "DLQ" },
      { queue = local.queues.failure_dlq, label = "failure DLQ" },
      { queue = local.queues.exhausted, label = "retry-exhausted" },
    ] : ["AWS/SQS", "ApproximateAgeOfOldestMessage", "QueueName", line.queue, { label = line.label }] if line.queue != null
  ]
  age_alarm_lines = concat(
    local.queues.source == null ? [] : [{ label = "source alarm", value = local.oldest_age_threshold }],
    local.queues.failure == null || !local.healing ? [] : [{ label = "failure queue alarm", value = local.oldest_age_threshold }],
  )

  # Every function on the dashboard: the consumer (function_name) first, then the others by key.
  all_functions = merge(
    var.function_name == null ? {} : { consumer = { function_name = var.function_name, role = "consumer", service = local.service, alarm_errors = true } },
    {
      for key, f in var.functions : key => {
        function_name = f.function_name
        role          = f.role
        service       = coalesce(f.service, f.function_name)
        alarm_errors  = coalesce(f.alarm_errors, contains(["enrichment", "redrive"], f.role))
      }
    },
  )
  role_titles = { consumer = "Consumer", enrichment = "Enrichment", redrive = "Redrive", source = "Source", other = "Function" }
  # One function: its invocations and duration as before; several: one line per function and metric.
  one_function = length(local.all_functions) == 1
  function_graphs = concat(
    [
      for key, f in local.all_functions : {
        title   = "${local.role_titles[f.role]} invocations (${f.function_name})"
        stat    = "Sum"
        metrics = [for metric in ["Invocations", "Errors", "Throttles"] : ["AWS/Lambda", metric, "FunctionName", f.function_name, { label = metric }]]
        lines   = []
      } if local.one_function
    ],
    [
      for key, f in local.all_functions : {
        title   = "${local.role_titles[f.role]} duration (ms)"
        stat    = "Average"
        metrics = [for stat in ["Average", "p99", "Maximum"] : ["AWS/Lambda", "Duration", "FunctionName", f.function_name, { label = stat, stat = stat }]]
        lines   = []
      } if local.one_function
    ],
    [
      for graph in [
        {
          title = "Errors and throttles by function"
          stat  = "Sum"
          metrics = [
            for pair in setproduct(keys(local.all_functions), ["Errors", "Throttles"]) :
            ["AWS/Lambda", pair[1], "FunctionName", local.all_functions[pair[0]].function_name, { label = "${pair[0]}: ${pair[1]}" }]
          ]
          lines = []
        },
        {
          title   = "Invocations by function"
          stat    = "Sum"
          metrics = [for key, f in local.all_functions : ["AWS/Lambda", "Invocations", "FunctionName", f.function_name, { label = key }]]
          lines   = []
        },
        {
          title   = "Duration p99 by function (ms)"
          stat    = "p99"
          metrics = [for key, f in local.all_functions : ["AWS/Lambda", "Duration", "FunctionName", f.function_name, { label = key }]]
          lines   = []
        },
      ] : graph if length(local.all_functions) > 1
    ],
  )

  # The self-healing functions' own counters (ServerlessRetry, dimension service = their name).
  redrive_services    = [for f in values(var.functions) : coalesce(f.service, f.function_name) if f.role == "redrive" && local.healing]
  enrichment_services = [for f in values(var.functions) : coalesce(f.service, f.function_name) if f.role == "enrichment" && local.healing]
  healing_graphs = concat(
    [
      for service in local.redrive_services : {
        title   = "Redriven, by path (${service})"
        stat    = "Sum"
        metrics = [for via in ["invoke", "publish", "schedule"] : [var.metrics_namespace, "Redriven", "service", service, "via", via, { label = via }]]
        lines   = []
      }
    ],
    [
      for service in local.redrive_services : {
        title = "Given up by the redrive, by outcome (${service})"
        stat  = "Sum"
        metrics = [
          for outcome in ["exhausted", "non-retryable", "unknown-source", "invalid-failure-record", "too-large-to-retry"] :
          [var.metrics_namespace, "SelfHealingExhausted", "service", service, "outcome", outcome, { label = outcome }]
        ]
        lines = []
      }
    ],
    [
      for service in local.enrichment_services : {
        title   = "Failure records enriched (${service})"
        stat    = "Sum"
        metrics = [for metric in ["FailureRecords", "InvalidFailureRecord", "TooLargeForBus", "DeferredRecords"] : [var.metrics_namespace, metric, "service", service, { label = metric }]]
        lines   = []
      }
    ],
  )

  # What each graph shows, in dashboard order; null entries (nothing to show) are dropped.
  graphs = concat([
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
        lines   = local.age_alarm_lines
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
    ] : graph if graph != null
  ], local.healing_graphs, local.function_graphs)

  queue_names = {
    source       = "source queue"
    dlq          = "DLQ"
    exhausted    = "retry-exhausted queue"
    schedule_dlq = "schedule DLQ"
    failure      = "failure queue"
    failure_dlq  = "failure DLQ"
    rules_dlq    = "rule targets' DLQ"
    redrive_dlq  = "redrive DLQ"
  }
  header_markdown = join("\n", compact([
    "## serverless-retry (${var.pattern}): ${var.name}",
    join(" · ", concat(
      [for role in local.pattern_roles[var.pattern] : "${local.queue_names[role]} `${local.queues[role]}`" if local.queues[role] != null],
      [for key, f in local.all_functions : "${lower(local.role_titles[f.role])} `${f.function_name}`"],
    )),
    local.queues.exhausted == null ? "" : (local.healing
      ? "Events given up on: inspect with `${local.inspect_command}`, re-invoke the functions that failed with `${local.redrive_command} --dry-run` (then with `--yes` instead of `--dry-run`)."
      : "Exhausted messages: inspect with `${local.inspect_command}`, redrive with `${local.redrive_command} --dry-run` (then with `--yes` instead of `--dry-run`)."
    ),
    local.queues.dlq == null ? "" : "DLQ: fix the cause in the consumer's logs, then SQS DLQ redrive (`aws sqs start-message-move-task --source-arn <DLQ ARN>`).",
    local.queues.failure_dlq == null ? "" : "Failure DLQ: fix the pipe or the enrichment, then move the records back to the failure queue (`aws sqs start-message-move-task --source-arn <failure DLQ ARN>`).",
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
      condition     = length(local.alarm_arns) > 0 || length(local.graphs) > 0
      error_message = "Nothing to monitor: give at least one of queues (the roles of pattern ${var.pattern}), function_name, functions or service."
    }

    precondition {
      condition     = length(local.foreign_roles) == 0
      error_message = "queues ${join(", ", local.foreign_roles)}: not a queue of the ${var.pattern} pattern, whose queues are ${join(", ", local.pattern_roles[var.pattern])}. Set pattern to the module these queues come from (self-healing: queues = module.<name>.queue_names)."
    }

    precondition {
      condition     = length(local.healing_roles) == 0
      error_message = "functions ${join(", ", local.healing_roles)}: enrichment, redrive and source are roles of the self-healing pattern; set pattern = \"self-healing\" or give role = \"other\"."
    }

    precondition {
      condition     = !(local.native && local.queues.source != null && var.source_redrive == null)
      error_message = "The native-retry pattern needs source_redrive = { visibility_timeout_seconds, max_receive_count } of the source queue (the queue module's outputs of those names): a failing record reaches the DLQ about max_receive_count x visibility_timeout_seconds after its first receive, and the records-failing alarm is sized to fire inside that window."
    }

    precondition {
      condition     = !local.healing || var.function_name == null
      error_message = "The self-healing pattern has no consumer: give its enrichment, redrive and source functions in functions, not function_name."
    }
  }
}
