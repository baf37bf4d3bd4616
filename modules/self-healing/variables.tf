variable "name" {
  description = "Base name of everything created: bus `<name>`, queues `<name>-failures`, `<name>-failures-dlq`, `<name>-exhausted`, `<name>-rules-dlq`, `<name>-redrive-dlq`, `<name>-schedule-dlq`; functions and roles `<name>-enrichment`, `<name>-redrive`; pipe `<name>-failures`; schedule group `<name>-redrive`; rules `<name>-retry-<source>`, `<name>-budget-<source>`, `<name>-do-not-retry`, `<name>-invalid-record`, `<name>-unknown-source`."
  type        = string

  validation {
    # The longest names built from it: "<name>-budget-<source key>" (EventBridge rule names allow 64, and
    # source keys 24) and "<name>-redrive-scheduler" (IAM role names allow 64).
    condition     = can(regex("^[A-Za-z0-9_-]{1,32}$", var.name)) && var.name != "default"
    error_message = "name must be 1-32 characters of letters, digits, hyphens and underscores, and not \"default\" (the event bus is named after it): rule names are \"<name>-budget-<source key>\" and EventBridge allows 64."
  }
}

variable "sources" {
  description = <<-EOT
    The functions to heal, keyed by a short name (1-24 letters, digits, hyphens, underscores; it names
    their rules). Each is an object:
    - function_name (required): the Lambda function's name (not its ARN). Its asynchronous invocations
      (SNS, EventBridge rules, direct async invokes) get an on-failure destination to the failure
      queue; the rules match failures by this name.
    - function_role_name (required): the name of the function's execution role. Lambda sends
      destination records with it, so the module attaches sqs:SendMessage on the failure queue to it.
    - topic_arn (optional): the SNS topic that triggers the function; with redrive_to = "topic" a
      retry is re-published there (with the original subject and attributes).
    - retry_policy (optional): this source's retry policy (docs/retry-policy.md, checked by
      modules/retry-policy: unknown fields are errors); absent or null = the module's retry_policy.
    - on_failure (optional): "queue" (default) sends the function's destination records to the failure
      queue; "s3" sends them to the failure_records bucket instead (Lambda writes each record whole,
      so a record over the queue's max_message_size is kept), and the bucket's notification puts a
      small S3 event on the failure queue. For functions whose events (with the response) may exceed
      max_message_size: on AWS a record that does not fit the queue is lost.
    Taken as `any` so that each source can have a policy of its own shape.
  EOT
  type        = any
  nullable    = false

  validation {
    condition     = can(keys(var.sources)) && try(length(keys(var.sources)) >= 1, false)
    error_message = "sources must be a map (object) with at least one source: { <key> = { function_name = \"...\", function_role_name = \"...\" } }."
  }

  validation {
    condition     = alltrue([for k in try(keys(var.sources), []) : can(regex("^[A-Za-z0-9_-]{1,24}$", k))])
    error_message = "Every key of sources must be 1-24 letters, digits, hyphens or underscores (it names the source's rules); offending: ${join(", ", [for k in try(keys(var.sources), []) : "\"${k}\"" if !can(regex("^[A-Za-z0-9_-]{1,24}$", k))])}."
  }

  validation {
    condition = alltrue([
      for k in try(keys(var.sources), []) :
      can(keys(var.sources[k])) && length(setsubtract(try(keys(var.sources[k]), []), ["function_name", "function_role_name", "topic_arn", "retry_policy", "on_failure"])) == 0
    ])
    error_message = "Every source must be an object with only function_name, function_role_name, topic_arn, retry_policy and on_failure (a misspelt field would otherwise be ignored); offending: ${join(", ", [for k in try(keys(var.sources), []) : "sources.${k} (${can(keys(var.sources[k])) ? join(", ", setsubtract(keys(var.sources[k]), ["function_name", "function_role_name", "topic_arn", "retry_policy", "on_failure"])) : "not an object"})" if !can(keys(var.sources[k])) || length(setsubtract(try(keys(var.sources[k]), []), ["function_name", "function_role_name", "topic_arn", "retry_policy", "on_failure"])) > 0])}."
  }

  validation {
    condition     = alltrue([for k in try(keys(var.sources), []) : contains(["queue", "s3"], try(coalesce(try(var.sources[k].on_failure, null), "queue"), ""))])
    error_message = "on_failure must be \"queue\" (the failure queue, the default) or \"s3\" (the failure_records bucket, for records larger than the queue takes); offending: ${join(", ", [for k in try(keys(var.sources), []) : "sources.${k}" if !contains(["queue", "s3"], try(coalesce(try(var.sources[k].on_failure, null), "queue"), ""))])}."
  }

  validation {
    # An unqualified name: the event invoke config, the rules and the redrive all refer to the function.
    condition = alltrue([
      for k in try(keys(var.sources), []) : can(regex("^[A-Za-z0-9_-]{1,64}$", var.sources[k].function_name))
    ])
    error_message = "Every source needs function_name: the function's name, 1-64 letters, digits, hyphens or underscores (not an ARN, no qualifier); offending: ${join(", ", [for k in try(keys(var.sources), []) : "sources.${k}" if !can(regex("^[A-Za-z0-9_-]{1,64}$", var.sources[k].function_name))])}."
  }

  validation {
    condition = alltrue([
      for k in try(keys(var.sources), []) : can(regex("^[A-Za-z0-9+=,.@_-]{1,64}$", var.sources[k].function_role_name))
    ])
    error_message = "Every source needs function_role_name: the name (not the ARN) of the function's execution role, 1-64 characters of letters, digits and +=,.@_-; offending: ${join(", ", [for k in try(keys(var.sources), []) : "sources.${k}" if !can(regex("^[A-Za-z0-9+=,.@_-]{1,64}$", var.sources[k].function_role_name))])}."
  }

  validation {
    # Standard topics only: a FIFO topic cannot trigger a Lambda function.
    condition = alltrue([
      for k in try(keys(var.sources), []) :
      try(var.sources[k].topic_arn, null) == null ? true : can(regex("^arn:aws[a-z-]*:sns:[a-z0-9-]+:[0-9]{12}:[A-Za-z0-9_-]{1,256}$", var.sources[k].topic_arn))
    ])
    error_message = "topic_arn must be null or a standard SNS topic ARN (arn:<partition>:sns:<region>:<account>:<name>); offending: ${join(", ", [for k in try(keys(var.sources), []) : "sources.${k}" if !(try(var.sources[k].topic_arn, null) == null ? true : can(regex("^arn:aws[a-z-]*:sns:[a-z0-9-]+:[0-9]{12}:[A-Za-z0-9_-]{1,256}$", var.sources[k].topic_arn)))])}."
  }

  validation {
    # The rules key on the function name: two sources of one function would match the same events.
    condition     = length(distinct([for k in try(keys(var.sources), []) : try(var.sources[k].function_name, k)])) == length(try(keys(var.sources), []))
    error_message = "Two sources name the same function_name; each function can be a source once (its rules match failures by function name)."
  }
}

