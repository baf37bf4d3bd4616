variable "name" {
  description = "Base name: the dashboard is `<name>` and each alarm `<name>-<concern>` (e.g. `orders-dlq-depth`)."
  type        = string

  validation {
    # Dashboard names allow letters, digits, hyphens and underscores; the longest alarm suffix
    # ("-oldest-message-age", 19) keeps alarm names well inside CloudWatch's 255.
    condition     = can(regex("^[A-Za-z0-9_-]{1,200}$", var.name))
    error_message = "name must be 1-200 characters of letters, digits, hyphens and underscores (it is the dashboard name)."
  }
}

variable "pattern" {
  description = "Which of our queue sets this instance watches, so that every alarm description and the dashboard say what its queues and functions are and what to do: `scheduled-retry` (modules/scheduled-retry, or modules/queue + modules/consumer: queues `source`, `dlq`, `exhausted`, `schedule_dlq` and the consumer `function_name`), `native-retry` (a source queue and the DLQ its redrive policy fills, the consumer retrying through the visibility timeout: `source`, `dlq`, `function_name`) or `self-healing` (modules/self-healing: `queues = module.<name>.queue_names`, i.e. `failure`, `failure_dlq`, `exhausted`, `rules_dlq`, `redrive_dlq`, `schedule_dlq`, and its functions in `functions`)."
  type        = string
  default     = "scheduled-retry"
  nullable    = false

  validation {
    condition     = contains(["scheduled-retry", "native-retry", "self-healing"], var.pattern)
    error_message = "pattern must be scheduled-retry, native-retry or self-healing, got \"${var.pattern}\"."
  }
}

variable "queues" {
  description = "Names (not URLs or ARNs) of the queues to watch, by role. scheduled-retry: the module's `queue_name` (`source`), `dlq_name`, `exhausted_queue_name` and, for a FIFO source, `schedule_dlq_name` (the standard dead-letter queue of its retry schedules; leave it null when it is the DLQ). native-retry: `source` and `dlq`. self-healing: the self-healing module's `queue_names` output as it is (`failure`, `failure_dlq`, `exhausted`, `rules_dlq`, `redrive_dlq`, `schedule_dlq`). Each is optional: an alarm or graph is only made for the queues given, and a role the pattern does not have is an error."
  type = object({
    source       = optional(string)
    dlq          = optional(string)
    exhausted    = optional(string)
    schedule_dlq = optional(string)
    failure      = optional(string)
    failure_dlq  = optional(string)
    rules_dlq    = optional(string)
    redrive_dlq  = optional(string)
  })
  default  = {}
  nullable = false

  validation {
    condition = alltrue([
      for q in values(var.queues) :
      q == null ? true : can(regex("^[A-Za-z0-9_-]{1,75}(\\.fifo)?$", q)) && length(q) <= 80
    ])
    error_message = "Every queues entry must be an SQS queue name (up to 80 letters, digits, hyphens and underscores, optionally ending in .fifo), not a URL or ARN."
  }
}

variable "function_name" {
  description = "Name of the consumer function (scheduled-retry, native-retry) whose Errors are alarmed and whose invocations, errors, throttles and duration are graphed. null: no consumer alarm or graphs. The self-healing pattern has no consumer: give its functions in `functions`."
  type        = string
  default     = null

  validation {
    condition     = var.function_name == null ? true : can(regex("^[A-Za-z0-9_-]{1,64}$", var.function_name))
    error_message = "function_name must be a Lambda function name (1-64 letters, digits, hyphens and underscores), not an ARN."
  }
}

