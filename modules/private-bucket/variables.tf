variable "bucket" {
  description = "The bucket: its name (at most 63 characters), what the name-length error tells the caller's user to do (too_long), an optional customer managed key for SSE-KMS (SSE-S3 without one), versioning, and require_tls_1_2 (a second deny for TLS older than 1.2)."
  type = object({
    name            = string
    too_long        = string
    kms_key_arn     = optional(string)
    versioning      = bool
    require_tls_1_2 = optional(bool, false)
  })
}

variable "expiring_rules" {
  description = "The lifecycle rules before the one that aborts incomplete uploads anywhere: each by id, for objects under prefix, expiring them after days or, with expired_object_delete_marker, removing the delete markers whose versions have expired; noncurrent_days expires noncurrent versions. Every rule aborts incomplete multipart uploads after a day."
  type = list(object({
    id                           = string
    prefix                       = string
    days                         = optional(number)
    expired_object_delete_marker = optional(bool)
    noncurrent_days              = optional(number)
  }))
}

variable "tags" {
  description = "Tags for the bucket."
  type        = map(string)
  default     = {}
}