variable "failure_records" {
  description = <<-EOT
    The S3 bucket of the sources with on_failure = "s3" (unused, and nothing made, without one).
    Lambda writes each failure record as one object under its fixed prefix
    `aws/lambda/async/<function-name>/`; the enrichment and the redrive read them there.
    - bucket: bring your own (its name); null (the default) = the module makes
      `<name>-failure-records-<account id>-<region>`: TLS-only policy, public access blocked, ACLs
      off, SSE, expiry. The module then owns your bucket's notification configuration (S3 keeps one
      per bucket) unless manage_notifications = false, when you add the failure queue for
      s3:ObjectCreated:* on each `aws/lambda/async/<function-name>/` yourself.
    - expiration_days (30): a record is deleted after that (the bucket the module makes). It must
      outlive the pointer in the retry-exhausted queue (dlq_message_retention_seconds).
    - versioning (false): keep overwritten or deleted records as noncurrent versions for
      noncurrent_version_expiration_days (7).
    - kms_key_arn: SSE-KMS with this customer managed key (and a Bucket Key) instead of SSE-S3; the
      sources get kms:GenerateDataKey and the enrichment and redrive kms:Decrypt on it.
  EOT
  type = object({
    bucket                             = optional(string)
    manage_notifications               = optional(bool, true)
    expiration_days                    = optional(number, 30)
    versioning                         = optional(bool, false)
    noncurrent_version_expiration_days = optional(number, 7)
    kms_key_arn                        = optional(string)
  })
  default  = {}
  nullable = false

  validation {
    condition     = var.failure_records.bucket == null ? true : can(regex("^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$", var.failure_records.bucket))
    error_message = "failure_records.bucket must be an S3 bucket name (3-63 lowercase letters, digits, dots and hyphens), not an ARN or s3:// URL."
  }

  validation {
    condition     = floor(var.failure_records.expiration_days) == var.failure_records.expiration_days && var.failure_records.expiration_days >= 1 && var.failure_records.expiration_days <= 3650
    error_message = "failure_records.expiration_days must be a whole number of days from 1 to 3650."
  }

  validation {
    condition     = floor(var.failure_records.noncurrent_version_expiration_days) == var.failure_records.noncurrent_version_expiration_days && var.failure_records.noncurrent_version_expiration_days >= 1
    error_message = "failure_records.noncurrent_version_expiration_days must be a whole number of days >= 1."
  }

  validation {
    condition     = var.failure_records.kms_key_arn == null ? true : can(regex("^arn:aws[a-z-]*:kms:[a-z0-9-]+:[0-9]{12}:key/.+$", var.failure_records.kms_key_arn))
    error_message = "failure_records.kms_key_arn must be null or a KMS key ARN (arn:<partition>:kms:<region>:<account>:key/<id>)."
  }
}

