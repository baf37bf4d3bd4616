variable "name" {
  description = "Base name. The queues are `<name>`, `<name>-dlq` and `<name>-exhausted` (each with `.fifo` appended for FIFO queues), and for FIFO queues the standard `<name>-schedule-dlq`."
  type        = string

  validation {
    # SQS allows 80 characters; the longest suffix added here is "-exhausted.fifo" (15).
    condition     = can(regex("^[A-Za-z0-9_-]{1,65}$", var.name))
    error_message = "name must be 1-65 characters of letters, digits, hyphens and underscores (SQS names are at most 80 characters and the module appends up to 15)."
  }
}

variable "fifo" {
  description = "Create FIFO queues (source, DLQ and exhausted queue alike; SQS requires a FIFO source's DLQ to be FIFO). FIFO queues have no per-message delay, so retries are in place or go through the Scheduler, and the Scheduler takes only standard dead-letter queues: a standard `<name>-schedule-dlq` is created for the retry schedules."
  type        = bool
  default     = false
  nullable    = false
}

variable "exhausted_queue" {
  description = "Create the retry-exhausted queue, where the serverless_retry consumer puts the messages it gives up on, each with the reason. false for a plain handler of your own (native SQS retry, the consumer module with processor = null), which never writes there: the DLQ is then the only place a failing message ends."
  type        = bool
  default     = true
  nullable    = false
}

variable "content_based_deduplication" {
  description = "FIFO only: deduplicate by a SHA-256 of the body when a sender gives no MessageDeduplicationId. Keep it on when retries go through EventBridge Scheduler: a Scheduler SQS target can pass only a MessageGroupId, and AWS requires content-based deduplication on a FIFO target queue. Senders that pass their own MessageDeduplicationId are unaffected."
  type        = bool
  default     = true
  nullable    = false
}

variable "visibility_timeout_seconds" {
  description = "Visibility timeout of the source queue. For a Lambda consumer it must be at least 6 x the function timeout (the consumer module checks this)."
  type        = number
  default     = 180
  nullable    = false

  validation {
    condition     = floor(var.visibility_timeout_seconds) == var.visibility_timeout_seconds && var.visibility_timeout_seconds >= 0 && var.visibility_timeout_seconds <= 43200
    error_message = "visibility_timeout_seconds must be a whole number from 0 to 43200 (12 hours)."
  }
}

variable "message_retention_seconds" {
  description = "How long the source queue keeps a message (default 4 days)."
  type        = number
  default     = 345600
  nullable    = false

  validation {
    condition     = floor(var.message_retention_seconds) == var.message_retention_seconds && var.message_retention_seconds >= 60 && var.message_retention_seconds <= 1209600
    error_message = "message_retention_seconds must be a whole number from 60 (1 minute) to 1209600 (14 days)."
  }
}

variable "dlq_message_retention_seconds" {
  description = "How long the DLQ keeps a message (default 14 days). Must be longer than the source queue's retention: a redriven message keeps its original enqueue time."
  type        = number
  default     = 1209600
  nullable    = false

  validation {
    condition     = floor(var.dlq_message_retention_seconds) == var.dlq_message_retention_seconds && var.dlq_message_retention_seconds >= 60 && var.dlq_message_retention_seconds <= 1209600
    error_message = "dlq_message_retention_seconds must be a whole number from 60 (1 minute) to 1209600 (14 days)."
  }
}

variable "exhausted_message_retention_seconds" {
  description = "How long the retry-exhausted queue keeps a message (default 14 days)."
  type        = number
  default     = 1209600
  nullable    = false

  validation {
    condition     = floor(var.exhausted_message_retention_seconds) == var.exhausted_message_retention_seconds && var.exhausted_message_retention_seconds >= 60 && var.exhausted_message_retention_seconds <= 1209600
    error_message = "exhausted_message_retention_seconds must be a whole number from 60 (1 minute) to 1209600 (14 days)."
  }
}

