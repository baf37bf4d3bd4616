variable "name" {
  description = "Base name of everything created: queues `<name>`, `<name>-dlq`, `<name>-exhausted`; function `<name>`; schedule group `<name>-retries`."
  type        = string

  validation {
    condition     = can(regex("^[A-Za-z0-9_-]{1,46}$", var.name))
    error_message = "name must be 1-46 characters of letters, digits, hyphens and underscores (the scheduler role is \"<name>-retries-scheduler\" and IAM allows 64)."
  }
}

variable "package" {
  description = "Path of the deployment zip holding the serverless_retry package and your processor (`./build.sh package`)."
  type        = string
}

variable "processor" {
  description = "Your function called once per message, as `module:function`."
  type        = string
}

variable "handler" {
  description = "The Lambda handler. Leave null for the built-in consumer handler; set `module.function` when your own handler wraps a RetryingConsumer."
  type        = string
  default     = null

  validation {
    condition     = var.handler == null || can(regex("^[A-Za-z_][A-Za-z0-9_]*(\\.[A-Za-z_][A-Za-z0-9_]*)+$", var.handler))
    error_message = "handler must be \"module.path.function\", e.g. \"orders.lambda_handler.handler\" (or null for the built-in consumer handler)."
  }
}

variable "retry_policy" {
  description = <<-EOT
    The retry policy (DESIGN section 3): budgets, a default backoff, and rules matched by error class
    name, HTTP status or message regex (first match wins). Unset top-level fields take the Python
    defaults; a rule's backoff inherits every field it does not set from the policy's backoff.
  EOT
  type = object({
    max_attempts    = optional(number, 5)
    max_age_seconds = optional(number)
    backoff = optional(object({
      strategy     = optional(string, "exponential")
      base_seconds = optional(number, 10)
      multiplier   = optional(number, 2)
      max_seconds  = optional(number, 3600)
      jitter       = optional(string, "none")
    }), {})
    rules = optional(list(object({
      errors        = optional(list(string))
      http_status   = optional(list(number))
      message_regex = optional(string)
      retry         = optional(bool)
      max_attempts  = optional(number)
      backoff = optional(object({
        strategy     = optional(string)
        base_seconds = optional(number)
        multiplier   = optional(number)
        max_seconds  = optional(number)
        jitter       = optional(string)
      }))
      honor_retry_after = optional(bool)
    })), [])
    unmatched         = optional(string, "retry")
    transport         = optional(string, "auto")
    honor_retry_after = optional(bool, true)
  })
  default  = {}
  nullable = false

  validation {
    condition     = floor(var.retry_policy.max_attempts) == var.retry_policy.max_attempts && var.retry_policy.max_attempts >= 1 && var.retry_policy.max_attempts <= 10000
    error_message = "retry_policy.max_attempts must be a whole number from 1 to 10000, got ${var.retry_policy.max_attempts}."
  }

  validation {
    condition     = var.retry_policy.max_age_seconds == null ? true : floor(var.retry_policy.max_age_seconds) == var.retry_policy.max_age_seconds && var.retry_policy.max_age_seconds >= 1
    error_message = "retry_policy.max_age_seconds must be null (no age limit) or a whole number of seconds >= 1."
  }

  validation {
    condition     = contains(["fixed", "linear", "exponential"], var.retry_policy.backoff.strategy)
    error_message = "retry_policy.backoff.strategy must be one of fixed, linear, exponential, got \"${var.retry_policy.backoff.strategy}\"."
  }

  validation {
    condition     = contains(["none", "full", "equal", "decorrelated"], var.retry_policy.backoff.jitter)
    error_message = "retry_policy.backoff.jitter must be one of none, full, equal, decorrelated, got \"${var.retry_policy.backoff.jitter}\"."
  }

  validation {
    # A year bounds every delay: longer is a mistake, and the Scheduler's at() must stay computable.
    condition     = var.retry_policy.backoff.base_seconds >= 0 && var.retry_policy.backoff.base_seconds <= 31536000 && var.retry_policy.backoff.max_seconds >= 0 && var.retry_policy.backoff.max_seconds <= 31536000
    error_message = "retry_policy.backoff.base_seconds and max_seconds must be from 0 to 31536000 seconds (one year)."
  }

  validation {
    condition     = var.retry_policy.backoff.multiplier >= 1
    error_message = "retry_policy.backoff.multiplier must be >= 1, got ${var.retry_policy.backoff.multiplier}."
  }

  validation {
    condition     = var.retry_policy.backoff.max_seconds >= var.retry_policy.backoff.base_seconds
    error_message = "retry_policy.backoff.max_seconds (${var.retry_policy.backoff.max_seconds}) must be >= base_seconds (${var.retry_policy.backoff.base_seconds}): it caps every delay."
  }

  validation {
    condition     = contains(["retry", "dead-letter"], var.retry_policy.unmatched)
    error_message = "retry_policy.unmatched must be \"retry\" or \"dead-letter\", got \"${var.retry_policy.unmatched}\"."
  }

  validation {
    condition     = contains(["auto", "sqs-delay", "scheduler", "visibility"], var.retry_policy.transport)
    error_message = "retry_policy.transport must be one of auto, sqs-delay, scheduler, visibility, got \"${var.retry_policy.transport}\"."
  }

  validation {
    condition = alltrue([
      for r in var.retry_policy.rules :
      length((r.errors == null ? [] : r.errors)) + length((r.http_status == null ? [] : r.http_status)) > 0 || r.message_regex != null
    ])
    error_message = "Every retry_policy rule needs at least one of errors, http_status, message_regex (offending: ${join(", ", [for i, r in var.retry_policy.rules : "rules[${i}]" if length((r.errors == null ? [] : r.errors)) + length((r.http_status == null ? [] : r.http_status)) == 0 && r.message_regex == null])})."
  }

  validation {
    condition = alltrue(flatten([
      for r in var.retry_policy.rules : [for e in(r.errors == null ? [] : r.errors) : can(regex("^[A-Za-z_][A-Za-z0-9_]*(\\.[A-Za-z_][A-Za-z0-9_]*)*$", e))]
    ]))
    error_message = "retry_policy.rules[*].errors must hold exception class names such as \"TimeoutError\" or \"mypkg.errors.Throttled\" (offending: ${join(", ", flatten([for i, r in var.retry_policy.rules : [for j, e in(r.errors == null ? [] : r.errors) : "rules[${i}].errors[${j}] = \"${e}\"" if !can(regex("^[A-Za-z_][A-Za-z0-9_]*(\\.[A-Za-z_][A-Za-z0-9_]*)*$", e))]]))})."
  }

  validation {
    condition = alltrue(flatten([
      for r in var.retry_policy.rules : [for s in(r.http_status == null ? [] : r.http_status) : floor(s) == s && s >= 100 && s <= 599]
    ]))
    error_message = "retry_policy.rules[*].http_status must hold HTTP status codes from 100 to 599 (offending: ${join(", ", flatten([for i, r in var.retry_policy.rules : [for j, s in(r.http_status == null ? [] : r.http_status) : "rules[${i}].http_status[${j}] = ${s}" if !(floor(s) == s && s >= 100 && s <= 599)]]))})."
  }

  validation {
    condition     = alltrue([for r in var.retry_policy.rules : r.message_regex != ""])
    error_message = "retry_policy.rules[*].message_regex must not be empty (leave it unset instead); Python compiles it at cold start."
  }

  validation {
    condition     = alltrue([for r in var.retry_policy.rules : r.max_attempts == null ? true : floor(r.max_attempts) == r.max_attempts && r.max_attempts >= 1 && r.max_attempts <= 10000])
    error_message = "retry_policy.rules[*].max_attempts must be a whole number from 1 to 10000 (offending: ${join(", ", [for i, r in var.retry_policy.rules : "rules[${i}]" if(r.max_attempts == null ? false : !(floor(r.max_attempts) == r.max_attempts && r.max_attempts >= 1 && r.max_attempts <= 10000))])})."
  }

  validation {
    condition     = alltrue([for r in var.retry_policy.rules : try(r.backoff.strategy, null) == null ? true : contains(["fixed", "linear", "exponential"], r.backoff.strategy)])
    error_message = "retry_policy.rules[*].backoff.strategy must be one of fixed, linear, exponential (offending: ${join(", ", [for i, r in var.retry_policy.rules : "rules[${i}]" if(try(r.backoff.strategy, null) == null ? false : !contains(["fixed", "linear", "exponential"], r.backoff.strategy))])})."
  }

  validation {
    condition     = alltrue([for r in var.retry_policy.rules : try(r.backoff.jitter, null) == null ? true : contains(["none", "full", "equal", "decorrelated"], r.backoff.jitter)])
    error_message = "retry_policy.rules[*].backoff.jitter must be one of none, full, equal, decorrelated (offending: ${join(", ", [for i, r in var.retry_policy.rules : "rules[${i}]" if(try(r.backoff.jitter, null) == null ? false : !contains(["none", "full", "equal", "decorrelated"], r.backoff.jitter))])})."
  }

  validation {
    condition = alltrue([
      for r in var.retry_policy.rules : r.backoff == null ? true : alltrue([
        for v in [r.backoff.base_seconds, r.backoff.max_seconds] : v == null ? true : v >= 0 && v <= 31536000
      ])
    ])
    error_message = "retry_policy.rules[*].backoff.base_seconds and max_seconds must be from 0 to 31536000 seconds (one year)."
  }

  validation {
    condition     = alltrue([for r in var.retry_policy.rules : try(r.backoff.multiplier, null) == null ? true : r.backoff.multiplier >= 1])
    error_message = "retry_policy.rules[*].backoff.multiplier must be >= 1."
  }

  validation {
    # A rule's backoff inherits unset fields from the policy's, so compare the effective values.
    condition = alltrue([
      for r in var.retry_policy.rules :
      coalesce(try(r.backoff.max_seconds, null), var.retry_policy.backoff.max_seconds) >= coalesce(try(r.backoff.base_seconds, null), var.retry_policy.backoff.base_seconds)
    ])
    error_message = "retry_policy.rules[*].backoff: the cap (max_seconds, inherited from the policy's backoff when unset) must be >= base_seconds (offending: ${join(", ", [for i, r in var.retry_policy.rules : "rules[${i}]" if coalesce(try(r.backoff.max_seconds, null), var.retry_policy.backoff.max_seconds) < coalesce(try(r.backoff.base_seconds, null), var.retry_policy.backoff.base_seconds)])})."
  }
}

