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
  description = "Base name of the example's resources."
  type        = string
  default     = "orders-example"
  nullable    = false
}

variable "function_timeout" {
  description = "Timeout of the consumer function in seconds. The queue's visibility timeout is 6 x this, so local tests use a small value to see failed batches come back quickly."
  type        = number
  default     = 30
  nullable    = false

  validation {
    condition     = floor(var.function_timeout) == var.function_timeout && var.function_timeout >= 1 && var.function_timeout <= 900
    error_message = "function_timeout must be a whole number of seconds from 1 to 900."
  }
}

variable "package" {
  description = "Path of the example's zip (serverless_retry + orders_example); null uses dist/examples/scheduled-retry.zip, which `./build.sh package` builds."
  type        = string
  default     = null
}

variable "environment" {
  description = "Extra environment for the consumer, e.g. SERVERLESS_RETRY_CLOCK_SCALE / SERVERLESS_RETRY_CLOCK_EPOCH under the local emulator."
  type        = map(string)
  default     = {}
  nullable    = false
}

variable "monitoring" {
  description = "Create the CloudWatch alarms and dashboard of modules/monitoring."
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
  default     = { project = "serverless-retry", example = "scheduled-retry" }
  nullable    = false
}

variable "archive_enabled" {
  description = "Keep what the consumer gives up on in S3 (modules/archive): an archiver drains the retry-exhausted queue and the DLQ into a bucket as messages arrive (kept 180 days, findable and redrivable with `serverless-retry inspect|redrive --archive`), the consumer puts envelopes too large for the exhausted queue there, and monitoring's no-archive expiry alarms are not made. false: those messages stay in SQS for the queues' retention (14 days), and an expiry alarm warns before SQS deletes them."
  type        = bool
  default     = false
  nullable    = false
}