variable "retry_policy" {
  description = "The default retry policy of every source that sets none (docs/retry-policy.md, checked by modules/retry-policy: unknown fields are errors). The redrive function decides each delay with it; `transport` must be `auto` (delay 0 = invoke now, else a one-time schedule) or `scheduler` (always a schedule). The rules' retry limit of a source is its largest max_attempts (policy or retrying rule) minus 1, and must be at least 1."
  type        = any
  default     = {}
  nullable    = false
}

variable "do_not_retry" {
  description = "Error types (the `errorType` Lambda reports: the exception's class name, without module) that are never retried, whatever the source or its policy: the do-not-retry rule sends them to the retry-exhausted queue with outcome `non-retryable`. `MissingErrorType` and `InvalidFailureRecord` are always added."
  type        = list(string)
  default     = []
  nullable    = false

  validation {
    # Lambda's errorType for Python is type(exc).__name__: a bare identifier, never module-qualified.
    condition     = alltrue([for e in var.do_not_retry : can(regex("^[A-Za-z_][A-Za-z0-9_]{0,127}$", e))])
    error_message = "do_not_retry must hold exception class names without module (Lambda's errorType, e.g. \"KeyError\", not \"builtins.KeyError\"), up to 128 characters; offending: ${join(", ", [for e in var.do_not_retry : "\"${e}\"" if !can(regex("^[A-Za-z_][A-Za-z0-9_]{0,127}$", e))])}."
  }
}

variable "redrive_to" {
  description = "Where a retry goes: `function` (default) invokes only the function that failed, asynchronously, with the original event; `topic` re-publishes to the source's topic_arn (every subscriber receives it again) with the original subject and attributes, falling back to the function for sources without a topic."
  type        = string
  default     = "function"
  nullable    = false

  validation {
    condition     = contains(["function", "topic"], var.redrive_to)
    error_message = "redrive_to must be \"function\" or \"topic\", got \"${var.redrive_to}\"."
  }
}

variable "maximum_retry_attempts" {
  description = "Lambda's own asynchronous retries of each source before the on-failure destination (0-2). 0 (the default) hands every failure to the retry policy at once; each self-healing attempt then is one invocation."
  type        = number
  default     = 0
  nullable    = false

  validation {
    condition     = floor(var.maximum_retry_attempts) == var.maximum_retry_attempts && var.maximum_retry_attempts >= 0 && var.maximum_retry_attempts <= 2
    error_message = "maximum_retry_attempts must be 0, 1 or 2 (Lambda's limit for asynchronous retries)."
  }
}

variable "maximum_event_age_in_seconds" {
  description = "How long Lambda keeps a source's asynchronous event queued (60-21600 s). An event that expires unprocessed reaches the failure queue with condition EventAgeExceeded and no error type, and the rules send it to the retry-exhausted queue as `MissingErrorType`."
  type        = number
  default     = 21600
  nullable    = false

  validation {
    condition     = floor(var.maximum_event_age_in_seconds) == var.maximum_event_age_in_seconds && var.maximum_event_age_in_seconds >= 60 && var.maximum_event_age_in_seconds <= 21600
    error_message = "maximum_event_age_in_seconds must be a whole number from 60 to 21600 (6 hours), Lambda's range."
  }
}

