variable "name" {
  description = "Base name of everything created: the consumer function and its role `<name>`; the retry queue `<name>`, its DLQ `<name>-dlq` and the retry-exhausted queue `<name>-exhausted`; the schedule group `<name>-retries`; the claims table `<name>-claims`; the on-failure queue `<name>-stream-failures` (and its `-dlq`) unless on_failure_destination_arn is given."
  type        = string

  validation {
    condition     = can(regex("^[A-Za-z0-9_-]{1,46}$", var.name))
    error_message = "name must be 1-46 characters of letters, digits, hyphens and underscores (modules/scheduled-retry's limit: its scheduler role is \"<name>-retries-scheduler\" and IAM allows 64)."
  }
}

# The ranges are Lambda's (developer guide, "Lambda parameters for Amazon Kinesis Data Streams event
# source mappings" and "Lambda parameters for Amazon DynamoDB event source mappings"; the
# CreateEventSourceMapping API reference for MaximumRecordAgeInSeconds: -1, or 60 to 604800).
variable "stream" {
  description = <<-EOT
    The stream to consume and its event source mapping. `arn`: a Kinesis data stream
    (arn:<partition>:kinesis:<region>:<account>:stream/<name>) or a DynamoDB stream
    (arn:<partition>:dynamodb:<region>:<account>:table/<table>/stream/<label>). `kind`: "kinesis" or
    "dynamodb", derived from the ARN when null. `starting_position`: LATEST, TRIM_HORIZON or
    (Kinesis only) AT_TIMESTAMP with `starting_position_timestamp` (RFC 3339). `batch_size` 1-10000,
    `maximum_batching_window_in_seconds` 0-300, `parallelization_factor` 1-10 (concurrent batches per
    shard), `maximum_retry_attempts` -1 (until the record expires) to 10000 and
    `maximum_record_age_in_seconds` -1 or 60-604800: how long Lambda retries a batch the function
    failed before it sends it to the on-failure destination; `bisect_batch_on_function_error` splits a
    failing batch in two. `kms_key_arn`: the stream's customer managed key (kms:Decrypt is granted on
    it). `consumer_arn`: a Kinesis enhanced fan-out consumer of this stream to read through.
  EOT
  type = object({
    arn                                = string
    kind                               = optional(string)
    starting_position                  = optional(string, "LATEST")
    starting_position_timestamp        = optional(string)
    batch_size                         = optional(number, 100)
    maximum_batching_window_in_seconds = optional(number, 0)
    parallelization_factor             = optional(number, 1)
    maximum_retry_attempts             = optional(number, 2)
    maximum_record_age_in_seconds      = optional(number, 3600)
    bisect_batch_on_function_error     = optional(bool, true)
    kms_key_arn                        = optional(string)
    consumer_arn                       = optional(string)
  })
  nullable = false

  validation {
    condition     = can(regex("^arn:aws[a-z-]*:kinesis:[a-z0-9-]+:[0-9]{12}:stream/[A-Za-z0-9_.-]{1,128}$", var.stream.arn)) || can(regex("^arn:aws[a-z-]*:dynamodb:[a-z0-9-]+:[0-9]{12}:table/[A-Za-z0-9_.-]{3,255}/stream/[^/]+$", var.stream.arn))
    error_message = "stream.arn must be a Kinesis data stream ARN (arn:<partition>:kinesis:<region>:<account>:stream/<name>) or a DynamoDB stream ARN (arn:<partition>:dynamodb:<region>:<account>:table/<table>/stream/<label>, the table's stream_arn), got \"${var.stream.arn}\"."
  }

  validation {
    condition     = var.stream.kind == null ? true : contains(["kinesis", "dynamodb"], coalesce(var.stream.kind, "-")) && strcontains(var.stream.arn, ":${coalesce(var.stream.kind, "-")}:")
    error_message = "stream.kind must be \"kinesis\" or \"dynamodb\" and match the ARN's service (or null to derive it from the ARN), got \"${coalesce(var.stream.kind, "null")}\" for ${var.stream.arn}."
  }

  validation {
    condition     = contains(["LATEST", "TRIM_HORIZON", "AT_TIMESTAMP"], var.stream.starting_position)
    error_message = "stream.starting_position must be LATEST, TRIM_HORIZON or AT_TIMESTAMP, got \"${var.stream.starting_position}\"."
  }

  validation {
    # Lambda's DynamoDB Streams parameters: StartingPosition TRIM_HORIZON or LATEST only.
    condition     = var.stream.starting_position != "AT_TIMESTAMP" || strcontains(var.stream.arn, ":kinesis:")
    error_message = "stream.starting_position AT_TIMESTAMP is for Kinesis streams only: a DynamoDB stream starts at TRIM_HORIZON or LATEST."
  }

  validation {
    condition     = (var.stream.starting_position == "AT_TIMESTAMP") == (var.stream.starting_position_timestamp != null) && (var.stream.starting_position_timestamp == null ? true : can(formatdate("YYYY", coalesce(var.stream.starting_position_timestamp, "-"))))
    error_message = "stream.starting_position_timestamp (an RFC 3339 time, e.g. 2026-12-01T00:00:00Z) is required with starting_position AT_TIMESTAMP and taken with it only."
  }

  validation {
    condition     = floor(var.stream.batch_size) == var.stream.batch_size && var.stream.batch_size >= 1 && var.stream.batch_size <= 10000
    error_message = "stream.batch_size must be a whole number from 1 to 10000 (Lambda's range for Kinesis and DynamoDB streams), got ${var.stream.batch_size}."
  }

  validation {
    condition     = floor(var.stream.maximum_batching_window_in_seconds) == var.stream.maximum_batching_window_in_seconds && var.stream.maximum_batching_window_in_seconds >= 0 && var.stream.maximum_batching_window_in_seconds <= 300
    error_message = "stream.maximum_batching_window_in_seconds must be a whole number from 0 to 300, got ${var.stream.maximum_batching_window_in_seconds}."
  }

  validation {
    condition     = floor(var.stream.parallelization_factor) == var.stream.parallelization_factor && var.stream.parallelization_factor >= 1 && var.stream.parallelization_factor <= 10
    error_message = "stream.parallelization_factor must be a whole number from 1 to 10 (concurrent batches per shard), got ${var.stream.parallelization_factor}."
  }

  validation {
    condition     = floor(var.stream.maximum_retry_attempts) == var.stream.maximum_retry_attempts && var.stream.maximum_retry_attempts >= -1 && var.stream.maximum_retry_attempts <= 10000
    error_message = "stream.maximum_retry_attempts must be a whole number from -1 (retry until the record expires, holding up its shard) to 10000, got ${var.stream.maximum_retry_attempts}."
  }

  validation {
    condition     = floor(var.stream.maximum_record_age_in_seconds) == var.stream.maximum_record_age_in_seconds && (var.stream.maximum_record_age_in_seconds == -1 || (var.stream.maximum_record_age_in_seconds >= 60 && var.stream.maximum_record_age_in_seconds <= 604800))
    error_message = "stream.maximum_record_age_in_seconds must be -1 (no limit) or a whole number from 60 to 604800 (7 days), got ${var.stream.maximum_record_age_in_seconds}."
  }

  validation {
    condition     = var.stream.kms_key_arn == null || can(regex("^arn:aws[a-z-]*:kms:[a-z0-9-]+:[0-9]{12}:key/[A-Za-z0-9-]+$", coalesce(var.stream.kms_key_arn, "-")))
    error_message = "stream.kms_key_arn must be a KMS key ARN (arn:<partition>:kms:<region>:<account>:key/<key id>; kms:Decrypt is granted on exactly it, so not an alias), or null."
  }

  validation {
    # A consumer ARN is the stream's ARN followed by /consumer/<name>:<creation timestamp>.
    condition     = var.stream.consumer_arn == null || (strcontains(var.stream.arn, ":kinesis:") && startswith(coalesce(var.stream.consumer_arn, "-"), "${var.stream.arn}/consumer/") && can(regex("/consumer/[A-Za-z0-9_.-]{1,128}:[0-9]+$", coalesce(var.stream.consumer_arn, "-"))))
    error_message = "stream.consumer_arn must be an enhanced fan-out consumer of this Kinesis stream (${var.stream.arn}/consumer/<name>:<timestamp>, aws_kinesis_stream_consumer's arn), or null; DynamoDB streams have none."
  }
}

