# A private S3 bucket as the modules of this repository make one: public access blocked, ACLs off,
# encrypted (SSE-S3, or SSE-KMS with a Bucket Key), optionally versioned, TLS-only, and a lifecycle of
# the caller's expiring rules plus one that aborts incomplete uploads anywhere in the bucket.

resource "aws_s3_bucket" "this" {
  #checkov:skip=CKV_AWS_18:Server access logs would need a second bucket per bucket; each caller's bucket has one writer (the archiver, or Lambda's destination records) that names every key it writes, and CloudTrail data events cover reads where an audit needs them.
  #checkov:skip=CKV_AWS_144:Cross-region replication doubles the cost of records that are copies of failed messages kept for a bounded time (the callers' expiration days); replicate the bucket yourself where a second region is required.
  #checkov:skip=CKV2_AWS_62:A caller whose objects someone reacts to configures the notification itself (self-healing's failure records notify the failure queue); the archive's have no consumer: the archiver logs each write and the alarms watch its queues.
  #checkov:skip=CKV_AWS_145:SSE-S3 by default (no key policy to manage, no KMS request per PUT); kms_key_arn gives SSE-KMS with a customer managed key and a Bucket Key. The AWS managed key would add cost and no control (its key policy cannot be changed).
  #checkov:skip=CKV_AWS_21:Versioning is the caller's choice (versioning): the archive's is on; self-healing's failure records are each written once under a unique key, so theirs is off unless failure_records.versioning asks for it.
  bucket = var.bucket.name
  tags   = var.tags

  lifecycle {
    precondition {
      condition     = length(var.bucket.name) <= 63
      error_message = "The bucket name ${var.bucket.name} is longer than S3's 63 characters: ${var.bucket.too_long}"
    }
  }
}

resource "aws_s3_bucket_public_access_block" "this" {
  bucket = aws_s3_bucket.this.id

  block_public_acls       = true
  block_public_policy     = true
  ignore_public_acls      = true
  restrict_public_buckets = true
}

# ACLs off: every object belongs to the bucket's account, whoever wrote it.
resource "aws_s3_bucket_ownership_controls" "this" {
  bucket = aws_s3_bucket.this.id

  rule {
    object_ownership = "BucketOwnerEnforced"
  }
}

resource "aws_s3_bucket_server_side_encryption_configuration" "this" {
  bucket = aws_s3_bucket.this.id

  rule {
    apply_server_side_encryption_by_default {
      sse_algorithm     = var.bucket.kms_key_arn == null ? "AES256" : "aws:kms"
      kms_master_key_id = var.bucket.kms_key_arn
    }
    # With KMS, one data key per bucket for a while instead of one KMS request per object.
    bucket_key_enabled = var.bucket.kms_key_arn != null
  }
}

resource "aws_s3_bucket_versioning" "this" {
  count  = var.bucket.versioning ? 1 : 0
  bucket = aws_s3_bucket.this.id

  versioning_configuration {
    status = "Enabled"
  }
}

resource "aws_s3_bucket_lifecycle_configuration" "this" {
  bucket = aws_s3_bucket.this.id

  # The caller's rules, in order: each expires what is under its prefix (after days, or the delete
  # markers whose versions are gone), and the noncurrent versions after noncurrent_days when given.
  dynamic "rule" {
    for_each = var.expiring_rules
    content {
      id     = rule.value.id
      status = "Enabled"

      filter {
        prefix = rule.value.prefix
      }

      expiration {
        days                         = rule.value.days
        expired_object_delete_marker = rule.value.expired_object_delete_marker
      }

      dynamic "noncurrent_version_expiration" {
        for_each = rule.value.noncurrent_days == null ? [] : [rule.value.noncurrent_days]
        content {
          noncurrent_days = noncurrent_version_expiration.value
        }
      }

      abort_incomplete_multipart_upload {
        days_after_initiation = 1
      }
    }
  }

  # Anything else in the bucket (the callers' writers make single PUTs; others may upload in parts).
  rule {
    id     = "abort-incomplete-uploads"
    status = "Enabled"

    filter {}

    abort_incomplete_multipart_upload {
      days_after_initiation = 1
    }
  }

  # S3 applies a lifecycle configuration to a versioned bucket's noncurrent versions only once
  # versioning is on.
  depends_on = [aws_s3_bucket_versioning.this]
}

data "aws_partition" "current" {}

locals {
  # A bucket's ARN is its name in the partition (no region, no account), so it is known at plan time.
  arn = "arn:${data.aws_partition.current.partition}:s3:::${var.bucket.name}"
  # TLS only (and at least 1.2 with require_tls_1_2): a deny for every principal, so no grant elsewhere
  # can open plain HTTP. Rendered here rather than by a data source so that its JSON is known at plan.
  policy = jsonencode({
    Version = "2012-10-17"
    Statement = concat(
      [{
        Sid       = "DenyInsecureTransport"
        Effect    = "Deny"
        Principal = "*"
        Action    = "s3:*"
        Resource  = [local.arn, "${local.arn}/*"]
        Condition = { Bool = { "aws:SecureTransport" = "false" } }
      }],
      var.bucket.require_tls_1_2 ? [{
        Sid       = "DenyTlsOlderThan12"
        Effect    = "Deny"
        Principal = "*"
        Action    = "s3:*"
        Resource  = [local.arn, "${local.arn}/*"]
        Condition = { NumericLessThan = { "s3:TlsVersion" = "1.2" } }
      }] : [],
    )
  })
}

resource "aws_s3_bucket_policy" "this" {
  bucket = aws_s3_bucket.this.id
  policy = local.policy

  # S3 refuses a policy on a bucket whose public access block is being changed at the same time.
  depends_on = [aws_s3_bucket_public_access_block.this]
}
