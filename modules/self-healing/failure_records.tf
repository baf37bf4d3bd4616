# Failure records in S3 (sources with on_failure = "s3"; docs/self-healing-contract.md): Lambda writes
# each record whole as an object under aws/lambda/async/<function-name>/ (a record too large for the
# failure queue would be lost there), the bucket's ObjectCreated notification puts a small S3 event on
# the failure queue, and the enrichment and the redrive read the record back from the bucket.
locals {
  s3_source_keys = toset([for k in keys(var.sources) : k if try(coalesce(try(var.sources[k].on_failure, null), "queue"), "queue") == "s3"])
  records_on     = length(local.s3_source_keys) > 0
  create_records = local.records_on && var.failure_records.bucket == null

  # A bucket's ARN is its name in the partition, so every scope below is known at plan time.
  records_bucket_name = coalesce(var.failure_records.bucket, "${var.name}-failure-records-${local.account}-${local.region}")
  records_bucket_arn  = "arn:${local.partition}:s3:::${local.records_bucket_name}"
  # Lambda's fixed key layout: aws/lambda/async/<function-name>/YYYY/MM/DD/YYYY-MM-DDTHH.MM.SS-<uuid>.
  records_prefix = "aws/lambda/async/"
  record_prefixes = {
    for k in local.s3_source_keys : k => "${local.records_prefix}${local.sources[k].function_name}/"
  }
  record_objects = [for k in sort(tolist(local.s3_source_keys)) : "${local.records_bucket_arn}/${local.record_prefixes[k]}*"]
  records_kms    = local.records_on && var.failure_records.kms_key_arn != null ? [var.failure_records.kms_key_arn] : []
}

# --- the bucket (only without failure_records.bucket): modules/private-bucket ---------------------------

module "failure_records" {
  source = "../private-bucket"
  count  = local.create_records ? 1 : 0

  bucket = {
    name        = local.records_bucket_name
    too_long    = "shorten name, or bring your own bucket (failure_records.bucket)."
    kms_key_arn = var.failure_records.kms_key_arn
    versioning  = var.failure_records.versioning
  }
  # A record is needed until its last redrive and, exhausted, as long as its pointer waits in the
  # retry-exhausted queue: never shorter than that queue keeps a message (its precondition, main.tf).
  expiring_rules = [{
    id              = "expire-failure-records"
    prefix          = local.records_prefix
    days            = var.failure_records.expiration_days
    noncurrent_days = var.failure_records.versioning ? var.failure_records.noncurrent_version_expiration_days : null
  }]
  tags = var.tags
}

# The bucket's resources moved into modules/private-bucket (shared with modules/archive).
moved {
  from = aws_s3_bucket.failure_records[0]
  to   = module.failure_records[0].aws_s3_bucket.this
}

moved {
  from = aws_s3_bucket_public_access_block.failure_records[0]
  to   = module.failure_records[0].aws_s3_bucket_public_access_block.this
}

moved {
  from = aws_s3_bucket_ownership_controls.failure_records[0]
  to   = module.failure_records[0].aws_s3_bucket_ownership_controls.this
}

moved {
  from = aws_s3_bucket_server_side_encryption_configuration.failure_records[0]
  to   = module.failure_records[0].aws_s3_bucket_server_side_encryption_configuration.this
}

moved {
  from = aws_s3_bucket_versioning.failure_records[0]
  to   = module.failure_records[0].aws_s3_bucket_versioning.this[0]
}

moved {
  from = aws_s3_bucket_lifecycle_configuration.failure_records[0]
  to   = module.failure_records[0].aws_s3_bucket_lifecycle_configuration.this
}

moved {
  from = aws_s3_bucket_policy.failure_records[0]
  to   = module.failure_records[0].aws_s3_bucket_policy.this
}

# --- the notification: a new record -> an S3 event on the failure queue --------------------------------

# Concern: only this bucket of this account may send to the failure queue as S3 (confused deputy).
data "aws_iam_policy_document" "failure_queue_from_s3" {
  count = local.records_on ? 1 : 0

  statement {
    sid     = "S3SendsFailureRecordEvents"
    actions = ["sqs:SendMessage"]
    # The ARN AWS gives the queue: the queue module takes this document as an input.
    resources = ["${local.queue_arn_prefix}${local.names.failure_queue}"]

    principals {
      type        = "Service"
      identifiers = ["s3.amazonaws.com"]
    }

    condition {
      test     = "ArnEquals"
      variable = "aws:SourceArn"
      values   = [local.records_bucket_arn]
    }

    condition {
      test     = "StringEquals"
      variable = "aws:SourceAccount"
      values   = [local.account]
    }
  }
}

resource "aws_s3_bucket_notification" "failure_records" {
  count  = local.records_on && var.failure_records.manage_notifications ? 1 : 0
  bucket = local.create_records ? module.failure_records[0].id : local.records_bucket_name

  dynamic "queue" {
    for_each = local.record_prefixes
    content {
      id            = "serverless-retry-${var.name}-${queue.key}"
      queue_arn     = module.failure_queue.queue_arn
      events        = ["s3:ObjectCreated:*"]
      filter_prefix = queue.value
    }
  }

  # S3 checks that it may send to the queue (a test event) when the notification is configured.
  depends_on = [module.failure_queue]
}

# --- IAM ------------------------------------------------------------------------------------------------

# Concern: Lambda writes an S3 source's records with the function's own role: PutObject under that
# function's prefix only, ListBucket as Lambda's S3 destination requires.
data "aws_iam_policy_document" "source_s3" {
  for_each = local.s3_source_keys

  statement {
    sid       = "WriteFailureRecords"
    actions   = ["s3:PutObject"]
    resources = ["${local.records_bucket_arn}/${local.record_prefixes[each.key]}*"]
  }

  statement {
    sid       = "ListFailureRecordsBucket"
    actions   = ["s3:ListBucket"]
    resources = [local.records_bucket_arn]
  }

  dynamic "statement" {
    for_each = local.records_kms
    content {
      sid       = "EncryptFailureRecords"
      actions   = ["kms:GenerateDataKey"]
      resources = [statement.value]
    }
  }
}

# Concern: the enrichment reads each record its S3 event names; the redrive reads a payload back.
data "aws_iam_policy_document" "read_records" {
  dynamic "statement" {
    for_each = local.records_on ? [local.record_objects] : []
    content {
      sid       = "ReadFailureRecords"
      actions   = ["s3:GetObject"]
      resources = statement.value
    }
  }

  dynamic "statement" {
    for_each = local.records_kms
    content {
      sid       = "DecryptFailureRecords"
      actions   = ["kms:Decrypt"]
      resources = [statement.value]
    }
  }
}