variable "pipe_batch_size" {
  description = "Failure records per pipe execution (1-10): the enrichment gets them as one batch and the pipe puts its output on the bus in one PutEvents call, which takes at most 10 entries."
  type        = number
  default     = 10
  nullable    = false

  validation {
    condition     = floor(var.pipe_batch_size) == var.pipe_batch_size && var.pipe_batch_size >= 1 && var.pipe_batch_size <= 10
    error_message = "pipe_batch_size must be a whole number from 1 to 10: the pipe's target is an event bus, and PutEvents takes at most 10 entries."
  }
}

variable "pipe_maximum_batching_window_seconds" {
  description = "How long the pipe gathers failure records before invoking the enrichment (0-300 s)."
  type        = number
  default     = 0
  nullable    = false

  validation {
    condition     = floor(var.pipe_maximum_batching_window_seconds) == var.pipe_maximum_batching_window_seconds && var.pipe_maximum_batching_window_seconds >= 0 && var.pipe_maximum_batching_window_seconds <= 300
    error_message = "pipe_maximum_batching_window_seconds must be a whole number from 0 to 300."
  }
}

variable "pipe_log_level" {
  description = "What the pipe logs to its log group: OFF, ERROR (default: failed enrichment or target steps), INFO or TRACE. Execution data (payloads) is never included: they are the user's events."
  type        = string
  default     = "ERROR"
  nullable    = false

  validation {
    condition     = contains(["OFF", "ERROR", "INFO", "TRACE"], var.pipe_log_level)
    error_message = "pipe_log_level must be one of OFF, ERROR, INFO, TRACE."
  }
}

variable "package" {
  description = "Path of a local deployment zip: the serverless_retry package (`./build.sh package` builds dist/serverless-retry.zip), whose handlers the enrichment and redrive functions run, or any zip when serverless_retry comes in a layer. Give exactly one of package and s3_package."
  type        = string
  default     = null

  validation {
    condition     = var.package == null ? true : endswith(var.package, ".zip")
    error_message = "package must be the path of a .zip file (build one with serverless-retry package), or null with s3_package."
  }

  validation {
    condition     = var.package == null ? true : fileexists(var.package)
    error_message = "package ${coalesce(var.package, "null")} does not exist: build it with serverless-retry package, or give the path of your own zip (or set s3_package instead)."
  }
}


variable "s3_package" {
  description = "The deployment zip as an S3 object, instead of package: bucket (in the function's region), key, and object_version (optional: with it, a new version redeploys). source_code_hash (optional, base64 SHA-256 of the zip, as `filebase64sha256` gives) redeploys when the object changes under the same key and version."
  type = object({
    bucket           = string
    key              = string
    object_version   = optional(string)
    source_code_hash = optional(string)
  })
  default = null

  validation {
    condition     = var.s3_package == null ? true : can(regex("^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$", var.s3_package.bucket)) && length(var.s3_package.key) >= 1 && length(var.s3_package.key) <= 1024
    error_message = "s3_package needs bucket, an S3 bucket name (3-63 lowercase letters, digits, dots and hyphens), and key, the object key of the zip (1-1024 characters)."
  }

  validation {
    condition     = var.s3_package == null ? true : (var.s3_package.source_code_hash == null ? true : can(regex("^[A-Za-z0-9+/]{43}=$", var.s3_package.source_code_hash)))
    error_message = "s3_package.source_code_hash must be the base64-encoded SHA-256 of the zip (44 characters, as filebase64sha256() or `openssl dgst -sha256 -binary x.zip | base64` gives), or null."
  }
}


variable "layers" {
  description = "Lambda layer version ARNs of the enrichment and redrive functions (at most 5, in order), e.g. the layer module's `arn` holding serverless_retry; or AWS's public Powertools layer with a layer built without Powertools."
  type        = list(string)
  default     = []
  nullable    = false

  validation {
    condition     = length(var.layers) <= 5
    error_message = "layers takes at most 5 layer versions (Lambda's limit per function), got ${length(var.layers)}."
  }

  validation {
    condition     = alltrue([for a in var.layers : can(regex("^arn:aws[a-z-]*:lambda:[a-z0-9-]+:[0-9]{12}:layer:[A-Za-z0-9_-]{1,140}:[0-9]+$", a))])
    error_message = "Every entry of layers must be a layer version ARN, arn:<partition>:lambda:<region>:<account>:layer:<name>:<version> (the version number included); offending: ${join(", ", [for a in var.layers : a if !can(regex("^arn:aws[a-z-]*:lambda:[a-z0-9-]+:[0-9]{12}:layer:[A-Za-z0-9_-]{1,140}:[0-9]+$", a))])}."
  }
}


