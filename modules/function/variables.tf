# A private module: the consumer, the scheduled-retry operator and both self-healing functions call it.
# Their own inputs carry the user-facing validation; these check what the function itself needs.

variable "function" {
  description = "The function: name (also the log group's /aws/lambda/<name> and the created role's name), description, handler, runtime settings, environment, tracing, VPC."
  type = object({
    name                    = string
    description             = string
    handler                 = string
    runtime                 = string
    architectures           = list(string)
    memory_size             = number
    timeout                 = number
    reserved_concurrency    = optional(number)
    environment             = optional(map(string), {})
    environment_kms_key_arn = optional(string)
    code_signing_config_arn = optional(string)
    tracing                 = optional(bool, false)
    vpc = optional(object({
      subnet_ids         = list(string)
      security_group_ids = list(string)
    }))
  })

  validation {
    condition     = can(regex("^[A-Za-z0-9_-]{1,64}$", var.function.name))
    error_message = "function.name must be 1-64 characters of letters, digits, hyphens and underscores (Lambda's rule for function names)."
  }
}

variable "code" {
  description = "The code: a local zip (package) or an S3 object (s3_package), exactly one, and the layers on top."
  type = object({
    package = optional(string)
    s3_package = optional(object({
      bucket           = string
      key              = string
      object_version   = optional(string)
      source_code_hash = optional(string)
    }))
    layers = optional(list(string), [])
  })
}

variable "logs" {
  description = "The function's log group: retention in days and an optional customer managed key."
  type = object({
    retention_days = number
    kms_key_arn    = optional(string)
  })
}

variable "role" {
  description = "The execution role: arn brings your own (nothing is created); otherwise the module creates one named after the function with policy_name holding policy_json (the caller's concerns) plus the function's own logs, traces and VPC network interfaces, and extra_statements in a policy `extra`. inputs names the caller's inputs in error messages."
  type = object({
    arn                      = optional(string)
    description              = optional(string)
    permissions_boundary_arn = optional(string)
    policy_name              = string
    policy_json              = string
    extra_statements = optional(list(object({
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
    inputs = optional(string, "role_arn and policy_statements")
  })

  validation {
    condition     = alltrue([for s in var.role.extra_statements : alltrue([for a in s.actions : !can(regex("(^\\*$|:\\*$)", a))])])
    error_message = "role.extra_statements: no action may be \"*\" or \"service:*\"."
  }
}

variable "tags" {
  description = "Tags for the function, its log group and its role."
  type        = map(string)
  default     = {}
  nullable    = false
}