variable "functions" {
  description = <<-EOT
    More functions on the same dashboard, by a short key (it names the alarm `<name>-<key>-function-errors`).
    `role` says what each one is: `enrichment` and `redrive` (the self-healing module's
    `enrichment_function_name` and `redrive_function_name`: their Errors are alarmed, their
    ServerlessRetry metrics graphed), `source` (a self-healing source function: graphed, not alarmed,
    since its failures are what the pattern heals) or `other` (graphed). `alarm_errors` overrides
    whether Errors are alarmed; `service` is the function's POWERTOOLS_SERVICE_NAME (default: its name,
    as modules/self-healing sets it).
  EOT
  type = map(object({
    function_name = string
    role          = string
    alarm_errors  = optional(bool)
    service       = optional(string)
  }))
  default  = {}
  nullable = false

  validation {
    condition     = alltrue([for k, f in var.functions : can(regex("^[a-z0-9_]{1,32}$", k)) && k != "consumer"])
    error_message = "functions keys must be 1-32 lower-case letters, digits and underscores (each names an alarm), and not consumer (function_name's)."
  }

  validation {
    condition     = alltrue([for f in values(var.functions) : can(regex("^[A-Za-z0-9_-]{1,64}$", f.function_name))])
    error_message = "functions[*].function_name must be Lambda function names (1-64 letters, digits, hyphens and underscores), not ARNs."
  }

  validation {
    condition     = alltrue([for f in values(var.functions) : contains(["enrichment", "redrive", "source", "other"], f.role)])
    error_message = "functions[*].role must be enrichment, redrive, source or other."
  }

  validation {
    condition     = alltrue([for f in values(var.functions) : f.service == null ? true : length(f.service) >= 1 && length(f.service) <= 255])
    error_message = "functions[*].service must be 1-255 characters (a CloudWatch dimension value)."
  }
}

variable "service" {
  description = "The `service` dimension of the consumer's ServerlessRetry metrics (its POWERTOOLS_SERVICE_NAME). null uses function_name, which is what the consumer and scheduled-retry modules set. With neither, no metric alarms or graphs of the ServerlessRetry namespace are made."
  type        = string
  default     = null

  validation {
    condition     = var.service == null ? true : length(var.service) >= 1 && length(var.service) <= 255
    error_message = "service must be 1-255 characters (a CloudWatch dimension value)."
  }
}

variable "metrics_namespace" {
  description = "Namespace of the consumer's EMF metrics (its POWERTOOLS_METRICS_NAMESPACE)."
  type        = string
  default     = "ServerlessRetry"
  nullable    = false

  validation {
    condition     = length(var.metrics_namespace) >= 1 && length(var.metrics_namespace) <= 255 && !startswith(var.metrics_namespace, "AWS/")
    error_message = "metrics_namespace must be 1-255 characters and not an AWS/ namespace."
  }
}

variable "thresholds" {
  description = <<-EOT
    When each alarm fires (each fires above its value). Depths are messages (dlq_depth for every
    dead-letter queue of the pattern); errors and DeliveryFailed are counts per period (function_errors
    for every alarmed function). oldest_message_age_seconds must exceed the longest wait a healthy
    retry spends in the source queue: 900 s for SQS-delay retries, the policy's max_seconds with the
    visibility transport (self-healing: a failure record waits only for the pipe). null: 1800, or for
    native-retry 2 x the source's visibility timeout (SQS leaves a message out of the metric from its
    third receive on). exhausted_percent is the share (0-100) of the messages the consumer finished in
    a period that were Exhausted, only evaluated for periods with at least exhausted_min_messages
    finished messages, so one failure out of two does not page anyone. records_failing (native-retry)
    is the number of receives of the source queue in one alarm period that ended without a delete.
  EOT
  type = object({
    dlq_depth                  = optional(number, 0)
    exhausted_depth            = optional(number, 0)
    oldest_message_age_seconds = optional(number)
    records_failing            = optional(number, 0)
    function_errors            = optional(number, 0)
    delivery_failed            = optional(number, 0)
    exhausted_percent          = optional(number, 5)
    exhausted_min_messages     = optional(number, 10)
  })
  default  = {}
  nullable = false

  validation {
    condition = alltrue([
      for t in [var.thresholds.dlq_depth, var.thresholds.exhausted_depth, var.thresholds.function_errors, var.thresholds.delivery_failed, var.thresholds.records_failing] :
      floor(t) == t && t >= 0
    ])
    error_message = "thresholds.dlq_depth, exhausted_depth, function_errors, delivery_failed and records_failing must be whole numbers >= 0 (the alarm fires above them)."
  }

  validation {
    # 14 days is the longest an SQS queue keeps a message.
    condition     = var.thresholds.oldest_message_age_seconds == null ? true : floor(var.thresholds.oldest_message_age_seconds) == var.thresholds.oldest_message_age_seconds && var.thresholds.oldest_message_age_seconds >= 60 && var.thresholds.oldest_message_age_seconds <= 1209600
    error_message = "thresholds.oldest_message_age_seconds must be null or a whole number of seconds from 60 to 1209600 (14 days, the longest SQS keeps a message), got ${coalesce(var.thresholds.oldest_message_age_seconds, -1)}."
  }

  validation {
    condition     = var.thresholds.exhausted_percent >= 0 && var.thresholds.exhausted_percent < 100
    error_message = "thresholds.exhausted_percent must be from 0 to below 100 (the alarm fires above it), got ${var.thresholds.exhausted_percent}."
  }

  validation {
    condition     = floor(var.thresholds.exhausted_min_messages) == var.thresholds.exhausted_min_messages && var.thresholds.exhausted_min_messages >= 1
    error_message = "thresholds.exhausted_min_messages must be a whole number >= 1, got ${var.thresholds.exhausted_min_messages}."
  }
}

