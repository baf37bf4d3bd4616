variable "name" {
  description = "Base name of everything created: queues `<name>`, `<name>-dlq`, `<name>-exhausted`; the consumer function and its role `<name>`; schedule group `<name>-retries` and its role `<name>-retries-scheduler`; the operator's redrive function and role `<name>-redrive`."
  type        = string

  validation {
    condition     = can(regex("^[A-Za-z0-9_-]{1,46}$", var.name))
    error_message = "name must be 1-46 characters of letters, digits, hyphens and underscores (the scheduler role is \"<name>-retries-scheduler\" and IAM allows 64)."
  }
}

variable "package" {
  description = "Path of the local deployment zip: your processor, with the serverless_retry package unless it comes in a layer (`serverless-retry package` builds one). Give exactly one of package and s3_package."
  type        = string
  default     = null
}

variable "s3_package" {
  description = "The deployment zip as an S3 object instead of package: bucket, key, and optionally object_version and source_code_hash (base64 SHA-256; redeploys when it changes). See modules/consumer."
  type = object({
    bucket           = string
    key              = string
    object_version   = optional(string)
    source_code_hash = optional(string)
  })
  default = null
}

variable "layers" {
  description = "Layer version ARNs of the consumer and the operator's redrive function (at most 5), e.g. the layer module's `arn` with serverless_retry, so that the package holds only your code."
  type        = list(string)
  default     = []
  nullable    = false
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
    The retry policy (reference: docs/retry-policy.md) as an HCL object or `jsondecode(file("policy.json"))`: budgets, a
    default backoff, and rules matched by error class name, HTTP status or RE2 message regex (first match
    wins). Unset (or null) fields take the Python defaults; a rule's backoff inherits every field it
    leaves unset from the policy's. Checked at plan time by modules/retry-policy: an unknown field at any
    level is an error naming it (taken as `any`, not a typed object, which would silently drop it).
  EOT
  type        = any
  default     = {}
  nullable    = false
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
  description = "Use FIFO queues. A FIFO source gets content-based deduplication (producers send a MessageGroupId; a MessageDeduplicationId is optional) and a standard `<name>-schedule-dlq` for the retry schedules. FIFO queues have no per-message delay: retries stay in place (fifo_order = ordered) or go through the Scheduler (unordered)."
  type        = bool
  default     = false
  nullable    = false
}

variable "fifo_order" {
  description = "FIFO only. `ordered`: a failed message is retried in place with the visibility timeout, and the later messages of its group wait (other groups go on). `unordered`: the retry leaves its group through the Scheduler and the rest of the group overtakes it. Wired as SERVERLESS_RETRY_FIFO_ORDER."
  type        = string
  default     = "ordered"
  nullable    = false

  validation {
    condition     = contains(["ordered", "unordered"], var.fifo_order)
    error_message = "fifo_order must be \"ordered\" (retry in place, the message group waits) or \"unordered\" (the retry leaves its group through the Scheduler), got \"${var.fifo_order}\"."
  }
}

variable "max_message_size" {
  description = "Maximum message size of the source queue and its DLQ in bytes (the consumer's envelope size guard). The default is 2 KiB below the retry-exhausted queue's 262144 (hashicorp/aws 5.x's largest), so a message at the limit is still exhausted with its outcome and reason. SQS allows up to 1048576 with hashicorp/aws 6.8 and later."
  type        = number
  default     = 260096
  nullable    = false
}

variable "exhausted_max_message_size" {
  description = "Maximum message size of the retry-exhausted queue in bytes, or null for as large as SQS and the provider allow. It must be at least max_message_size + 2048 (the most a terminal message's outcome and reason add around the body), checked at plan time."
  type        = number
  default     = null
}

variable "message_retention_seconds" {
  description = "Retention of the source queue (default 4 days); the DLQ and exhausted queue keep 14 days."
  type        = number
  default     = 345600
  nullable    = false
}

