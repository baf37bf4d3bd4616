variable "retry_policy" {
  description = <<-EOT
    The retry policy (reference: docs/retry-policy.md) as an HCL object or `jsondecode(file("policy.json"))`: budgets, a
    default backoff, and rules matched by error class name, HTTP status or RE2 message regex (first match
    wins). Unset (or null) fields take the Python defaults; a rule's backoff inherits every field it leaves
    unset from the policy's. Unknown fields are errors at any level. Taken as `any`, not a typed object(),
    so that a typo is not silently dropped by Terraform's type conversion (see the README).
  EOT
  type        = any
  default     = {}
  nullable    = false
}

variable "fifo" {
  description = "Whether the queue the policy retries into is a FIFO queue (it changes which transports are used, hence needs_scheduler and the delay bounds)."
  type        = bool
  default     = false
  nullable    = false
}

variable "fifo_order" {
  description = "FIFO only: `ordered` retries a failed message in place with the visibility timeout (its message group waits); `unordered` lets the retry leave its group through the Scheduler."
  type        = string
  default     = "ordered"
  nullable    = false

  validation {
    condition     = contains(["ordered", "unordered"], var.fifo_order)
    error_message = "fifo_order must be \"ordered\" (retry in place, the message group waits) or \"unordered\" (the retry leaves its group through the Scheduler), got \"${var.fifo_order}\"."
  }
}
