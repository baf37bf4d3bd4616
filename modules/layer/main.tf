# A Lambda layer version, published from a local zip or an S3 object: typically serverless_retry and
# its dependencies (built by `serverless-retry package`, `python/` layout), so that the functions'
# own zips hold only their code. Its `arn` output goes into the other modules' `layers` input.
resource "aws_lambda_layer_version" "this" {
  layer_name  = var.name
  description = var.description

  filename          = var.package
  s3_bucket         = try(var.s3_package.bucket, null)
  s3_key            = try(var.s3_package.key, null)
  s3_object_version = try(var.s3_package.object_version, null)
  # A new zip (or the hash given for an S3 object) publishes a new version.
  source_code_hash = var.package != null ? filebase64sha256(var.package) : try(var.s3_package.source_code_hash, null)

  compatible_runtimes      = var.compatible_runtimes
  compatible_architectures = var.compatible_architectures
  license_info             = var.license_info

  # A replaced version is deleted unless kept; functions that use it go on running, but no new
  # function configuration can refer to it.
  skip_destroy = var.keep_replaced_versions

  lifecycle {
    precondition {
      condition     = (var.package == null) != (var.s3_package == null)
      error_message = "Give the layer's zip once: package (a local zip) or s3_package (an S3 object), not ${var.package == null ? "neither" : "both"}."
    }
  }
}