variable "max_receive_count" {
  description = "Receives before SQS moves a message to the DLQ: at least 5 (AWS Lambda's guidance), above the policy's largest max_attempts with the visibility transport, and at least 2 x max_attempts + 1 for a FIFO source with fifo_order = \"ordered\" (a message held back behind a failing one in its group is received once per attempt of that one, then needs its own budget; behind k failing messages it needs (k + 1) x max_attempts receives). null: 5, max_attempts + 1 with the visibility transport, max(5, 2 x max_attempts + 1) for FIFO ordered."
  type        = number
  default     = null
}

variable "allow_max_receive_count_below_5" {
  description = "Accept a max_receive_count below 5, against AWS Lambda's guidance (messages reach the DLQ after fewer receives)."
  type        = bool
  default     = false
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

variable "architectures" {
  description = "Instruction set of the functions: [\"arm64\"] (the default) or [\"x86_64\"]; the package and layers must be built for it."
  type        = list(string)
  default     = ["arm64"]
  nullable    = false

  validation {
    condition     = length(var.architectures) == 1 && alltrue([for a in var.architectures : contains(["arm64", "x86_64"], a)])
    error_message = "architectures must be [\"arm64\"] or [\"x86_64\"]: Lambda runs a function on exactly one instruction set, got ${jsonencode(var.architectures)}."
  }
}

variable "memory_size" {
  description = "Memory of the function in MB."
  type        = number
  default     = 256
  nullable    = false
}

variable "reserved_concurrency" {
  description = "Reserved concurrent executions of the function, or null. With it, set maximum_concurrency to at most this (modules/consumer checks it): Lambda's SQS pollers do not look at reserved concurrency, and batches received beyond it are throttled and drift toward the DLQ."
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

variable "logs_kms_key_arn" {
  description = "KMS key to encrypt the consumer's log group with (checkov CKV_AWS_158), or null for CloudWatch Logs' default encryption. Its key policy must allow logs.<region>.amazonaws.com."
  type        = string
  default     = null
}

variable "environment_kms_key_arn" {
  description = "KMS key to encrypt the consumer's environment variables with, or null for the Lambda-managed key."
  type        = string
  default     = null
}

variable "code_signing_config_arn" {
  description = "Lambda code signing configuration of the consumer, or null. With one, Lambda accepts only a package signed by its AWS Signer profiles."
  type        = string
  default     = null
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

variable "archive" {
  description = "The archive (modules/archive) for claim-check payloads: a final envelope too large for the retry-exhausted queue goes whole to `<prefix>payloads/` and the queue gets a pointer with its reason (modules/consumer's `archive`). null: framed instead."
  type = object({
    bucket_arn  = string
    prefix      = optional(string, "serverless-retry/")
    kms_key_arn = optional(string)
  })
  default = null
}

variable "settings" {
  description = "For composing modules (e.g. modules/stream-retry), not for your processor: SERVERLESS_RETRY_* settings of the built-in handlers that the consumer does not wire itself, merged last into its environment (modules/consumer's `settings`)."
  type        = map(string)
  default     = {}
  nullable    = false

  validation {
    condition     = alltrue([for k in keys(var.settings) : can(regex("^SERVERLESS_RETRY_[A-Z0-9_]+$", k))])
    error_message = "settings holds SERVERLESS_RETRY_* variables only (upper-case letters, digits and underscores after the prefix); your processor's own variables go in environment."
  }
}

variable "idempotency_table_arn" {
  description = "DynamoDB table for Powertools idempotency keyed on the message's first-delivery id (partition key `id`), or null: a processor that succeeded is not run again. Separate from `claims`, which keep one retry chain per message."
  type        = string
  default     = null
}

variable "claims" {
  description = "One retry chain per message (modules/consumer's `claims`): by default the consumer module creates an on-demand, encrypted claims table with TTL (`<name>-claims`). `enabled = false` opts out, `table_arn` brings your own table (partition key `id` of type S, TTL on `expiration`; nothing is created), `kms_key_arn` is the table's customer managed key (null: the AWS managed key aws/dynamodb)."
  type = object({
    enabled     = optional(bool, true)
    table_arn   = optional(string)
    kms_key_arn = optional(string)
  })
  default  = {}
  nullable = false
}

variable "permissions_boundary_arn" {
  description = "Optional permissions boundary for the roles the module creates."
  type        = string
  default     = null
}

variable "vpc" {
  description = "Run the consumer (and the operator's redrive function) in your VPC: subnet_ids and security_group_ids, both given, or null. The roles get the network-interface permissions on exactly these; the functions then reach SQS, EventBridge Scheduler and CloudWatch Logs through a NAT gateway or VPC endpoints."
  type = object({
    subnet_ids         = list(string)
    security_group_ids = list(string)
  })
  default = null
}

variable "role_arn" {
  description = "Bring your own role for the consumer: no role is created, and the `consumer_policy_json` output holds the statements to attach to it (before the event source mapping is created: see modules/consumer). null: the module creates the role `<name>`."
  type        = string
  default     = null
}

variable "policy_statements" {
  description = "Extra statements for the consumer's role, for what your processor calls: sid (optional), effect (default Allow), actions, resources, conditions ({test, variable, values}). Not with role_arn."
  type = list(object({
    sid       = optional(string)
    effect    = optional(string, "Allow")
    actions   = list(string)
    resources = list(string)
    conditions = optional(list(object({
      test     = string
      variable = string
      values   = list(string)
    })), [])
  }))
  default  = []
  nullable = false
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
    place; invoke it again to go on. It runs from the consumer's code (package or s3_package, layers),
    architecture and VPC; role_arn brings your own role for it (attach `operator_policy_json`), and
    policy_statements add to the role the module creates.
  EOT
  type = object({
    enabled                 = optional(bool, false)
    timeout                 = optional(number, 300)
    memory_size             = optional(number, 256)
    logs_kms_key_arn        = optional(string)
    environment_kms_key_arn = optional(string)
    role_arn                = optional(string)
    policy_statements = optional(list(object({
      sid       = optional(string)
      effect    = optional(string, "Allow")
      actions   = list(string)
      resources = list(string)
      conditions = optional(list(object({
        test     = string
        variable = string
        values   = list(string)
      })), [])
    })), [])
  })
  default  = {}
  nullable = false

  validation {
    condition     = var.operator_redrive.role_arn == null ? true : can(regex("^arn:aws[a-z-]*:iam::[0-9]{12}:role/([A-Za-z0-9+=,.@_-]+/)*[A-Za-z0-9+=,.@_-]{1,64}$", var.operator_redrive.role_arn))
    error_message = "operator_redrive.role_arn must be an IAM role ARN (arn:<partition>:iam::<account>:role/<path/><name>), or null to let the module create the role."
  }

  validation {
    condition     = var.operator_redrive.role_arn == null || length(var.operator_redrive.policy_statements) == 0
    error_message = "operator_redrive.policy_statements add to the role the module creates, but operator_redrive.role_arn brings your own: attach your statements to it yourself, or leave role_arn null."
  }

  validation {
    condition = alltrue([for s in var.operator_redrive.policy_statements : (
      (s.sid == null ? true : can(regex("^[A-Za-z0-9]{1,128}$", s.sid))) && contains(["Allow", "Deny"], s.effect) && length(s.resources) >= 1 &&
      length(s.actions) >= 1 && alltrue([for a in s.actions : can(regex("^[a-z0-9-]+:[A-Za-z0-9*?]+$", a)) && !can(regex(":\\*$", a))])
    )])
    error_message = "operator_redrive.policy_statements: each needs actions named as \"service:Action\" (no \"*\" or \"service:*\"), at least one resource, effect Allow or Deny, and a sid of letters and digits if any."
  }

  validation {
    condition     = var.operator_redrive.timeout >= 30 && var.operator_redrive.timeout <= 900
    error_message = "operator_redrive.timeout must be 30 to 900 seconds (Lambda's maximum); the function stops 10 s before it, so below 30 s a pass would barely start."
  }

  validation {
    condition     = var.operator_redrive.memory_size >= 128 && var.operator_redrive.memory_size <= 10240
    error_message = "operator_redrive.memory_size must be 128 to 10240 MB (Lambda's range); 256 is plenty for a redrive."
  }
}
