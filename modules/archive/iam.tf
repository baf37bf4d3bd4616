# The archiver may read and delete from exactly its source queues and write exactly under
# <prefix>dead/ of the bucket; nothing else (its logs, traces and network interfaces are
# modules/function's).

locals {
  source_queue_arns = sort([for s in var.sources : s.queue_arn])
  source_keys       = sort(distinct(compact([for s in var.sources : s.kms_key_arn])))
  redrive_targets   = sort(distinct(compact([for s in var.sources : s.source_queue_arn])))
}

# Concern: the event source mapping receives from the terminal queues as the function's role, and
# the function acknowledges (deletes) what it archived.
data "aws_iam_policy_document" "drain" {
  statement {
    sid = "DrainTerminalQueues"
    actions = [
      "sqs:ReceiveMessage",
      "sqs:DeleteMessage",
      "sqs:GetQueueAttributes",
      "sqs:ChangeMessageVisibility",
    ]
    resources = local.source_queue_arns
  }
}

# Concern: writing records. PutObject only (a 412 on If-None-Match means already archived, so nothing
# is read back), and only under <prefix>dead/.
data "aws_iam_policy_document" "write" {
  statement {
    sid       = "WriteDeadRecords"
    actions   = ["s3:PutObject"]
    resources = [local.dead_objects]
  }
}

# Concern: claim checks. A pointer's payload (the consumer wrote it under <prefix>payloads/) is read
# before its record is written, so the record holds the whole original a redrive sends.
data "aws_iam_policy_document" "payloads" {
  statement {
    sid       = "ReadClaimCheckPayloads"
    actions   = ["s3:GetObject"]
    resources = [local.payload_objects]
  }
}

# Concern: the keys. An SSE-KMS bucket needs GenerateDataKey for a PUT (Decrypt only for multipart
# uploads, which the archiver does not make, but S3's guide lists both for uploads); an SSE-KMS
# queue needs Decrypt to receive.
data "aws_iam_policy_document" "kms" {
  dynamic "statement" {
    for_each = local.bucket_key == null ? [] : [local.bucket_key]
    content {
      sid       = "EncryptRecords"
      actions   = ["kms:GenerateDataKey", "kms:Decrypt"]
      resources = [statement.value]
    }
  }

  dynamic "statement" {
    for_each = length(local.source_keys) == 0 ? [] : [local.source_keys]
    content {
      sid       = "DecryptTerminalQueues"
      actions   = ["kms:Decrypt"]
      resources = statement.value
    }
  }
}

data "aws_iam_policy_document" "archiver" {
  source_policy_documents = [
    data.aws_iam_policy_document.drain.json,
    data.aws_iam_policy_document.write.json,
    data.aws_iam_policy_document.payloads.json,
    data.aws_iam_policy_document.kms.json,
  ]
}

# --- what an operator needs (an output; attach it to your on-call role) -------------------------------

# Concern: listing the archive, and only under the prefix.
data "aws_iam_policy_document" "operator_list" {
  statement {
    sid       = "ListArchive"
    actions   = ["s3:ListBucket"]
    resources = [local.bucket_arn]

    condition {
      test     = "StringLike"
      variable = "s3:prefix"
      values   = ["${var.prefix}*"]
    }
  }
}

# Concern: reading (inspect), marking (redrive rewrites a record) and discarding records.
data "aws_iam_policy_document" "operator_records" {
  statement {
    sid       = "ReadMarkDiscardRecords"
    actions   = ["s3:GetObject", "s3:PutObject", "s3:DeleteObject"]
    resources = [local.dead_objects]
  }

  # A queue redrive or inspect reads a claim-check pointer through to its payload.
  statement {
    sid       = "ReadClaimCheckPayloads"
    actions   = ["s3:GetObject"]
    resources = [local.payload_objects]
  }
}

# Concern: sending a redriven message back where it came from, and the keys on the way. The CLI turns
# a record's source_queue_arn into a URL with GetQueueUrl first. The sources' keys are the
# deployment's (modules/queue and modules/self-healing encrypt all their queues with one).
data "aws_iam_policy_document" "operator_redrive" {
  dynamic "statement" {
    for_each = length(local.redrive_targets) == 0 ? [] : [local.redrive_targets]
    content {
      sid = "RedriveToSourceQueues"
      # GetQueueAttributes: the destination's MaximumMessageSize, so an envelope that fits keeps its history.
      actions   = ["sqs:GetQueueAttributes", "sqs:GetQueueUrl", "sqs:SendMessage"]
      resources = statement.value
    }
  }

  dynamic "statement" {
    for_each = length(compact(concat([local.bucket_key], local.source_keys))) == 0 ? [] : [sort(distinct(compact(concat([local.bucket_key], local.source_keys))))]
    content {
      sid       = "UseArchiveAndQueueKeys"
      actions   = ["kms:Decrypt", "kms:GenerateDataKey"]
      resources = statement.value
    }
  }
}

data "aws_iam_policy_document" "operator" {
  source_policy_documents = [
    data.aws_iam_policy_document.operator_list.json,
    data.aws_iam_policy_document.operator_records.json,
    data.aws_iam_policy_document.operator_redrive.json,
  ]
}