variable "runtime" {
  description = "Python runtime of the enrichment and redrive functions."
  type        = string
  default     = "python3.12"
  nullable    = false

  validation {
    condition     = contains(["python3.11", "python3.12", "python3.13"], var.runtime)
    error_message = "runtime must be one of python3.11, python3.12, python3.13 (the package needs Python 3.11 or newer)."
  }
}

variable "architectures" {
  description = "Instruction set of the enrichment and redrive functions, as Lambda takes it: [\"arm64\"] or [\"x86_64\"]. The serverless_retry package holds its one native extension (RE2) for both; the layers must be built for the one chosen."
  type        = list(string)
  default     = ["arm64"]
  nullable    = false

  validation {
    condition     = length(var.architectures) == 1 && alltrue([for a in var.architectures : contains(["arm64", "x86_64"], a)])
    error_message = "architectures must be [\"arm64\"] or [\"x86_64\"]: Lambda runs a function on exactly one instruction set, got ${jsonencode(var.architectures)}."
  }
}


variable "memory_size" {
  description = "Memory of the enrichment and redrive functions in MB."
  type        = number
  default     = 256
  nullable    = false

  validation {
    condition     = floor(var.memory_size) == var.memory_size && var.memory_size >= 128 && var.memory_size <= 10240
    error_message = "memory_size must be a whole number of MB from 128 to 10240."
  }
}

variable "timeout" {
  description = "Timeout of the enrichment and redrive functions in seconds. The failure queue's visibility timeout is 6 x this (the pipe holds a batch while the enrichment runs)."
  type        = number
  default     = 30
  nullable    = false

  validation {
    # 300 s: the longest a pipe waits for a synchronous enrichment, and 6 x 300 stays within SQS's 12 h.
    condition     = floor(var.timeout) == var.timeout && var.timeout >= 1 && var.timeout <= 300
    error_message = "timeout must be a whole number of seconds from 1 to 300 (a pipe waits at most 5 minutes for its enrichment)."
  }
}

variable "tracing" {
  description = "Enable active AWS X-Ray tracing on the enrichment and redrive functions (adds the X-Ray write permissions to their roles)."
  type        = bool
  default     = false
  nullable    = false
}

variable "log_retention_days" {
  description = "Retention of the functions' and the pipe's log groups in days."
  type        = number
  default     = 30
  nullable    = false

  validation {
    condition     = contains([1, 3, 5, 7, 14, 30, 60, 90, 120, 150, 180, 365, 400, 545, 731, 1096, 1827, 2192, 2557, 2922, 3288, 3653], var.log_retention_days)
    error_message = "log_retention_days must be one of the values CloudWatch Logs accepts: 1, 3, 5, 7, 14, 30, 60, 90, 120, 150, 180, 365, 400, 545, 731, 1096, 1827, 2192, 2557, 2922, 3288, 3653."
  }
}

variable "logs_kms_key_arn" {
  description = "KMS key to encrypt the log groups with, or null for CloudWatch Logs' default encryption. Its key policy must allow logs.<region>.amazonaws.com."
  type        = string
  default     = null
}

variable "environment_kms_key_arn" {
  description = "KMS key to encrypt the functions' environment variables with, or null for the Lambda-managed key."
  type        = string
  default     = null
}

variable "log_level" {
  description = "POWERTOOLS_LOG_LEVEL of the enrichment and redrive functions."
  type        = string
  default     = "INFO"
  nullable    = false

  validation {
    condition     = contains(["DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"], var.log_level)
    error_message = "log_level must be one of DEBUG, INFO, WARNING, ERROR, CRITICAL."
  }
}