variable "max_receive_count" {
  description = "Receives of one message before SQS moves it to the DLQ (the native redrive that catches records whose retry could not be recorded). At least 5, as AWS Lambda advises for SQS event sources, unless allow_max_receive_count_below_5."
  type        = number
  default     = 5
  nullable    = false

  validation {
    condition     = floor(var.max_receive_count) == var.max_receive_count && var.max_receive_count >= 1 && var.max_receive_count <= 1000
    error_message = "max_receive_count must be a whole number from 1 to 1000."
  }
}

variable "allow_max_receive_count_below_5" {
  description = "Accept a max_receive_count below 5, against AWS Lambda's guidance: messages reach the DLQ after fewer receives, e.g. during one throttling spell or a bad deploy."
  type        = bool
  default     = false
  nullable    = false
}

variable "max_message_size" {
  description = "Maximum message size in bytes of the source queue and its DLQ. The consumer refuses to grow a retry envelope past it. The default is 2 KiB below the 262144 that hashicorp/aws 5.x allows the retry-exhausted queue, so a message at the limit still reaches that queue with its outcome and reason. SQS allows up to 1048576 (1 MiB) with hashicorp/aws 6.8 and later."
  type        = number
  default     = 260096
  nullable    = false

  validation {
    condition     = floor(var.max_message_size) == var.max_message_size && var.max_message_size >= 1024 && var.max_message_size <= 1048576
    error_message = "max_message_size must be a whole number of bytes from 1024 to 1048576 (1 MiB, SQS's limit; hashicorp/aws 5.x stops at 262144)."
  }
}

variable "exhausted_max_message_size" {
  description = "Maximum message size in bytes of the retry-exhausted queue (and the schedule DLQ). null: as large as SQS and the provider allow, i.e. 262144 (hashicorp/aws 5.x) or, when max_message_size is already above that, 1048576. It must be at least max_message_size + 2048 (the most a terminal message's outcome and reason add around the body): a source of 262144 needs hashicorp/aws >= 6.8 and at least 264192 here, and a source above 1046528 is refused."
  type        = number
  default     = null

  validation {
    condition     = var.exhausted_max_message_size == null ? true : floor(var.exhausted_max_message_size) == var.exhausted_max_message_size && var.exhausted_max_message_size >= 1024 && var.exhausted_max_message_size <= 1048576
    error_message = "exhausted_max_message_size must be null or a whole number of bytes from 1024 to 1048576."
  }
}

variable "kms_key_arn" {
  description = "ARN of a customer-managed KMS key for SSE-KMS on all three queues. null (the default) uses SQS-managed SSE. The key policy must let the account's IAM policies grant its use (the consumer and scheduler modules add kms:GenerateDataKey/kms:Decrypt on it to their roles), and allow service producers such as sns.amazonaws.com."
  type        = string
  default     = null

  validation {
    condition     = var.kms_key_arn == null || can(regex("^arn:aws[a-z-]*:kms:[a-z0-9-]+:[0-9]{12}:key/[A-Za-z0-9-]+$", var.kms_key_arn))
    error_message = "kms_key_arn must be a KMS key ARN (arn:<partition>:kms:<region>:<account>:key/<id>); aliases are not accepted because IAM statements need the key ARN."
  }
}

variable "kms_data_key_reuse_period_seconds" {
  description = "With a KMS key: how long SQS reuses a data key before calling KMS again."
  type        = number
  default     = 300
  nullable    = false

  validation {
    condition     = floor(var.kms_data_key_reuse_period_seconds) == var.kms_data_key_reuse_period_seconds && var.kms_data_key_reuse_period_seconds >= 60 && var.kms_data_key_reuse_period_seconds <= 86400
    error_message = "kms_data_key_reuse_period_seconds must be a whole number from 60 to 86400."
  }
}

variable "source_queue_policy_documents" {
  description = "Extra IAM policy documents (JSON) merged into the source queue's policy, e.g. to let an SNS topic send to it. The TLS-only deny is always added."
  type        = list(string)
  default     = []
  nullable    = false

  validation {
    condition     = alltrue([for d in var.source_queue_policy_documents : can(jsondecode(d))])
    error_message = "Every entry of source_queue_policy_documents must be a JSON policy document."
  }
}

variable "tags" {
  description = "Tags for every taggable resource."
  type        = map(string)
  default     = {}
  nullable    = false
}
