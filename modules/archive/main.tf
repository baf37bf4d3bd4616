# The dead set of a deployment: an S3 bucket (made here, or yours) and an archiver Lambda draining each
# terminal queue into it on arrival (docs/archive.md). A message leaves its queue only once its record
# is written, so the queues become buffers and the archive is where given-up work lives until
# expiration_days.

data "aws_partition" "current" {}

data "aws_region" "current" {}

data "aws_caller_identity" "current" {}

locals {
  create_bucket = var.bucket == null
  partition     = data.aws_partition.current.partition
  made_bucket   = "${var.name}-archive-${data.aws_caller_identity.current.account_id}-${data.aws_region.current.name}"
  bucket_name   = local.create_bucket ? local.made_bucket : var.bucket.name
  # A bucket's ARN is its name in the partition (no region, no account), so it is known at plan time.
  bucket_arn      = local.create_bucket ? "arn:${local.partition}:s3:::${local.made_bucket}" : coalesce(var.bucket.arn, "arn:${local.partition}:s3:::${var.bucket.name}")
  bucket_key      = local.create_bucket ? var.kms_key_arn : try(var.bucket.kms_key_arn, null)
  dead_prefix     = "${var.prefix}dead/"
  dead_objects    = "${local.bucket_arn}/${local.dead_prefix}*"
  payload_objects = "${local.bucket_arn}/${var.prefix}payloads/*" # the consumer's claim checks (modules/consumer archive input)

  # The mappings by a key known at plan time (queue ARNs may not be), so that reordering sources keeps them.
  sources = { for i, s in var.sources : coalesce(s.key, "${s.place}-${i}") => s }

  function_name = "${var.name}-archiver"
  archive_sources = jsonencode({
    for s in var.sources : s.queue_arn => { place = s.place, source_queue_arn = s.source_queue_arn, deployment = var.name }
  })
  environment = {
    SERVERLESS_RETRY_ARCHIVE_BUCKET  = local.bucket_name
    SERVERLESS_RETRY_ARCHIVE_PREFIX  = var.prefix
    SERVERLESS_RETRY_ARCHIVE_SOURCES = local.archive_sources
    POWERTOOLS_SERVICE_NAME          = local.function_name
    POWERTOOLS_LOG_LEVEL             = var.log_level
  }
  # Lambda's quota: 4 KB for all environment variables, names and values together.
  environment_bytes = sum([for k, v in local.environment : length(k) + length(v)])

  lifecycle_note = local.create_bucket ? null : join(" ", [
    "Your bucket ${local.bucket_name} keeps every archived record until you delete it: add a lifecycle rule",
    "with filter prefix \"${local.dead_prefix}\" and expiration after ${var.expiration_days} days",
    "(and noncurrent version expiration if it is versioned), e.g. aws s3api put-bucket-lifecycle-configuration",
    "--bucket ${local.bucket_name} with Rules=[{ID=serverless-retry-dead,Status=Enabled,Filter={Prefix=${local.dead_prefix}},Expiration={Days=${var.expiration_days}}}]",
    "merged into its existing rules (the call replaces them all).",
  ])
}

# --- the bucket (only without var.bucket): modules/private-bucket -------------------------------------

module "bucket" {
  source = "../private-bucket"
  count  = local.create_bucket ? 1 : 0

  bucket = {
    name        = local.made_bucket
    too_long    = "shorten name, or bring your own bucket."
    kms_key_arn = var.kms_key_arn
    # Versioned: a discard (DeleteObject) or a redrive mark (a conditional overwrite) leaves the previous
    # record as a noncurrent version for noncurrent_version_expiration_days, so an operator's mistake can
    # be undone. Conditional writes work the same on a versioned bucket (If-None-Match sees the current
    # version), and the lifecycle expires the noncurrent versions and the delete markers too.
    versioning      = true
    require_tls_1_2 = var.require_tls_1_2
  }
  expiring_rules = [
    # The dead set's retention: a record expires expiration_days after it was written (a redrive mark
    # rewrites it, which starts its days again), then its noncurrent versions after theirs.
    {
      id              = "expire-dead"
      prefix          = local.dead_prefix
      days            = var.expiration_days
      noncurrent_days = var.noncurrent_version_expiration_days
    },
    # A discarded record leaves a delete marker; once its versions have expired, the marker goes too.
    # S3 refuses ExpiredObjectDeleteMarker in a rule that also has expiration days.
    {
      id                           = "remove-expired-delete-markers"
      prefix                       = local.dead_prefix
      expired_object_delete_marker = true
    },
  ]
  tags = var.tags
}