variable "environment" {
  description = "Extra environment variables of the enrichment and redrive functions. They may not override what the module wires (SERVERLESS_RETRY_* except the local-clock ones, POWERTOOLS_*)."
  type        = map(string)
  default     = {}
  nullable    = false

  validation {
    condition = alltrue([
      for k in keys(var.environment) :
      (!startswith(k, "SERVERLESS_RETRY_") && !startswith(k, "POWERTOOLS_")) || contains(["SERVERLESS_RETRY_CLOCK_SCALE", "SERVERLESS_RETRY_CLOCK_EPOCH"], k)
    ])
    error_message = "environment may not set SERVERLESS_RETRY_* or POWERTOOLS_* variables (the module wires them from its inputs); only SERVERLESS_RETRY_CLOCK_SCALE and SERVERLESS_RETRY_CLOCK_EPOCH (local emulator) are allowed."
  }
}

variable "max_message_size" {
  description = "Maximum message size in bytes of the failure queue (and of its DLQ). A destination record holds the whole event, so it must fit the largest event the sources receive plus about 2 KB."
  type        = number
  default     = 262144
  nullable    = false

  validation {
    condition     = floor(var.max_message_size) == var.max_message_size && var.max_message_size >= 1024 && var.max_message_size <= 262144
    error_message = "max_message_size must be a whole number of bytes from 1024 to 262144."
  }
}

variable "exhausted_max_message_size" {
  description = "Maximum message size in bytes of the retry-exhausted queue; null = max_message_size. It may not be smaller: an event too large for the bus goes there whole, as it came through the failure queue."
  type        = number
  default     = null

  validation {
    condition     = var.exhausted_max_message_size == null ? true : floor(var.exhausted_max_message_size) == var.exhausted_max_message_size && var.exhausted_max_message_size >= 1024 && var.exhausted_max_message_size <= 262144
    error_message = "exhausted_max_message_size must be null or a whole number of bytes from 1024 to 262144."
  }
}

variable "message_retention_seconds" {
  description = "How long the failure queue keeps a record (default 4 days). Its DLQ, the rule, redrive and schedule DLQs and the retry-exhausted queue keep theirs for dlq_message_retention_seconds."
  type        = number
  default     = 345600
  nullable    = false

  validation {
    condition     = floor(var.message_retention_seconds) == var.message_retention_seconds && var.message_retention_seconds >= 60 && var.message_retention_seconds <= 1209600
    error_message = "message_retention_seconds must be a whole number from 60 (1 minute) to 1209600 (14 days)."
  }
}

variable "dlq_message_retention_seconds" {
  description = "How long the dead-letter queues and the retry-exhausted queue keep a message (default 14 days). Must be longer than message_retention_seconds: a dead-lettered record keeps its original enqueue time."
  type        = number
  default     = 1209600
  nullable    = false

  validation {
    condition     = floor(var.dlq_message_retention_seconds) == var.dlq_message_retention_seconds && var.dlq_message_retention_seconds >= 60 && var.dlq_message_retention_seconds <= 1209600
    error_message = "dlq_message_retention_seconds must be a whole number from 60 (1 minute) to 1209600 (14 days)."
  }
}

variable "max_receive_count" {
  description = "Receives of one failure record before SQS moves it to the failure queue's DLQ (a batch whose enrichment or PutEvents kept failing)."
  type        = number
  default     = 5
  nullable    = false

  validation {
    condition     = floor(var.max_receive_count) == var.max_receive_count && var.max_receive_count >= 1 && var.max_receive_count <= 1000
    error_message = "max_receive_count must be a whole number from 1 to 1000."
  }
}

variable "kms_key_arn" {
  description = "ARN of a customer-managed KMS key for SSE-KMS on every queue of the module; null (the default) uses SQS-managed SSE. The module grants kms:GenerateDataKey/kms:Decrypt on it to each role that sends or reads (sources, pipe, enrichment, redrive, scheduler); the key policy must also allow events.amazonaws.com (rule targets and their DLQs) to use it."
  type        = string
  default     = null

  validation {
    condition     = var.kms_key_arn == null || can(regex("^arn:aws[a-z-]*:kms:[a-z0-9-]+:[0-9]{12}:key/[A-Za-z0-9-]+$", var.kms_key_arn))
    error_message = "kms_key_arn must be a KMS key ARN (arn:<partition>:kms:<region>:<account>:key/<id>); aliases are not accepted because IAM statements need the key ARN."
  }
}

