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
  description = "With aws_endpoint_url set: AWS_ENDPOINT_URL in Terraform's environment already points every service at that emulator, so the provider gets no endpoints block."
  type        = bool
  default     = false
  nullable    = false
}

variable "name" {
  description = "Base name of the example's resources (the stream, the function, the queues)."
  type        = string
  default     = "orders-stream-example"
  nullable    = false
}

variable "function_timeout" {
  description = "Timeout of the function in seconds (the retry queue's visibility timeout is 6 x this)."
  type        = number
  default     = 30
  nullable    = false

  validation {
    condition     = floor(var.function_timeout) == var.function_timeout && var.function_timeout >= 1 && var.function_timeout <= 900
    error_message = "function_timeout must be a whole number of seconds from 1 to 900."
  }
}

variable "ordering" {
  description = "`unordered` (a failed order is retried through the retry queue while its shard goes on) or `blocking` (its shard waits for it)."
  type        = string
  default     = "unordered"
  nullable    = false
}

variable "blocking_twin" {
  description = "Also deploy a twin stream `<name>-blocking` and its consumer with ordering `blocking` (Lambda's native behaviour), to compare the two side by side (`serverless-retry demo stream` does)."
  type        = bool
  default     = false
  nullable    = false
}

variable "package" {
  description = "Path of the example's zip (serverless_retry + stream_example); null uses dist/examples/stream-retry.zip."
  type        = string
  default     = null
}

variable "environment" {
  description = "Extra environment for the function, e.g. SERVERLESS_RETRY_CLOCK_SCALE / SERVERLESS_RETRY_CLOCK_EPOCH under the local emulator."
  type        = map(string)
  default     = {}
  nullable    = false
}

variable "tags" {
  description = "Tags for every taggable resource."
  type        = map(string)
  default     = { project = "serverless-retry", example = "stream-retry" }
  nullable    = false
}