# The bucket's resources moved into modules/private-bucket (shared with self-healing's failure records).
moved {
  from = aws_s3_bucket.this[0]
  to   = module.bucket[0].aws_s3_bucket.this
}

moved {
  from = aws_s3_bucket_public_access_block.this[0]
  to   = module.bucket[0].aws_s3_bucket_public_access_block.this
}

moved {
  from = aws_s3_bucket_ownership_controls.this[0]
  to   = module.bucket[0].aws_s3_bucket_ownership_controls.this
}

moved {
  from = aws_s3_bucket_server_side_encryption_configuration.this[0]
  to   = module.bucket[0].aws_s3_bucket_server_side_encryption_configuration.this
}

moved {
  from = aws_s3_bucket_versioning.this[0]
  to   = module.bucket[0].aws_s3_bucket_versioning.this[0]
}

moved {
  from = aws_s3_bucket_lifecycle_configuration.this[0]
  to   = module.bucket[0].aws_s3_bucket_lifecycle_configuration.this
}

moved {
  from = aws_s3_bucket_policy.this[0]
  to   = module.bucket[0].aws_s3_bucket_policy.this
}

# --- the archiver ---------------------------------------------------------------------------------------

module "archiver" {
  source = "../function"

  function = {
    name                    = local.function_name
    description             = "serverless-retry archiver ${var.name}: writes each terminal message to s3://${local.bucket_name}/${local.dead_prefix}, then acknowledges it."
    handler                 = "serverless_retry.handlers.archive.handler"
    runtime                 = var.runtime
    architectures           = var.architectures
    memory_size             = var.memory_size
    timeout                 = var.timeout
    environment_kms_key_arn = var.environment_kms_key_arn
    environment             = local.environment
    vpc                     = var.vpc
  }
  code = { package = var.package, s3_package = var.s3_package, layers = var.layers }
  logs = { retention_days = var.log_retention_days, kms_key_arn = var.logs_kms_key_arn }
  role = {
    arn                      = var.role_arn
    description              = "serverless-retry archiver ${var.name}: drains the terminal queues into s3://${local.bucket_name}/${local.dead_prefix}."
    permissions_boundary_arn = var.permissions_boundary_arn
    policy_name              = "serverless-retry-archiver"
    policy_json              = data.aws_iam_policy_document.archiver.json
    inputs                   = "role_arn"
  }
  tags = var.tags
}

resource "aws_lambda_event_source_mapping" "this" {
  for_each = local.sources

  event_source_arn = each.value.queue_arn
  function_name    = module.archiver.function_arn
  batch_size       = var.batch_size
  # A failed write returns only that message: it stays in its queue and is archived on a later receive.
  function_response_types = ["ReportBatchItemFailures"]

  scaling_config {
    maximum_concurrency = var.maximum_concurrency
  }

  tags = var.tags

  lifecycle {
    precondition {
      # Lambda's advice for SQS event sources: a visibility timeout of at least 6 x the function's
      # timeout, so a message whose invocation is retried after throttling is not received twice.
      condition     = coalesce(each.value.visibility_timeout_seconds, 6 * var.timeout) >= 6 * var.timeout
      error_message = "sources[${each.key}]: the queue's visibility timeout (${coalesce(each.value.visibility_timeout_seconds, 0)} s) is under 6 x the archiver's timeout (${6 * var.timeout} s), Lambda's advice for SQS event sources: raise the queue's visibility timeout or lower timeout."
    }

    precondition {
      condition     = local.environment_bytes <= 4096
      error_message = "The archiver's environment (${local.environment_bytes} bytes, mostly SERVERLESS_RETRY_ARCHIVE_SOURCES) exceeds Lambda's 4 KB: archive fewer queues per module instance."
    }
  }
}
