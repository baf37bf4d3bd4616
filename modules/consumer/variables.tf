variable "name" {
  description = "Name of the function and of its role (when the module creates one); also the Powertools service name and the log group's `/aws/lambda/<name>`."
  type        = string

  validation {
    # Lambda function names and IAM role names both allow 64 characters.
    condition     = can(regex("^[A-Za-z0-9_-]{1,64}$", var.name))
    error_message = "name must be 1-64 characters of letters, digits, hyphens and underscores (Lambda's rule for function names; the role takes the same name)."
  }
}

variable "package" {
  description = "Path of a local deployment zip: your code, with the serverless_retry package unless it comes in a layer (`serverless-retry package` or `./build.sh package` builds one). Give exactly one of package and s3_package."
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
  description = "Lambda layer version ARNs for the function (at most 5, in order), e.g. the layer module's `arn` holding serverless_retry, so that package holds only your code; or AWS's public Powertools layer with a layer built without Powertools."
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

variable "processor" {
  description = "Your function called once per message, as `module:function` (for example `orders.process:handle`). null for a plain handler of your own that does not use serverless_retry (native SQS retry: give `handler`, no retry policy): failed records come back with the queue's visibility timeout and go to its DLQ after maxReceiveCount, and no SERVERLESS_RETRY_* variable or retry permission is wired."
  type        = string
  default     = null

  validation {
    condition     = var.processor == null || can(regex("^[A-Za-z_][A-Za-z0-9_]*(\\.[A-Za-z_][A-Za-z0-9_]*)*:[A-Za-z_][A-Za-z0-9_]*$", var.processor))
    error_message = "processor must be \"module.path:function\", e.g. \"orders.process:handle\" (or null with your own plain handler)."
  }
}

variable "handler" {
  description = "The Lambda handler. Leave null for serverless_retry.handlers.consumer.handler; set your own `module.function` when you keep your own handler around a RetryingConsumer (the SERVERLESS_RETRY_* environment is wired either way), or, with processor = null, a plain handler that reports batch item failures itself (native SQS retry)."
  type        = string
  default     = null

  validation {
    condition     = var.handler == null || can(regex("^[A-Za-z_][A-Za-z0-9_]*(\\.[A-Za-z_][A-Za-z0-9_]*)+$", var.handler))
    error_message = "handler must be \"module.path.function\", e.g. \"orders.lambda_handler.handler\" (or null for the built-in consumer handler)."
  }
}

variable "retry_policy_json" {
  description = "The retry policy as JSON (reference: docs/retry-policy.md), e.g. `file(\"policy.json\")` or `jsonencode({...})`. Checked at plan time by modules/retry-policy (unknown fields, types, ranges, RE2 regexes) and again by the function at cold start; the function receives it re-rendered without null fields. Required with a processor; null with a plain handler (processor = null), which no policy would reach."
  type        = string
  default     = null

  validation {
    condition     = var.retry_policy_json == null || can(keys(jsondecode(var.retry_policy_json)))
    error_message = "retry_policy_json must be a JSON object (the retry policy)."
  }
}

variable "queue" {
  description = <<-EOT
    The queue set the function consumes and retries into (the queue module's outputs). dlq_arn is the
    dead-letter target of retry schedules and must be a standard queue (EventBridge Scheduler takes no
    FIFO DLQ): schedule_dlq_arn when given, else dlq_arn. The names, when given, bound the length of the
    URLs and ARNs at plan time (they are unknown before the first apply), so the 4 KB environment limit
    is checked at plan time. message_retention_seconds and max_receive_count feed the plan-time guards of
    the in-place transports (visibility, FIFO ordered, sqs-hops) and of native retry. exhausted_queue_url
    and exhausted_queue_arn are required with a processor; a plain handler (processor = null) never
    writes there.
  EOT
  type = object({
    arn                         = string
    url                         = string
    visibility_timeout_seconds  = number
    dlq_arn                     = string
    exhausted_queue_url         = optional(string)
    exhausted_queue_arn         = optional(string)
    max_message_size            = optional(number, 260096)
    exhausted_max_message_size  = optional(number)
    kms_key_arn                 = optional(string)
    fifo                        = optional(bool)
    content_based_deduplication = optional(bool)
    schedule_dlq_arn            = optional(string)
    message_retention_seconds   = optional(number, 345600)
    max_receive_count           = optional(number)
    name                        = optional(string)
    exhausted_queue_name        = optional(string)
    schedule_dlq_name           = optional(string)
  })
  nullable = false

  validation {
    condition     = !endswith(coalesce(var.queue.schedule_dlq_arn, var.queue.dlq_arn), ".fifo")
    error_message = "The dead-letter target of retry schedules (queue.schedule_dlq_arn, else queue.dlq_arn) must be a standard queue: EventBridge Scheduler does not support FIFO dead-letter queues. For a FIFO source give queue.schedule_dlq_arn = the queue module's schedule_dlq_arn (<name>-schedule-dlq)."
  }

  validation {
    # FIFO-ness must agree wherever the source is named, and its DLQ must be FIFO too (SQS's rule).
    condition     = var.queue.fifo == null ? true : alltrue([for a in [var.queue.arn, var.queue.url, var.queue.dlq_arn] : endswith(a, ".fifo") == var.queue.fifo])
    error_message = "queue.fifo = ${jsonencode(var.queue.fifo)} disagrees with the queue ARN/URL or its DLQ ARN: a FIFO queue's name ends in .fifo, and SQS requires the DLQ of a FIFO source to be FIFO (and of a standard source, standard)."
  }

  validation {
    condition     = floor(var.queue.message_retention_seconds) == var.queue.message_retention_seconds && var.queue.message_retention_seconds >= 60 && var.queue.message_retention_seconds <= 1209600
    error_message = "queue.message_retention_seconds must be a whole number from 60 to 1209600 (SQS's range)."
  }

  validation {
    condition     = var.queue.exhausted_max_message_size == null ? true : var.queue.exhausted_max_message_size >= 1024 && var.queue.exhausted_max_message_size <= 1048576
    error_message = "queue.exhausted_max_message_size must be null or from 1024 to 1048576 bytes."
  }
}

variable "scheduler" {
  description = "The schedule group and execution role for retries that go through EventBridge Scheduler (longer than SQS's 15-minute delay, or FIFO unordered). null when the policy never schedules (a precondition checks it); role_name, when given, bounds the role ARN's length at plan time."
  type = object({
    schedule_group_name = string
    schedule_group_arn  = string
    role_arn            = string
    role_name           = optional(string)
  })
  default = null
}

variable "fifo_order" {
  description = "FIFO sources only: `ordered` retries a failed message in place with the visibility timeout (its message group waits; later records of the group in the batch are handed back unprocessed); `unordered` lets the retry leave its group through the Scheduler and the group goes on. Wired as SERVERLESS_RETRY_FIFO_ORDER."
  type        = string
  default     = "ordered"
  nullable    = false

  validation {
    condition     = contains(["ordered", "unordered"], var.fifo_order)
    error_message = "fifo_order must be \"ordered\" (retry in place, the message group waits) or \"unordered\" (the retry leaves its group through the Scheduler), got \"${var.fifo_order}\"."
  }
}

variable "runtime" {
  description = "Python runtime of the function."
  type        = string
  default     = "python3.12"
  nullable    = false

  validation {
    condition     = contains(["python3.11", "python3.12", "python3.13"], var.runtime)
    error_message = "runtime must be one of python3.11, python3.12, python3.13 (the package needs Python 3.11 or newer)."
  }
}

variable "architectures" {
  description = "Instruction set of the function, as Lambda takes it: [\"arm64\"] or [\"x86_64\"]. The serverless_retry package holds its one native extension (RE2) for both; your requirements must be built for the one chosen (serverless-retry package builds for either), and so must the layers."
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

  validation {
    condition     = floor(var.memory_size) == var.memory_size && var.memory_size >= 128 && var.memory_size <= 10240
    error_message = "memory_size must be a whole number of MB from 128 to 10240."
  }
}

variable "timeout" {
  description = "Function timeout in seconds. The queue's visibility timeout must be at least 6 times this."
  type        = number
  default     = 30
  nullable    = false

  validation {
    condition     = floor(var.timeout) == var.timeout && var.timeout >= 1 && var.timeout <= 900
    error_message = "timeout must be a whole number of seconds from 1 to 900."
  }
}

variable "reserved_concurrency" {
  description = "Reserved concurrent executions, or null to draw from the account's pool. With it, set maximum_concurrency to at most this (a precondition; without it, a plan warning): Lambda's SQS pollers do not look at reserved concurrency, and batches received beyond it are throttled and drift toward the DLQ. 0 throttles every invocation while the mapping still receives, so it is no way to pause the consumer (disable the event source mapping instead)."
  type        = number
  default     = null

  validation {
    condition     = var.reserved_concurrency == null || (floor(coalesce(var.reserved_concurrency, 0)) == coalesce(var.reserved_concurrency, 0) && coalesce(var.reserved_concurrency, 0) >= 0)
    error_message = "reserved_concurrency must be null or a whole number >= 0."
  }
}

variable "tracing" {
  description = "Enable active AWS X-Ray tracing (adds the X-Ray write permissions to the role)."
  type        = bool
  default     = false
  nullable    = false
}

variable "log_retention_days" {
  description = "Retention of the function's log group in days."
  type        = number
  default     = 30
  nullable    = false

  validation {
    condition     = contains([1, 3, 5, 7, 14, 30, 60, 90, 120, 150, 180, 365, 400, 545, 731, 1096, 1827, 2192, 2557, 2922, 3288, 3653], var.log_retention_days)
    error_message = "log_retention_days must be one of the values CloudWatch Logs accepts: 1, 3, 5, 7, 14, 30, 60, 90, 120, 150, 180, 365, 400, 545, 731, 1096, 1827, 2192, 2557, 2922, 3288, 3653."
  }
}

variable "logs_kms_key_arn" {
  description = "KMS key to encrypt the log group with, or null for CloudWatch Logs' default encryption. Its key policy must allow logs.<region>.amazonaws.com."
  type        = string
  default     = null

  validation {
    condition     = var.logs_kms_key_arn == null ? true : can(regex("^arn:aws[a-z-]*:kms:[a-z0-9-]+:[0-9]{12}:key/[A-Za-z0-9-]+$", var.logs_kms_key_arn))
    error_message = "logs_kms_key_arn must be a KMS key ARN (arn:<partition>:kms:<region>:<account>:key/<id>); CloudWatch Logs does not accept aliases."
  }
}

variable "environment_kms_key_arn" {
  description = "KMS key to encrypt the function's environment variables with, or null for the Lambda-managed key."
  type        = string
  default     = null
}

variable "code_signing_config_arn" {
  description = "ARN of a Lambda code signing configuration, or null. With one, Lambda refuses a package not signed by its AWS Signer profiles: sign the zip (e.g. upload it to S3 and run a Signer job) before pointing `package` at it."
  type        = string
  default     = null

  validation {
    condition     = var.code_signing_config_arn == null ? true : can(regex("^arn:aws[a-z-]*:lambda:[a-z0-9-]+:[0-9]{12}:code-signing-config:csc-[a-z0-9]{17}$", var.code_signing_config_arn))
    error_message = "code_signing_config_arn must be a Lambda code signing configuration ARN (arn:<partition>:lambda:<region>:<account>:code-signing-config:csc-<17 characters>)."
  }
}

variable "log_level" {
  description = "POWERTOOLS_LOG_LEVEL of the function."
  type        = string
  default     = "INFO"
  nullable    = false

  validation {
    condition     = contains(["DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"], var.log_level)
    error_message = "log_level must be one of DEBUG, INFO, WARNING, ERROR, CRITICAL."
  }
}

variable "environment" {
  description = "Extra environment variables for your processor. They may not override the variables the module wires (SERVERLESS_RETRY_* except the local-clock ones, POWERTOOLS_*)."
  type        = map(string)
  default     = {}
  nullable    = false

  validation {
    condition = alltrue([
      for k in keys(var.environment) :
      (!startswith(k, "SERVERLESS_RETRY_") && !startswith(k, "POWERTOOLS_")) || contains(["SERVERLESS_RETRY_CLOCK_SCALE", "SERVERLESS_RETRY_CLOCK_EPOCH"], k)
    ])
    error_message = "environment may not set SERVERLESS_RETRY_* or POWERTOOLS_* variables (the module wires them from its inputs, e.g. idempotency_table_arn); only SERVERLESS_RETRY_CLOCK_SCALE and SERVERLESS_RETRY_CLOCK_EPOCH (local emulator) are allowed."
  }
}

variable "settings" {
  description = "For composing modules (e.g. modules/stream-retry), not for your processor: SERVERLESS_RETRY_* settings of the built-in handlers that this module does not wire itself, merged last into the function's environment (and counted in its 4 KB)."
  type        = map(string)
  default     = {}
  nullable    = false

  validation {
    condition     = alltrue([for k in keys(var.settings) : can(regex("^SERVERLESS_RETRY_[A-Z0-9_]+$", k))])
    error_message = "settings holds SERVERLESS_RETRY_* variables only (upper-case letters, digits and underscores after the prefix); your processor's own variables go in environment."
  }
}

variable "archive" {
  description = "The archive (modules/archive) the consumer writes claim-check payloads to: a final envelope too large for the retry-exhausted queue goes whole to `<prefix>payloads/` in this bucket and the queue gets a pointer with its reason (no terminal message without its reason). `bucket_arn` and `prefix` are modules/archive's outputs; `kms_key_arn` the bucket's key when SSE-KMS. null: such a message goes framed (the original with a summary header) or, when not even that fits, as it came."
  type = object({
    bucket_arn  = string
    prefix      = optional(string, "serverless-retry/")
    kms_key_arn = optional(string)
  })
  default = null

  validation {
    condition     = var.archive == null || can(regex("^arn:aws[a-z-]*:s3:::[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$", var.archive.bucket_arn))
    error_message = "archive.bucket_arn must be an S3 bucket ARN (arn:aws:s3:::<bucket>), e.g. modules/archive's bucket_arn output."
  }

  validation {
    condition     = var.archive == null ? true : (var.archive.prefix == "" || (endswith(var.archive.prefix, "/") && !startswith(var.archive.prefix, "/")))
    error_message = "archive.prefix must be empty or end in \"/\" without a leading \"/\" (modules/archive's prefix output)."
  }
}

variable "batch_size" {
  description = "Records per invocation. Above 10 needs a batching window."
  type        = number
  default     = 10
  nullable    = false

  validation {
    condition     = floor(var.batch_size) == var.batch_size && var.batch_size >= 1 && var.batch_size <= 10000
    error_message = "batch_size must be a whole number from 1 to 10000."
  }
}

variable "maximum_batching_window_seconds" {
  description = "How long the event source mapping gathers records before invoking (0 = invoke as soon as records arrive). Not supported for FIFO queues."
  type        = number
  default     = 0
  nullable    = false

  validation {
    condition     = floor(var.maximum_batching_window_seconds) == var.maximum_batching_window_seconds && var.maximum_batching_window_seconds >= 0 && var.maximum_batching_window_seconds <= 300
    error_message = "maximum_batching_window_seconds must be a whole number from 0 to 300."
  }
}

variable "maximum_concurrency" {
  description = "Most concurrent invocations the SQS event source may drive (2-1000), or null for no limit beyond the account's."
  type        = number
  default     = null

  validation {
    condition     = var.maximum_concurrency == null || (floor(coalesce(var.maximum_concurrency, 2)) == coalesce(var.maximum_concurrency, 2) && coalesce(var.maximum_concurrency, 2) >= 2 && coalesce(var.maximum_concurrency, 2) <= 1000)
    error_message = "maximum_concurrency must be null or a whole number from 2 to 1000."
  }
}

variable "idempotency_table_arn" {
  description = "ARN of a DynamoDB table (partition key `id`, TTL on `expiration`) for Powertools idempotency keyed on the message's first-delivery id, or null for none. The role gets item read/write on exactly this table."
  type        = string
  default     = null

  validation {
    condition     = var.idempotency_table_arn == null ? true : can(regex("^arn:aws[a-z-]*:dynamodb:[a-z0-9-]+:[0-9]{12}:table/[A-Za-z0-9_.-]{3,255}$", var.idempotency_table_arn))
    error_message = "idempotency_table_arn must be a DynamoDB table ARN (arn:<partition>:dynamodb:<region>:<account>:table/<name>)."
  }
}

variable "claims" {
  description = <<-EOT
    One retry chain per message (serverless_retry.consumer.claims), on by default for a consumer with a
    processor: each attempt of a message is claimed in a DynamoDB table before it runs, so a record
    delivered twice (or a retry sent twice) does not start a second chain. A first delivery that
    succeeds writes nothing. `enabled = false` opts out (no table, no SERVERLESS_RETRY_CLAIMS_TABLE:
    a duplicate delivery can then run the processor again and start a second chain). `table_arn`
    brings your own table (partition key `id` of type S, TTL on `expiration`): nothing is created and
    the role may use exactly that table. `kms_key_arn` is the customer managed key of the table: the
    created table is encrypted with it (a table of your own: the key it is encrypted with), and the
    role may use it through DynamoDB only; null encrypts a created table with DynamoDB's AWS managed
    key (aws/dynamodb), which needs no key policy. A plain handler (processor = null) runs no claims and gets none of this. Separate
    from idempotency_table_arn (Powertools idempotency: a processor that succeeded is not run again).
  EOT
  type = object({
    enabled     = optional(bool, true)
    table_arn   = optional(string)
    kms_key_arn = optional(string)
  })
  default  = {}
  nullable = false

  validation {
    condition     = var.claims.table_arn == null ? true : can(regex("^arn:aws[a-z-]*:dynamodb:[a-z0-9-]+:[0-9]{12}:table/[A-Za-z0-9_.-]{3,255}$", var.claims.table_arn))
    error_message = "claims.table_arn must be a DynamoDB table ARN (arn:<partition>:dynamodb:<region>:<account>:table/<name>), or null for the module to create the table."
  }

  validation {
    condition     = var.claims.kms_key_arn == null ? true : can(regex("^arn:aws[a-z-]*:kms:[a-z0-9-]+:[0-9]{12}:key/[A-Za-z0-9-]+$", var.claims.kms_key_arn))
    error_message = "claims.kms_key_arn must be a KMS key ARN (arn:<partition>:kms:<region>:<account>:key/<id>), not an alias: IAM statements need the key ARN."
  }
}

variable "permissions_boundary_arn" {
  description = "Optional permissions boundary for the function's role (when the module creates it)."
  type        = string
  default     = null
}

variable "vpc" {
  description = "Run the function in your VPC: subnet_ids (1-16) and security_group_ids (1-5), both given, or vpc = null (the default) for none. The role gets the network-interface permissions Lambda needs, on these subnets and security groups. The function then reaches SQS, EventBridge Scheduler, DynamoDB and CloudWatch Logs only through a NAT gateway or VPC endpoints of those services."
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

variable "role_arn" {
  description = "Bring your own execution role: its ARN, and the module creates no role. Attach the `policy_json` output (what the function needs, nothing more) to it before the function and its event source mapping are created: Lambda checks the role can read the queue when it creates the mapping (the module README shows how to make role_arn wait for the attachment in the same root). null (the default): the module creates the role `<name>`."
  type        = string
  default     = null

  validation {
    condition     = var.role_arn == null ? true : can(regex("^arn:aws[a-z-]*:iam::[0-9]{12}:role/([A-Za-z0-9+=,.@_-]+/)*[A-Za-z0-9+=,.@_-]{1,64}$", var.role_arn))
    error_message = "role_arn must be an IAM role ARN (arn:<partition>:iam::<account>:role/<path/><name>), or null to let the module create the role."
  }
}

variable "policy_statements" {
  description = "Extra statements for the role the module creates, for what your processor calls (a table, a bucket, an API): sid (optional, letters and digits), effect (Allow, the default, or Deny), actions, resources and conditions ({test, variable, values}). They go in their own inline policy `extra`, apart from the module's. Not with role_arn: your own role takes your statements directly."
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
    condition     = alltrue([for s in var.policy_statements : s.sid == null ? true : can(regex("^[A-Za-z0-9]{1,128}$", s.sid))]) && length(distinct(compact([for s in var.policy_statements : s.sid]))) == length(compact([for s in var.policy_statements : s.sid]))
    error_message = "policy_statements: every sid must be unique and made of letters and digits only (IAM's rule for statement ids), or left out."
  }

  validation {
    condition     = alltrue([for s in var.policy_statements : contains(["Allow", "Deny"], s.effect)])
    error_message = "policy_statements: effect must be \"Allow\" or \"Deny\"."
  }

  validation {
    condition     = alltrue([for s in var.policy_statements : length(s.actions) >= 1 && alltrue([for a in s.actions : can(regex("^[a-z0-9-]+:[A-Za-z0-9*?]+$", a)) && !can(regex(":\\*$", a))])])
    error_message = "policy_statements: every statement needs actions as \"service:Action\" (e.g. \"dynamodb:PutItem\"), and none may be \"*\" or \"service:*\": name the actions your processor calls. Offending: ${join(", ", flatten([for s in var.policy_statements : [for a in s.actions : a if !can(regex("^[a-z0-9-]+:[A-Za-z0-9*?]+$", a)) || can(regex(":\\*$", a))]]))}."
  }

  validation {
    condition     = alltrue([for s in var.policy_statements : length(s.resources) >= 1 && alltrue([for r in s.resources : r != ""])])
    error_message = "policy_statements: every statement needs at least one resource (the exact ARNs it applies to)."
  }

  validation {
    condition     = alltrue(flatten([for s in var.policy_statements : [for c in s.conditions : length(c.values) >= 1 && c.test != "" && c.variable != ""]]))
    error_message = "policy_statements: every condition needs a test (e.g. StringEquals), a variable (e.g. aws:SourceAccount) and at least one value."
  }
}

variable "tags" {
  description = "Tags for every taggable resource."
  type        = map(string)
  default     = {}
  nullable    = false
}

variable "recursive_loop" {
  description = "The function's recursive loop detection setting (PutFunctionRecursionConfig): `Allow` lets it be invoked more than 16 times in one chain of its own sends, `Terminate` is Lambda's default. Null (the default): `Allow` when the serverless_retry consumer sends retries to its own queue (transports sqs-delay, sqs-hops, scheduler and auto, whose loop guard is the policy's max_attempts and max_age_seconds), else `Terminate` (a plain handler, processor = null; retries in place with the visibility timeout). Set `Terminate` to have Lambda stop such a consumer's chains after 16 sends, which ends long retries early."
  type        = string
  default     = null

  validation {
    condition     = var.recursive_loop == null || contains(["Allow", "Terminate"], coalesce(var.recursive_loop, "Terminate"))
    error_message = "recursive_loop must be \"Allow\", \"Terminate\" or null (the module decides), got \"${coalesce(var.recursive_loop, "null")}\"."
  }
}
