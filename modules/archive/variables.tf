variable "name" {
  description = "Base name: the archiver function is `<name>-archiver` (also its log group and role) and a bucket the module makes is `<name>-archive-<account id>-<region>`. Also the `deployment` of every record."
  type        = string

  validation {
    # Lowercase for the bucket name; 28 keeps `<name>-archive-<12 digits>-<region>` within S3's 63.
    condition     = can(regex("^[a-z0-9][a-z0-9-]{0,27}$", var.name))
    error_message = "name must be 1-28 lowercase letters, digits and hyphens, starting with a letter or digit (it names the bucket: S3 allows lowercase only, 63 characters with the account id and region), got \"${var.name}\"."
  }
}

variable "sources" {
  description = <<-EOT
    The terminal queues to drain into the archive, each with an SQS event source mapping of the archiver.
    `queue_arn`: the queue; `place`: what it is (`exhausted`: a retry-exhausted queue, `dlq`: a
    dead-letter queue SQS moves messages to, `selfheal-exhausted`: the self-healing retry-exhausted
    queue); `source_queue_arn`: where a redrive sends its messages back (null: unknown, the operator
    names a target); `kms_key_arn`: the queue's customer managed key (kms:Decrypt for the archiver);
    `visibility_timeout_seconds`: the queue's visibility timeout, when known, checked against 6 x the
    archiver's timeout; `key`: the key of its mapping in the outputs (default `<place>-<index>`), so
    that reordering the list does not replace mappings.
  EOT
  type = list(object({
    queue_arn                  = string
    place                      = string
    source_queue_arn           = optional(string)
    kms_key_arn                = optional(string)
    visibility_timeout_seconds = optional(number)
    key                        = optional(string)
  }))
  nullable = false

  validation {
    condition     = length(var.sources) >= 1
    error_message = "sources must name at least one terminal queue to archive."
  }

  validation {
    condition     = alltrue([for s in var.sources : contains(["exhausted", "dlq", "selfheal-exhausted"], s.place)])
    error_message = "Every sources[*].place must be exhausted, dlq or selfheal-exhausted; got ${jsonencode([for s in var.sources : s.place if !contains(["exhausted", "dlq", "selfheal-exhausted"], s.place)])}."
  }

  validation {
    condition     = alltrue([for s in var.sources : can(regex("^arn:aws[a-z-]*:sqs:[a-z0-9-]+:[0-9]{12}:[A-Za-z0-9_-]{1,80}(\\.fifo)?$", s.queue_arn))])
    error_message = "Every sources[*].queue_arn must be an SQS queue ARN (arn:<partition>:sqs:<region>:<account>:<name>), not a URL or name."
  }

  validation {
    condition     = alltrue([for s in var.sources : s.source_queue_arn == null ? true : can(regex("^arn:aws[a-z-]*:sqs:[a-z0-9-]+:[0-9]{12}:[A-Za-z0-9_-]{1,80}(\\.fifo)?$", s.source_queue_arn))])
    error_message = "Every sources[*].source_queue_arn must be null or an SQS queue ARN."
  }

  validation {
    condition     = length(distinct([for s in var.sources : s.queue_arn])) == length(var.sources)
    error_message = "Each queue may be a source once: two mappings on one queue would only compete for its messages."
  }

  validation {
    condition     = alltrue([for s in var.sources : s.visibility_timeout_seconds == null ? true : floor(s.visibility_timeout_seconds) == s.visibility_timeout_seconds && s.visibility_timeout_seconds >= 0 && s.visibility_timeout_seconds <= 43200])
    error_message = "sources[*].visibility_timeout_seconds must be null or a whole number of seconds from 0 to 43200 (SQS's range)."
  }

  validation {
    condition     = alltrue([for s in var.sources : s.key == null ? true : can(regex("^[a-z0-9_-]{1,40}$", s.key))])
    error_message = "sources[*].key must be 1-40 lowercase letters, digits, hyphens and underscores."
  }
}