variable "source_redrive" {
  description = "The source queue's visibility timeout and maxReceiveCount (the queue module's visibility_timeout_seconds and max_receive_count outputs). Required by the native-retry pattern with a source queue: a failing record comes back every visibility timeout and reaches the DLQ about max_receive_count x visibility_timeout_seconds after its first receive, and the records_failing alarm is sized to fire well inside that window. Ignored by the other patterns."
  type = object({
    visibility_timeout_seconds = number
    max_receive_count          = number
  })
  default = null

  validation {
    condition     = var.source_redrive == null ? true : floor(var.source_redrive.visibility_timeout_seconds) == var.source_redrive.visibility_timeout_seconds && var.source_redrive.visibility_timeout_seconds >= 0 && var.source_redrive.visibility_timeout_seconds <= 43200
    error_message = "source_redrive.visibility_timeout_seconds must be a whole number of seconds from 0 to 43200 (SQS's range)."
  }

  validation {
    condition     = var.source_redrive == null ? true : floor(var.source_redrive.max_receive_count) == var.source_redrive.max_receive_count && var.source_redrive.max_receive_count >= 1 && var.source_redrive.max_receive_count <= 1000
    error_message = "source_redrive.max_receive_count must be a whole number from 1 to 1000 (SQS's range)."
  }
}

variable "evaluation" {
  description = "How every alarm evaluates: the period in seconds, the number of periods looked at, and how many of them must breach (null: all of them)."
  type = object({
    period_seconds      = optional(number, 300)
    evaluation_periods  = optional(number, 1)
    datapoints_to_alarm = optional(number)
  })
  default  = {}
  nullable = false

  validation {
    # SQS and Lambda publish one-minute metrics; CloudWatch looks back at most one day for them.
    condition     = floor(var.evaluation.period_seconds / 60) * 60 == var.evaluation.period_seconds && var.evaluation.period_seconds >= 60 && var.evaluation.period_seconds <= 86400
    error_message = "evaluation.period_seconds must be a multiple of 60 from 60 to 86400, got ${var.evaluation.period_seconds}."
  }

  validation {
    condition     = floor(var.evaluation.evaluation_periods) == var.evaluation.evaluation_periods && var.evaluation.evaluation_periods >= 1 && var.evaluation.period_seconds * var.evaluation.evaluation_periods <= 86400
    error_message = "evaluation.evaluation_periods must be a whole number >= 1, and evaluation_periods x period_seconds at most 86400 (one day)."
  }

  validation {
    condition     = var.evaluation.datapoints_to_alarm == null ? true : floor(var.evaluation.datapoints_to_alarm) == var.evaluation.datapoints_to_alarm && var.evaluation.datapoints_to_alarm >= 1 && var.evaluation.datapoints_to_alarm <= var.evaluation.evaluation_periods
    error_message = "evaluation.datapoints_to_alarm must be null or a whole number from 1 to evaluation_periods."
  }
}