variable "topic_kms_key_arns" {
  description = "KMS keys of encrypted source topics, for redrive_to = \"topic\": the redrive function and the Scheduler get kms:GenerateDataKey/kms:Decrypt on exactly these."
  type        = list(string)
  default     = []
  nullable    = false

  validation {
    condition     = alltrue([for a in var.topic_kms_key_arns : can(regex("^arn:aws[a-z-]*:kms:[a-z0-9-]+:[0-9]{12}:key/[A-Za-z0-9-]+$", a))])
    error_message = "Every topic_kms_key_arns entry must be a KMS key ARN (arn:<partition>:kms:<region>:<account>:key/<id>)."
  }
}

variable "permissions_boundary_arn" {
  description = "Optional permissions boundary for every role the module creates."
  type        = string
  default     = null
}

variable "vpc" {
  description = "Run the enrichment and redrive functions in your VPC: subnet_ids (1-16) and security_group_ids (1-5), both given, or vpc = null (the default) for none. Their roles get the network-interface permissions Lambda needs, on these subnets and security groups. The functions then reach SQS, Lambda, SNS, EventBridge Scheduler and CloudWatch Logs only through a NAT gateway or VPC endpoints of those services."
  type = object({
    subnet_ids         = list(string)
    security_group_ids = list(string)
  })
  default = null

  validation {
    condition     = var.vpc == null ? true : length(var.vpc.subnet_ids) >= 1 && length(var.vpc.subnet_ids) <= 16 && alltrue([for s in var.vpc.subnet_ids : can(regex("^subnet-[0-9a-f]{8,17}$", s))])
    error_message = "vpc.subnet_ids must hold 1 to 16 subnet IDs (subnet-<hex>), Lambda's limit; to leave the VPC, set vpc = null rather than empty lists."
  }

  validation {
    condition     = var.vpc == null ? true : length(var.vpc.security_group_ids) >= 1 && length(var.vpc.security_group_ids) <= 5 && alltrue([for s in var.vpc.security_group_ids : can(regex("^sg-[0-9a-f]{8,17}$", s))])
    error_message = "vpc.security_group_ids must hold 1 to 5 security group IDs (sg-<hex>), Lambda's limit: a function in a VPC needs both subnets and security groups."
  }
}


variable "enrichment_role_arn" {
  description = "Bring your own role for the enrichment function: its ARN, and the module creates no role for it. Attach the `enrichment_policy_json` output (what the function needs, nothing more) to it before the function is created. null (the default): the module creates the role `<name>-enrichment`."
  type        = string
  default     = null

  validation {
    condition     = var.enrichment_role_arn == null ? true : can(regex("^arn:aws[a-z-]*:iam::[0-9]{12}:role/([A-Za-z0-9+=,.@_-]+/)*[A-Za-z0-9+=,.@_-]{1,64}$", var.enrichment_role_arn))
    error_message = "enrichment_role_arn must be an IAM role ARN (arn:<partition>:iam::<account>:role/<path/><name>), or null to let the module create the role."
  }
}


variable "redrive_role_arn" {
  description = "Bring your own role for the redrive function: its ARN, and the module creates no role for it. Attach the `redrive_policy_json` output (what the function needs, nothing more) to it before the function is configured: Lambda checks that the role may send to the function's on-failure destination (the module README shows how to make the ARN wait for the attachment). null (the default): the module creates the role `<name>-redrive`."
  type        = string
  default     = null

  validation {
    condition     = var.redrive_role_arn == null ? true : can(regex("^arn:aws[a-z-]*:iam::[0-9]{12}:role/([A-Za-z0-9+=,.@_-]+/)*[A-Za-z0-9+=,.@_-]{1,64}$", var.redrive_role_arn))
    error_message = "redrive_role_arn must be an IAM role ARN (arn:<partition>:iam::<account>:role/<path/><name>), or null to let the module create the role."
  }
}