variable "ordering" {
  description = "What a record that fails does to the rest of its shard. `unordered`: its retry goes through the retry queue (pattern 1's path) and the shard goes on at once. `blocking`: the batch stops at it and Lambda retries from there (maximum_retry_attempts), so later records of its shard wait. Wired as SERVERLESS_RETRY_STREAM_ORDERING."
  type        = string
  default     = "unordered"
  nullable    = false

  validation {
    condition     = contains(["unordered", "blocking"], var.ordering)
    error_message = "ordering must be \"unordered\" (a failed record is retried through the retry queue while its shard goes on) or \"blocking\" (its shard waits for it), got \"${var.ordering}\"."
  }
}

variable "on_failure_destination_arn" {
  description = "Where Lambda sends a record of each batch it gives up on (the function failed it more than maximum_retry_attempts times or past maximum_record_age_in_seconds): an SQS queue, SNS topic or S3 bucket ARN of yours. null: the module creates the encrypted SQS queue `<name>-stream-failures`. The function's role is granted sending to it; a customer managed key on your destination is yours to grant (policy_statements)."
  type        = string
  default     = null

  validation {
    condition     = var.on_failure_destination_arn == null || can(regex("^arn:aws[a-z-]*:(sqs:[a-z0-9-]+:[0-9]{12}:[A-Za-z0-9_-]{1,80}|sns:[a-z0-9-]+:[0-9]{12}:[A-Za-z0-9_-]{1,256}|s3:::[a-z0-9][a-z0-9.-]{1,61}[a-z0-9])$", coalesce(var.on_failure_destination_arn, "-")))
    error_message = "on_failure_destination_arn must be a standard SQS queue, SNS topic or S3 bucket ARN (arn:<partition>:sqs:<region>:<account>:<queue>, arn:<partition>:sns:<region>:<account>:<topic>, arn:<partition>:s3:::<bucket>), or null for the queue the module creates."
  }
}