variable "bucket" {
  description = "Bring your own bucket: its name (and arn, default arn:<partition>:s3:::<name>; kms_key_arn when it encrypts with a customer managed key the archiver must use). The module then creates no bucket, scopes IAM to `<prefix>dead/*` in it, and says in `lifecycle_note` which lifecycle rule to add. null: the module creates the bucket."
  type = object({
    name        = string
    arn         = optional(string)
    kms_key_arn = optional(string)
  })
  default = null

  validation {
    condition     = var.bucket == null ? true : can(regex("^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$", var.bucket.name))
    error_message = "bucket.name must be an S3 bucket name: 3-63 lowercase letters, digits, dots and hyphens, beginning and ending with a letter or digit."
  }

  validation {
    condition     = try(var.bucket.arn, null) == null ? true : can(regex("^arn:aws[a-z-]*:s3:::[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$", var.bucket.arn))
    error_message = "bucket.arn must be null or a bucket ARN (arn:<partition>:s3:::<name>), not an object ARN."
  }
}

variable "prefix" {
  description = "Key prefix of everything the archive writes: records go under `<prefix>dead/`. No leading \"/\"; ends with \"/\", or \"\" for the bucket's root."
  type        = string
  default     = "serverless-retry/"
  nullable    = false

  validation {
    condition     = var.prefix == "" || (!startswith(var.prefix, "/") && endswith(var.prefix, "/") && length(var.prefix) <= 200 && can(regex("^[A-Za-z0-9!_.*'()/-]+$", var.prefix)))
    error_message = "prefix must be \"\" or end with \"/\", must not start with \"/\", and may hold only S3's safe key characters (letters, digits, ! - _ . * ' ( ) /), at most 200; got \"${var.prefix}\"."
  }
}

variable "expiration_days" {
  description = "Days an archived record is kept: a lifecycle rule expires `<prefix>dead/` after that (the bucket the module makes; with your own, see lifecycle_note). Sidekiq's dead set keeps 6 months."
  type        = number
  default     = 180
  nullable    = false

  validation {
    condition     = floor(var.expiration_days) == var.expiration_days && var.expiration_days >= 1 && var.expiration_days <= 3650
    error_message = "expiration_days must be a whole number from 1 to 3650 (10 years), got ${var.expiration_days}."
  }
}

variable "noncurrent_version_expiration_days" {
  description = "Days a replaced or deleted record stays recoverable as a noncurrent version (the bucket the module makes is versioned: a discard or a redrive mark can be undone within that)."
  type        = number
  default     = 30
  nullable    = false

  validation {
    condition     = floor(var.noncurrent_version_expiration_days) == var.noncurrent_version_expiration_days && var.noncurrent_version_expiration_days >= 1 && var.noncurrent_version_expiration_days <= 3650
    error_message = "noncurrent_version_expiration_days must be a whole number from 1 to 3650."
  }
}

variable "kms_key_arn" {
  description = "Customer managed KMS key to encrypt the bucket the module makes with (SSE-KMS, with an S3 Bucket Key), or null for SSE-S3. Its key policy must let the archiver's role (and operators) use it."
  type        = string
  default     = null

  validation {
    condition     = var.kms_key_arn == null ? true : can(regex("^arn:aws[a-z-]*:kms:[a-z0-9-]+:[0-9]{12}:key/.+$", var.kms_key_arn))
    error_message = "kms_key_arn must be null or a KMS key ARN (arn:<partition>:kms:<region>:<account>:key/<id>); an alias cannot scope IAM."
  }
}

variable "require_tls_1_2" {
  description = "The bucket policy of the bucket the module makes also denies TLS older than 1.2 (it always denies plain HTTP)."
  type        = bool
  default     = true
  nullable    = false
}

variable "batch_size" {
  description = "Messages per archiver invocation (1-10: without a batching window, what one ReceiveMessage returns)."
  type        = number
  default     = 10
  nullable    = false

  validation {
    condition     = floor(var.batch_size) == var.batch_size && var.batch_size >= 1 && var.batch_size <= 10
    error_message = "batch_size must be a whole number from 1 to 10, got ${var.batch_size}."
  }
}

variable "maximum_concurrency" {
  description = "Most concurrent archiver invocations per source queue (the mapping's scaling_config; Lambda's minimum is 2)."
  type        = number
  default     = 2
  nullable    = false

  validation {
    condition     = floor(var.maximum_concurrency) == var.maximum_concurrency && var.maximum_concurrency >= 2 && var.maximum_concurrency <= 1000
    error_message = "maximum_concurrency must be a whole number from 2 to 1000 (Lambda's range for SQS event source mappings), got ${var.maximum_concurrency}."
  }
}

variable "package" {
  description = "Path of the local deployment zip holding the serverless_retry package (the consumer's package does), unless it comes in a layer. Give exactly one of package and s3_package."
  type        = string
  default     = null
}

