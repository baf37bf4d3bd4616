variable "name" {
  description = "Name of the schedule group, and the base of the execution role's name (`<name>-scheduler`)."
  type        = string

  validation {
    # Schedule group names allow 64 characters; IAM role names 64, and "-scheduler" takes 10.
    condition     = can(regex("^[A-Za-z0-9_.-]{1,54}$", var.name))
    error_message = "name must be 1-54 characters of letters, digits, '.', '-' and '_' (the role name appends \"-scheduler\" and IAM allows 64)."
  }
}

variable "target_queue_arns" {
  description = "SQS queues the schedules may send to (the retry target: the source queue)."
  type        = list(string)
  default     = []
  nullable    = false

  validation {
    condition     = alltrue([for a in var.target_queue_arns : can(regex("^arn:aws[a-z-]*:sqs:[a-z0-9-]+:[0-9]{12}:[A-Za-z0-9_.-]+$", a))])
    error_message = "Every target_queue_arns entry must be an SQS queue ARN (arn:<partition>:sqs:<region>:<account>:<name>)."
  }
}

variable "dead_letter_queue_arns" {
  description = "Standard SQS queues the Scheduler may dead-letter undeliverable schedules to (each schedule's DeadLetterConfig). EventBridge Scheduler does not support FIFO queues as dead-letter queues."
  type        = list(string)
  default     = []
  nullable    = false

  validation {
    condition     = alltrue([for a in var.dead_letter_queue_arns : can(regex("^arn:aws[a-z-]*:sqs:[a-z0-9-]+:[0-9]{12}:[A-Za-z0-9_.-]+$", a))])
    error_message = "Every dead_letter_queue_arns entry must be an SQS queue ARN (arn:<partition>:sqs:<region>:<account>:<name>)."
  }

  validation {
    condition     = alltrue([for a in var.dead_letter_queue_arns : !endswith(a, ".fifo")])
    error_message = "dead_letter_queue_arns must be standard queues: EventBridge Scheduler does not support a FIFO queue as a schedule's dead-letter queue (offending: ${join(", ", [for a in var.dead_letter_queue_arns : a if endswith(a, ".fifo")])}). For a FIFO source, use the queue module's standard <name>-schedule-dlq (its schedule_dlq_arn output)."
  }
}

variable "target_topic_arns" {
  description = "SNS topics the schedules may publish to (the self-healing pattern's redrive to a topic)."
  type        = list(string)
  default     = []
  nullable    = false

  validation {
    condition     = alltrue([for a in var.target_topic_arns : can(regex("^arn:aws[a-z-]*:sns:[a-z0-9-]+:[0-9]{12}:[A-Za-z0-9_.-]+$", a))])
    error_message = "Every target_topic_arns entry must be an SNS topic ARN (arn:<partition>:sns:<region>:<account>:<name>)."
  }
}

variable "target_function_arns" {
  description = "Lambda functions the schedules may invoke (the self-healing pattern's redrive to the failed function)."
  type        = list(string)
  default     = []
  nullable    = false

  validation {
    condition     = alltrue([for a in var.target_function_arns : can(regex("^arn:aws[a-z-]*:lambda:[a-z0-9-]+:[0-9]{12}:function:[A-Za-z0-9_-]+(:[A-Za-z0-9$_-]+)?$", a))])
    error_message = "Every target_function_arns entry must be a Lambda function ARN (arn:<partition>:lambda:<region>:<account>:function:<name>[:<qualifier>])."
  }
}

variable "kms_key_arns" {
  description = "KMS keys of encrypted targets: the role gets kms:GenerateDataKey and kms:Decrypt on exactly these."
  type        = list(string)
  default     = []
  nullable    = false

  validation {
    condition     = alltrue([for a in var.kms_key_arns : can(regex("^arn:aws[a-z-]*:kms:[a-z0-9-]+:[0-9]{12}:key/[A-Za-z0-9-]+$", a))])
    error_message = "Every kms_key_arns entry must be a KMS key ARN (arn:<partition>:kms:<region>:<account>:key/<id>)."
  }
}

variable "permissions_boundary_arn" {
  description = "Optional permissions boundary for the execution role."
  type        = string
  default     = null
}

variable "tags" {
  description = "Tags for every taggable resource."
  type        = map(string)
  default     = {}
  nullable    = false
}