variable "timeout" {
  description = "Function timeout in seconds; the source queue's visibility timeout defaults to 6 x this."
  type        = number
  default     = 30
  nullable    = false
}

variable "visibility_timeout_seconds" {
  description = "Visibility timeout of the source queue, or null for 6 x timeout (the AWS guidance for Lambda consumers)."
  type        = number
  default     = null
}

variable "batch_size" {
  description = "Records per invocation (above 10 needs maximum_batching_window_seconds)."
  type        = number
  default     = 10
  nullable    = false
}

variable "maximum_batching_window_seconds" {
  description = "How long the event source mapping gathers records before invoking."
  type        = number
  default     = 0
  nullable    = false
}

variable "maximum_concurrency" {
  description = "Most concurrent invocations the SQS event source may drive (2-1000), or null."
  type        = number
  default     = null
}

variable "fifo" {
  description = "Use FIFO queues; retries then always go through the Scheduler (FIFO queues have no per-message delay)."
  type        = bool
  default     = false
  nullable    = false
}

variable "message_retention_seconds" {
  description = "Retention of the source queue (default 4 days); the DLQ and exhausted queue keep 14 days."
  type        = number
  default     = 345600
  nullable    = false
}

variable "max_receive_count" {
  description = "Receives before SQS moves a message to the DLQ."
  type        = number
  default     = 5
  nullable    = false
}

