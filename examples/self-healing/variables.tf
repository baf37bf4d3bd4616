variable "aws_region" {
  description = "Region to deploy to."
  type        = string
  default     = "us-east-1"
  nullable    = false
}

variable "aws_endpoint_url" {
  description = "Endpoint of a local AWS emulator (e.g. http://127.0.0.1:5000): every service this example uses is pointed at it, with dummy credentials. null (the default) deploys to real AWS with your usual credentials."
  type        = string
  default     = null

  validation {
    condition     = var.aws_endpoint_url == null ? true : can(regex("^https?://[^/\\s]+/?$", var.aws_endpoint_url))
    error_message = "aws_endpoint_url must be null (real AWS) or a base URL such as http://127.0.0.1:5000."
  }
}

variable "aws_endpoint_url_in_environment" {
  description = "With aws_endpoint_url set: AWS_ENDPOINT_URL in Terraform's environment already points every service at that emulator (`serverless-retry local apply` and the demo set both), so the provider gets no endpoints block. AWS provider 5.x checks that block at ~2 s of CPU each time a Terraform command configures the provider."
  type        = bool
  default     = false
  nullable    = false
}

variable "name" {
  description = "Base name of the example's resources: topics `<name>-orders` and `<name>-invoices`, functions `<name>-charge`, `<name>-invoice`, `<name>-audit`, and the self-healing module's `<name>-*`."
  type        = string
  default     = "heal-example"
  nullable    = false

  validation {
    # The self-healing module's limit (its rule names are "<name>-budget-<source>").
    condition     = can(regex("^[A-Za-z0-9_-]{1,32}$", var.name))
    error_message = "name must be 1-32 characters of letters, digits, hyphens and underscores."
  }
}

variable "package" {
  description = "Path of the example's zip (serverless_retry + self_healing_example); null uses dist/examples/self-healing.zip, which `./build.sh package` builds. The module's enrichment and redrive functions run from it too."
  type        = string
  default     = null
}

variable "function_timeout" {
  description = "Timeout in seconds of the example's three functions."
  type        = number
  default     = 10
  nullable    = false

  validation {
    condition     = floor(var.function_timeout) == var.function_timeout && var.function_timeout >= 1 && var.function_timeout <= 900
    error_message = "function_timeout must be a whole number of seconds from 1 to 900."
  }
}

variable "redrive_to" {
  description = "`function` (default): a retry invokes only the function that failed, so the audit subscriber sees each order once. `topic`: a retry is re-published to the orders topic, and the audit subscriber sees it again (the reference design's behaviour, with the original subject and attributes)."
  type        = string
  default     = "function"
  nullable    = false

  validation {
    condition     = contains(["function", "topic"], var.redrive_to)
    error_message = "redrive_to must be \"function\" or \"topic\"."
  }
}

variable "environment" {
  description = "Extra environment for every function of the example (the three functions and the module's enrichment and redrive), e.g. SERVERLESS_RETRY_CLOCK_SCALE / SERVERLESS_RETRY_CLOCK_EPOCH under the local emulator."
  type        = map(string)
  default     = {}
  nullable    = false
}

variable "monitoring" {
  description = "Create the CloudWatch alarms and the dashboard of modules/monitoring on the module's queues and functions."
  type        = bool
  default     = true
  nullable    = false
}

variable "alarm_actions" {
  description = "ARNs (e.g. SNS topics) the alarms notify when they fire and when they recover."
  type        = list(string)
  default     = []
  nullable    = false
}

variable "tags" {
  description = "Tags for every taggable resource."
  type        = map(string)
  default     = { project = "serverless-retry", example = "self-healing" }
  nullable    = false
}

variable "archive_enabled" {
  description = "Keep what the pattern gives up on in S3 (modules/archive): an archiver drains the retry-exhausted queue and the DLQs (failure, rules, redrive, schedule) into a bucket as records arrive (kept 180 days, findable and redrivable with `serverless-retry inspect|redrive --archive`), and monitoring's no-archive expiry alarms are not made. false: those records stay in SQS for the queues' retention (14 days), and an expiry alarm warns before SQS deletes them."
  type        = bool
  default     = false
  nullable    = false
}