variable "alarm_actions" {
  description = "ARNs notified when an alarm fires, e.g. SNS topics (at most 5, CloudWatch's limit)."
  type        = list(string)
  default     = []
  nullable    = false

  validation {
    condition     = alltrue([for a in var.alarm_actions : can(regex("^arn:aws[a-z-]*:[a-z0-9-]+:[a-z0-9-]*:[a-z0-9-]*:.+$", a))])
    error_message = "Every alarm_actions entry must be an ARN (arn:<partition>:<service>:<region>:<account>:<resource>), e.g. an SNS topic ARN; offending: ${join(", ", [for a in var.alarm_actions : "\"${a}\"" if !can(regex("^arn:aws[a-z-]*:[a-z0-9-]+:[a-z0-9-]*:[a-z0-9-]*:.+$", a))])}."
  }

  validation {
    condition     = length(var.alarm_actions) <= 5
    error_message = "CloudWatch allows at most 5 alarm_actions per alarm."
  }
}

variable "ok_actions" {
  description = "ARNs notified when an alarm returns to OK (at most 5)."
  type        = list(string)
  default     = []
  nullable    = false

  validation {
    condition     = alltrue([for a in var.ok_actions : can(regex("^arn:aws[a-z-]*:[a-z0-9-]+:[a-z0-9-]*:[a-z0-9-]*:.+$", a))])
    error_message = "Every ok_actions entry must be an ARN (arn:<partition>:<service>:<region>:<account>:<resource>), e.g. an SNS topic ARN; offending: ${join(", ", [for a in var.ok_actions : "\"${a}\"" if !can(regex("^arn:aws[a-z-]*:[a-z0-9-]+:[a-z0-9-]*:[a-z0-9-]*:.+$", a))])}."
  }

  validation {
    condition     = length(var.ok_actions) <= 5
    error_message = "CloudWatch allows at most 5 ok_actions per alarm."
  }
}

variable "tags" {
  description = "Tags for every alarm (CloudWatch dashboards take no tags)."
  type        = map(string)
  default     = {}
  nullable    = false
}

variable "archive_enabled" {
  description = "true when modules/archive drains this deployment's terminal queues into S3: the queues are then buffers, and the expiry alarms (a terminal queue's oldest message nearing its retention, when SQS would delete it unread) are not made. false (the default): one expiry alarm per terminal queue given (scheduled-retry: dlq, exhausted, schedule_dlq; native-retry: dlq; self-healing: failure_dlq, exhausted, rules_dlq, redrive_dlq, schedule_dlq)."
  type        = bool
  default     = false
  nullable    = false
}

variable "retention_seconds" {
  description = "message_retention_seconds of each terminal queue, by role (default 1209600, 14 days: what modules/queue and modules/self-healing give every DLQ and retry-exhausted queue; pass their dlq_message_retention_seconds or exhausted_message_retention_seconds if you changed them). The expiry alarm fires when the queue's oldest message is older than retention - max(1 day, 20 % of retention)."
  type = object({
    dlq          = optional(number, 1209600)
    exhausted    = optional(number, 1209600)
    schedule_dlq = optional(number, 1209600)
    failure_dlq  = optional(number, 1209600)
    rules_dlq    = optional(number, 1209600)
    redrive_dlq  = optional(number, 1209600)
  })
  default  = {}
  nullable = false

  validation {
    condition     = alltrue([for r in values(var.retention_seconds) : floor(r) == r && r >= 60 && r <= 1209600])
    error_message = "Every retention_seconds entry must be a whole number of seconds from 60 to 1209600 (SQS's range for message_retention_seconds)."
  }
}