variable "kms_key_arn" {
  description = "Customer-managed KMS key for the queues, or null for SQS-managed SSE. The consumer and scheduler roles are granted its use."
  type        = string
  default     = null
}

variable "runtime" {
  description = "Python runtime of the function."
  type        = string
  default     = "python3.12"
  nullable    = false
}

variable "architecture" {
  description = "arm64 or x86_64."
  type        = string
  default     = "arm64"
  nullable    = false
}

variable "memory_size" {
  description = "Memory of the function in MB."
  type        = number
  default     = 256
  nullable    = false
}

variable "reserved_concurrency" {
  description = "Reserved concurrent executions of the function, or null."
  type        = number
  default     = null
}

variable "tracing" {
  description = "Enable active X-Ray tracing."
  type        = bool
  default     = false
  nullable    = false
}

variable "log_retention_days" {
  description = "Retention of the function's log group in days."
  type        = number
  default     = 30
  nullable    = false
}

variable "log_level" {
  description = "POWERTOOLS_LOG_LEVEL of the function."
  type        = string
  default     = "INFO"
  nullable    = false
}

variable "environment" {
  description = "Extra environment variables for your processor (not SERVERLESS_RETRY_* or POWERTOOLS_*)."
  type        = map(string)
  default     = {}
  nullable    = false
}

variable "idempotency_table_arn" {
  description = "DynamoDB table for Powertools idempotency keyed on the message's first-delivery id (partition key `id`), or null."
  type        = string
  default     = null
}

variable "permissions_boundary_arn" {
  description = "Optional permissions boundary for both roles."
  type        = string
  default     = null
}

variable "tags" {
  description = "Tags for every taggable resource."
  type        = map(string)
  default     = {}
  nullable    = false
}

variable "operator_redrive" {
  description = <<-EOT
    The operator's redrive function (serverless_retry.handlers.redrive_queue), off by default. With
    enabled = true the module deploys <name>-redrive from the same package: invoke it with the options
    of `serverless-retry redrive` as a JSON event to move messages from the retry-exhausted queue or the
    DLQ back to the source queue from inside AWS. It stops 10 s before its timeout, leaving the rest in
    place; invoke it again to go on.
  EOT
  type = object({
    enabled                 = optional(bool, false)
    timeout                 = optional(number, 300)
    memory_size             = optional(number, 256)
    logs_kms_key_arn        = optional(string)
    environment_kms_key_arn = optional(string)
  })
  default  = {}
  nullable = false

  validation {
    condition     = var.operator_redrive.timeout >= 30 && var.operator_redrive.timeout <= 900
    error_message = "operator_redrive.timeout must be 30 to 900 seconds (Lambda's maximum); the function stops 10 s before it, so below 30 s a pass would barely start."
  }

  validation {
    condition     = var.operator_redrive.memory_size >= 128 && var.operator_redrive.memory_size <= 10240
    error_message = "operator_redrive.memory_size must be 128 to 10240 MB (Lambda's range); 256 is plenty for a redrive."
  }
}