variable "enrichment_policy_statements" {
  description = "Extra statements for the role the module creates for the enrichment function: sid (optional, letters and digits), effect (Allow, the default, or Deny), actions, resources and conditions ({test, variable, values}), in an inline policy `extra` of their own. Not with enrichment_role_arn."
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

  validation {
    condition     = alltrue([for s in var.enrichment_policy_statements : s.sid == null ? true : can(regex("^[A-Za-z0-9]{1,128}$", s.sid))]) && length(distinct(compact([for s in var.enrichment_policy_statements : s.sid]))) == length(compact([for s in var.enrichment_policy_statements : s.sid]))
    error_message = "enrichment_policy_statements: every sid must be unique and made of letters and digits only (IAM's rule for statement ids), or left out."
  }

  validation {
    condition     = alltrue([for s in var.enrichment_policy_statements : contains(["Allow", "Deny"], s.effect)])
    error_message = "enrichment_policy_statements: effect must be \"Allow\" or \"Deny\"."
  }

  validation {
    condition     = alltrue([for s in var.enrichment_policy_statements : length(s.actions) >= 1 && alltrue([for a in s.actions : can(regex("^[a-z0-9-]+:[A-Za-z0-9*?]+$", a)) && !can(regex(":\\*$", a))])])
    error_message = "enrichment_policy_statements: every statement needs actions as \"service:Action\" (e.g. \"dynamodb:PutItem\"), and none may be \"*\" or \"service:*\": name the actions. Offending: ${join(", ", flatten([for s in var.enrichment_policy_statements : [for a in s.actions : a if !can(regex("^[a-z0-9-]+:[A-Za-z0-9*?]+$", a)) || can(regex(":\\*$", a))]]))}."
  }

  validation {
    condition     = alltrue([for s in var.enrichment_policy_statements : length(s.resources) >= 1 && alltrue([for r in s.resources : r != ""])])
    error_message = "enrichment_policy_statements: every statement needs at least one resource (the exact ARNs it applies to)."
  }

  validation {
    condition     = alltrue(flatten([for s in var.enrichment_policy_statements : [for c in s.conditions : length(c.values) >= 1 && c.test != "" && c.variable != ""]]))
    error_message = "enrichment_policy_statements: every condition needs a test (e.g. StringEquals), a variable (e.g. aws:SourceAccount) and at least one value."
  }
}


variable "redrive_policy_statements" {
  description = "Extra statements for the role the module creates for the redrive function: sid (optional, letters and digits), effect (Allow, the default, or Deny), actions, resources and conditions ({test, variable, values}), in an inline policy `extra` of their own. Not with redrive_role_arn."
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

  validation {
    condition     = alltrue([for s in var.redrive_policy_statements : s.sid == null ? true : can(regex("^[A-Za-z0-9]{1,128}$", s.sid))]) && length(distinct(compact([for s in var.redrive_policy_statements : s.sid]))) == length(compact([for s in var.redrive_policy_statements : s.sid]))
    error_message = "redrive_policy_statements: every sid must be unique and made of letters and digits only (IAM's rule for statement ids), or left out."
  }

  validation {
    condition     = alltrue([for s in var.redrive_policy_statements : contains(["Allow", "Deny"], s.effect)])
    error_message = "redrive_policy_statements: effect must be \"Allow\" or \"Deny\"."
  }

  validation {
    condition     = alltrue([for s in var.redrive_policy_statements : length(s.actions) >= 1 && alltrue([for a in s.actions : can(regex("^[a-z0-9-]+:[A-Za-z0-9*?]+$", a)) && !can(regex(":\\*$", a))])])
    error_message = "redrive_policy_statements: every statement needs actions as \"service:Action\" (e.g. \"dynamodb:PutItem\"), and none may be \"*\" or \"service:*\": name the actions. Offending: ${join(", ", flatten([for s in var.redrive_policy_statements : [for a in s.actions : a if !can(regex("^[a-z0-9-]+:[A-Za-z0-9*?]+$", a)) || can(regex(":\\*$", a))]]))}."
  }

  validation {
    condition     = alltrue([for s in var.redrive_policy_statements : length(s.resources) >= 1 && alltrue([for r in s.resources : r != ""])])
    error_message = "redrive_policy_statements: every statement needs at least one resource (the exact ARNs it applies to)."
  }

  validation {
    condition     = alltrue(flatten([for s in var.redrive_policy_statements : [for c in s.conditions : length(c.values) >= 1 && c.test != "" && c.variable != ""]]))
    error_message = "redrive_policy_statements: every condition needs a test (e.g. StringEquals), a variable (e.g. aws:SourceAccount) and at least one value."
  }
}


variable "tags" {
  description = "Tags for every taggable resource."
  type        = map(string)
  default     = {}
  nullable    = false
}