variable "s3_package" {
  description = "The deployment zip as an S3 object instead of package: bucket, key, and optionally object_version and source_code_hash (base64 SHA-256; redeploys when it changes)."
  type = object({
    bucket           = string
    key              = string
    object_version   = optional(string)
    source_code_hash = optional(string)
  })
  default = null
}

variable "layers" {
  description = "Layer version ARNs of the archiver (at most 5), e.g. the layer module's `arn` with serverless_retry."
  type        = list(string)
  default     = []
  nullable    = false

  validation {
    condition     = length(var.layers) <= 5
    error_message = "A Lambda function takes at most 5 layers."
  }
}

variable "runtime" {
  description = "Python runtime of the archiver."
  type        = string
  default     = "python3.12"
  nullable    = false
}

variable "architectures" {
  description = "Instruction set of the archiver: [\"arm64\"] (the default) or [\"x86_64\"]; the package and layers must be built for it."
  type        = list(string)
  default     = ["arm64"]
  nullable    = false

  validation {
    condition     = length(var.architectures) == 1 && alltrue([for a in var.architectures : contains(["arm64", "x86_64"], a)])
    error_message = "architectures must be [\"arm64\"] or [\"x86_64\"]: Lambda runs a function on exactly one instruction set, got ${jsonencode(var.architectures)}."
  }
}

variable "memory_size" {
  description = "Memory of the archiver in MB (it only parses JSON and makes S3 PUTs)."
  type        = number
  default     = 256
  nullable    = false

  validation {
    condition     = floor(var.memory_size) == var.memory_size && var.memory_size >= 128 && var.memory_size <= 10240
    error_message = "memory_size must be a whole number of MB from 128 to 10240."
  }
}

variable "timeout" {
  description = "Timeout of the archiver in seconds. Each source queue's visibility timeout must be at least 6 x this (Lambda's advice for SQS event sources; checked when sources[*].visibility_timeout_seconds is given). 5 s fits 6 x into the 30 s visibility timeout the terminal queues of modules/queue and modules/self-healing have; a batch is at most 10 small PUTs, and a timed-out batch only comes back to be written again (a second write of a key is a no-op)."
  type        = number
  default     = 5
  nullable    = false

  validation {
    condition     = floor(var.timeout) == var.timeout && var.timeout >= 1 && var.timeout <= 900
    error_message = "timeout must be a whole number of seconds from 1 to 900."
  }
}

variable "log_retention_days" {
  description = "Retention of the archiver's log group in days."
  type        = number
  default     = 30
  nullable    = false

  validation {
    condition     = contains([1, 3, 5, 7, 14, 30, 60, 90, 120, 150, 180, 365, 400, 545, 731, 1096, 1827, 2192, 2557, 2922, 3288, 3653], var.log_retention_days)
    error_message = "log_retention_days must be one of CloudWatch Logs' retention values (1, 3, 5, 7, 14, 30, 60, 90, 120, 150, 180, 365, 400, 545, 731, 1096, 1827, 2192, 2557, 2922, 3288, 3653)."
  }
}

variable "logs_kms_key_arn" {
  description = "KMS key to encrypt the archiver's log group with, or null for CloudWatch Logs' default encryption. Its key policy must allow logs.<region>.amazonaws.com."
  type        = string
  default     = null
}

variable "environment_kms_key_arn" {
  description = "KMS key for the archiver's environment variables, or null for Lambda's own key."
  type        = string
  default     = null
}

variable "log_level" {
  description = "POWERTOOLS_LOG_LEVEL of the archiver."
  type        = string
  default     = "INFO"
  nullable    = false
}

variable "permissions_boundary_arn" {
  description = "Optional permissions boundary for the archiver's role."
  type        = string
  default     = null
}

variable "role_arn" {
  description = "Bring your own execution role for the archiver (nothing IAM is created; give it the `policy_json` output), or null."
  type        = string
  default     = null
}

variable "vpc" {
  description = "Run the archiver in your VPC: subnet_ids and security_group_ids, or null. It then reaches SQS, S3 and CloudWatch Logs through a NAT gateway or VPC endpoints."
  type = object({
    subnet_ids         = list(string)
    security_group_ids = list(string)
  })
  default = null
}

variable "tags" {
  description = "Tags for every taggable resource."
  type        = map(string)
  default     = {}
  nullable    = false
}