variable "package" {
  description = "Path of the local deployment zip: your processor, with the serverless_retry package unless it comes in a layer. Give exactly one of package and s3_package."
  type        = string
  default     = null
}

variable "s3_package" {
  description = "The deployment zip as an S3 object instead of package: bucket, key, and optionally object_version and source_code_hash (see modules/consumer)."
  type = object({
    bucket           = string
    key              = string
    object_version   = optional(string)
    source_code_hash = optional(string)
  })
  default = null
}

variable "layers" {
  description = "Layer version ARNs of the function (at most 5), e.g. the layer module's `arn` with serverless_retry."
  type        = list(string)
  default     = []
  nullable    = false
}

variable "processor" {
  description = "Your function called once per record, as `module:function`: first for the stream's record, then for each retry from the retry queue."
  type        = string
}

variable "retry_policy" {
  description = "The retry policy of the records handed off to the retry queue (docs/retry-policy.md; checked at plan time by modules/retry-policy)."
  type        = any
  default     = {}
  nullable    = false
}

variable "timeout" {
  description = "Function timeout in seconds; the retry queue's visibility timeout is 6 x this."
  type        = number
  default     = 30
  nullable    = false
}

variable "memory_size" {
  description = "Memory of the function in MB."
  type        = number
  default     = 256
  nullable    = false
}

variable "runtime" {
  description = "Python runtime of the function."
  type        = string
  default     = "python3.12"
  nullable    = false
}

variable "architectures" {
  description = "Instruction set of the function: [\"arm64\"] (the default) or [\"x86_64\"]."
  type        = list(string)
  default     = ["arm64"]
  nullable    = false
}

variable "kms_key_arn" {
  description = "Customer managed KMS key of the queues the module creates (retry queue, its DLQ, the exhausted and on-failure queues), or null for SQS-managed SSE. The function's role is granted its use."
  type        = string
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
  description = "KMS key of the function's log group, or null for CloudWatch Logs' default encryption."
  type        = string
  default     = null
}

variable "environment" {
  description = "Extra environment variables for your processor (not SERVERLESS_RETRY_* or POWERTOOLS_*)."
  type        = map(string)
  default     = {}
  nullable    = false
}

variable "claims" {
  description = "One retry chain per record (modules/consumer's `claims`): by default an encrypted, on-demand claims table `<name>-claims`; `table_arn` brings your own, `enabled = false` opts out."
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

variable "policy_statements" {
  description = "Extra statements for the function's role, for what your processor calls (modules/scheduled-retry's policy_statements)."
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
