variable "name" {
  description = "Name of the layer; each publish adds a version under it."
  type        = string

  validation {
    condition     = can(regex("^[A-Za-z0-9_-]{1,140}$", var.name))
    error_message = "name must be 1-140 letters, digits, hyphens and underscores (Lambda's rule for layer names)."
  }
}

variable "package" {
  description = "Path of the layer zip (its Python code under `python/`; `serverless-retry package` builds one). Give exactly one of package and s3_package; a zip above 50 MB must go through S3 (Lambda's limit for a direct upload)."
  type        = string
  default     = null

  validation {
    condition     = var.package == null ? true : endswith(var.package, ".zip")
    error_message = "package must be the path of a .zip file, or null with s3_package."
  }

  validation {
    condition     = var.package == null ? true : fileexists(var.package)
    error_message = "package ${coalesce(var.package, "null")} does not exist: build it with serverless-retry package, or give the path of your own zip (or set s3_package instead)."
  }
}

variable "s3_package" {
  description = "The layer zip as an S3 object instead of package: bucket (in the layer's region), key, object_version (optional) and source_code_hash (optional, base64 SHA-256 of the zip: a new one publishes a new version)."
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
    error_message = "s3_package.source_code_hash must be the base64-encoded SHA-256 of the zip (44 characters, as filebase64sha256() gives), or null."
  }
}

variable "description" {
  description = "Description of the layer version (at most 256 characters)."
  type        = string
  default     = "serverless_retry and its dependencies"
  nullable    = false

  validation {
    condition     = length(var.description) <= 256
    error_message = "description must be at most 256 characters (Lambda's limit)."
  }
}

variable "compatible_runtimes" {
  description = "Runtimes the layer is for: the Python versions its native code was built for."
  type        = list(string)
  default     = ["python3.11", "python3.12", "python3.13"]
  nullable    = false

  validation {
    condition     = length(var.compatible_runtimes) >= 1 && length(var.compatible_runtimes) <= 15 && alltrue([for r in var.compatible_runtimes : can(regex("^python3\\.[0-9]+$", r))])
    error_message = "compatible_runtimes must list 1 to 15 Python runtimes (python3.<minor>, e.g. python3.12): the layer holds Python packages."
  }
}

variable "compatible_architectures" {
  description = "Instruction sets the layer is for: both (the default) when its native code is there for both (or it has none); [\"arm64\"] or [\"x86_64\"] for a layer built for one (serverless-retry package builds for either)."
  type        = list(string)
  default     = ["arm64", "x86_64"]
  nullable    = false

  validation {
    condition     = length(var.compatible_architectures) >= 1 && length(var.compatible_architectures) == length(distinct(var.compatible_architectures)) && alltrue([for a in var.compatible_architectures : contains(["arm64", "x86_64"], a)])
    error_message = "compatible_architectures must hold arm64, x86_64 or both, each once, got ${jsonencode(var.compatible_architectures)}."
  }
}

variable "license_info" {
  description = "License of the layer's content, as an SPDX identifier or a URL (at most 512 characters), or null. serverless_retry is Apache-2.0; its dependencies carry their own."
  type        = string
  default     = null

  validation {
    condition     = var.license_info == null ? true : length(var.license_info) <= 512
    error_message = "license_info must be at most 512 characters (Lambda's limit)."
  }
}

variable "keep_replaced_versions" {
  description = "Keep a layer version when a new one replaces it (Terraform forgets it instead of deleting it). Functions keep running on a deleted version, but a configuration that names it can no longer be created; keep them while other stacks still point at old versions."
  type        = bool
  default     = false
  nullable    = false
}
