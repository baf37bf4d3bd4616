# Plan-level tests with the shared mock provider (tests/terraform/mocks): no credentials, no AWS calls.
# The mock renders every aws_iam_policy_document as an empty policy, so IAM is asserted on the
# documents' statements; the bucket policy is the module's own jsonencode and is asserted as JSON.

mock_provider "aws" {
  source = "../../tests/terraform/mocks"
}

variables {
  name    = "orders"
  package = "../../tests/terraform/fixtures/empty.zip"
  sources = [
    {
      queue_arn                  = "arn:aws:sqs:us-east-1:123456789012:orders-exhausted"
      place                      = "exhausted"
      source_queue_arn           = "arn:aws:sqs:us-east-1:123456789012:orders"
      kms_key_arn                = "arn:aws:kms:us-east-1:123456789012:key/1111aaaa-11aa-11aa-11aa-111111111111"
      visibility_timeout_seconds = 30
      key                        = "exhausted"
    },
    {
      queue_arn = "arn:aws:sqs:us-east-1:123456789012:orders-dlq"
      place     = "dlq"
    },
  ]
  tags = { team = "orders" }
}

run "module_made_bucket_is_private_encrypted_and_expires_dead_records" {
  command = plan

  assert {
    condition     = module.bucket[0].resources.bucket.bucket == "orders-archive-123456789012-us-east-1" && module.bucket[0].resources.bucket.tags == tomap({ team = "orders" })
    error_message = "The module makes <name>-archive-<account>-<region>, tagged: ${module.bucket[0].resources.bucket.bucket}"
  }

  assert {
    condition = (
      module.bucket[0].resources.public_access_block.block_public_acls &&
      module.bucket[0].resources.public_access_block.block_public_policy &&
      module.bucket[0].resources.public_access_block.ignore_public_acls &&
      module.bucket[0].resources.public_access_block.restrict_public_buckets
    )
    error_message = "All four public access blocks are on."
  }

  assert {
    condition     = one(module.bucket[0].resources.ownership_controls.rule).object_ownership == "BucketOwnerEnforced"
    error_message = "ACLs are disabled (BucketOwnerEnforced)."
  }

  assert {
    condition = [
      for r in module.bucket[0].resources.encryption.rule :
      [for d in r.apply_server_side_encryption_by_default : d.sse_algorithm][0]
    ] == ["AES256"]
    error_message = "Without kms_key_arn the bucket encrypts with SSE-S3."
  }

  assert {
    condition     = one(module.bucket[0].resources.versioning[0].versioning_configuration).status == "Enabled"
    error_message = "The bucket is versioned, so a discard or a redrive mark can be undone."
  }

  assert {
    condition = {
      for r in module.bucket[0].resources.lifecycle.rule : r.id => "${r.status} abort after ${one(r.abort_incomplete_multipart_upload).days_after_initiation}"
      } == {
      expire-dead                   = "Enabled abort after 1"
      remove-expired-delete-markers = "Enabled abort after 1"
      abort-incomplete-uploads      = "Enabled abort after 1"
    }
    error_message = "Three lifecycle rules, all enabled, each aborting incomplete multipart uploads after 1 day."
  }

  assert {
    condition = [
      for r in module.bucket[0].resources.lifecycle.rule :
      "${one(r.filter).prefix} current ${one(r.expiration).days} noncurrent ${one(r.noncurrent_version_expiration).noncurrent_days}" if r.id == "expire-dead"
    ] == ["serverless-retry/dead/ current 180 noncurrent 30"]
    error_message = "<prefix>dead/ expires after expiration_days (180), its noncurrent versions after 30."
  }

  assert {
    condition = [
      for r in module.bucket[0].resources.lifecycle.rule :
      "${one(r.filter).prefix} ${one(r.expiration).expired_object_delete_marker}" if r.id == "remove-expired-delete-markers"
    ] == ["serverless-retry/dead/ true"]
    error_message = "The delete markers a discard leaves under <prefix>dead/ go once their versions have expired."
  }

  assert {
    condition = jsondecode(module.bucket[0].resources.policy.policy) == {
      Version = "2012-10-17"
      Statement = [
        {
          Sid       = "DenyInsecureTransport"
          Effect    = "Deny"
          Principal = "*"
          Action    = "s3:*"
          Resource  = ["arn:aws:s3:::orders-archive-123456789012-us-east-1", "arn:aws:s3:::orders-archive-123456789012-us-east-1/*"]
          Condition = { Bool = { "aws:SecureTransport" = "false" } }
        },
        {
          Sid       = "DenyTlsOlderThan12"
          Effect    = "Deny"
          Principal = "*"
          Action    = "s3:*"
          Resource  = ["arn:aws:s3:::orders-archive-123456789012-us-east-1", "arn:aws:s3:::orders-archive-123456789012-us-east-1/*"]
          Condition = { NumericLessThan = { "s3:TlsVersion" = "1.2" } }
        },
      ]
    }
    error_message = "The bucket policy denies plain HTTP and TLS < 1.2 on the bucket and its objects: ${module.bucket[0].resources.policy.policy}"
  }

  assert {
    condition     = output.archive_location == "s3://orders-archive-123456789012-us-east-1/serverless-retry/" && output.lifecycle_note == null && output.bucket_created
    error_message = "The archive's location is s3://<bucket>/<prefix>; no lifecycle note for a bucket the module made."
  }
}

run "archiver_drains_each_source_with_batch_item_failures" {
  command = plan

  assert {
    condition = {
      for k, m in aws_lambda_event_source_mapping.this : k => "${m.event_source_arn} ${m.batch_size} ${jsonencode(m.function_response_types)} ${one(m.scaling_config).maximum_concurrency}"
      } == {
      exhausted = "arn:aws:sqs:us-east-1:123456789012:orders-exhausted 10 [\"ReportBatchItemFailures\"] 2"
      dlq-1     = "arn:aws:sqs:us-east-1:123456789012:orders-dlq 10 [\"ReportBatchItemFailures\"] 2"
    }
    error_message = "One mapping per source, keyed by sources[*].key or <place>-<index>, reporting batch item failures."
  }

  assert {
    condition     = module.archiver.function.handler == "serverless_retry.handlers.archive.handler" && module.archiver.function.function_name == "orders-archiver"
    error_message = "The archiver runs serverless_retry.handlers.archive.handler as <name>-archiver."
  }

  assert {
    condition = (
      module.archiver.function.environment[0].variables["SERVERLESS_RETRY_ARCHIVE_BUCKET"] == "orders-archive-123456789012-us-east-1" &&
      module.archiver.function.environment[0].variables["SERVERLESS_RETRY_ARCHIVE_PREFIX"] == "serverless-retry/" &&
      jsondecode(module.archiver.function.environment[0].variables["SERVERLESS_RETRY_ARCHIVE_SOURCES"]) == {
        "arn:aws:sqs:us-east-1:123456789012:orders-exhausted" = { place = "exhausted", source_queue_arn = "arn:aws:sqs:us-east-1:123456789012:orders", deployment = "orders" }
        "arn:aws:sqs:us-east-1:123456789012:orders-dlq"       = { place = "dlq", source_queue_arn = null, deployment = "orders" }
      }
    )
    error_message = "The archiver's environment is the archive contract: bucket, prefix, and each queue's place, redrive target and deployment."
  }
}

run "iam_is_scoped_to_the_sources_and_the_dead_prefix" {
  command = plan

  assert {
    condition = {
      for s in concat(data.aws_iam_policy_document.drain.statement, data.aws_iam_policy_document.write.statement, data.aws_iam_policy_document.kms.statement) :
      s.sid => jsonencode({ actions = sort(s.actions), resources = sort(s.resources) })
      } == {
      DrainTerminalQueues = jsonencode({
        actions   = ["sqs:ChangeMessageVisibility", "sqs:DeleteMessage", "sqs:GetQueueAttributes", "sqs:ReceiveMessage"]
        resources = ["arn:aws:sqs:us-east-1:123456789012:orders-dlq", "arn:aws:sqs:us-east-1:123456789012:orders-exhausted"]
      })
      WriteDeadRecords = jsonencode({
        actions   = ["s3:PutObject"]
        resources = ["arn:aws:s3:::orders-archive-123456789012-us-east-1/serverless-retry/dead/*"]
      })
      DecryptTerminalQueues = jsonencode({
        actions   = ["kms:Decrypt"]
        resources = ["arn:aws:kms:us-east-1:123456789012:key/1111aaaa-11aa-11aa-11aa-111111111111"]
      })
    }
    error_message = "The archiver may drain exactly its sources, PutObject exactly under <prefix>dead/ and decrypt exactly the sources' keys (no bucket key with SSE-S3)."
  }

  assert {
    condition = {
      for s in concat(data.aws_iam_policy_document.operator_list.statement, data.aws_iam_policy_document.operator_records.statement, data.aws_iam_policy_document.operator_redrive.statement) :
      s.sid => jsonencode({ actions = sort(s.actions), resources = sort(s.resources), conditions = [for c in s.condition : "${c.test} ${c.variable} ${jsonencode(c.values)}"] })
      } == {
      ListArchive = jsonencode({
        actions    = ["s3:ListBucket"]
        resources  = ["arn:aws:s3:::orders-archive-123456789012-us-east-1"]
        conditions = ["StringLike s3:prefix [\"serverless-retry/*\"]"]
      })
      ReadMarkDiscardRecords = jsonencode({
        actions    = ["s3:DeleteObject", "s3:GetObject", "s3:PutObject"]
        resources  = ["arn:aws:s3:::orders-archive-123456789012-us-east-1/serverless-retry/dead/*"]
        conditions = []
      })
      ReadClaimCheckPayloads = jsonencode({
        actions    = ["s3:GetObject"]
        resources  = ["arn:aws:s3:::orders-archive-123456789012-us-east-1/serverless-retry/payloads/*"]
        conditions = []
      })
      RedriveToSourceQueues = jsonencode({
        actions    = ["sqs:GetQueueAttributes", "sqs:GetQueueUrl", "sqs:SendMessage"]
        resources  = ["arn:aws:sqs:us-east-1:123456789012:orders"]
        conditions = []
      })
      UseArchiveAndQueueKeys = jsonencode({
        actions    = ["kms:Decrypt", "kms:GenerateDataKey"]
        resources  = ["arn:aws:kms:us-east-1:123456789012:key/1111aaaa-11aa-11aa-11aa-111111111111"]
        conditions = []
      })
    }
    error_message = "The operator policy: ListBucket under the prefix, Get/Put/Delete under <prefix>dead/, SendMessage to the known source queues, the keys."
  }

  assert {
    condition = alltrue(flatten([
      for d in [data.aws_iam_policy_document.drain, data.aws_iam_policy_document.write, data.aws_iam_policy_document.kms, data.aws_iam_policy_document.operator_list, data.aws_iam_policy_document.operator_records, data.aws_iam_policy_document.operator_redrive] :
      [for s in d.statement : [for a in s.actions : a != "*" && !endswith(a, ":*")]]
    ]))
    error_message = "No statement grants \"*\" or \"service:*\"."
  }
}

run "bucket_key_is_used_with_sse_kms" {
  command = plan

  variables {
    kms_key_arn = "arn:aws:kms:us-east-1:123456789012:key/2222bbbb-22bb-22bb-22bb-222222222222"
  }

  assert {
    condition = [
      for r in module.bucket[0].resources.encryption.rule :
      "${r.apply_server_side_encryption_by_default[0].sse_algorithm} ${r.apply_server_side_encryption_by_default[0].kms_master_key_id} ${r.bucket_key_enabled}"
    ] == ["aws:kms arn:aws:kms:us-east-1:123456789012:key/2222bbbb-22bb-22bb-22bb-222222222222 true"]
    error_message = "With kms_key_arn: SSE-KMS with that key and an S3 Bucket Key."
  }

  assert {
    condition = [
      for s in data.aws_iam_policy_document.kms.statement : "${s.sid} ${jsonencode(sort(s.actions))} ${jsonencode(sort(s.resources))}" if s.sid == "EncryptRecords"
    ] == ["EncryptRecords [\"kms:Decrypt\",\"kms:GenerateDataKey\"] [\"arn:aws:kms:us-east-1:123456789012:key/2222bbbb-22bb-22bb-22bb-222222222222\"]"]
    error_message = "The archiver may use exactly the bucket's key."
  }
}

run "tls_1_2_deny_can_be_turned_off" {
  command = plan

  variables {
    require_tls_1_2 = false
  }

  assert {
    condition     = [for s in jsondecode(module.bucket[0].resources.policy.policy).Statement : s.Sid] == ["DenyInsecureTransport"]
    error_message = "require_tls_1_2 = false keeps only the plain-HTTP deny."
  }
}

run "own_bucket_makes_no_bucket_and_scopes_iam_to_its_prefix" {
  command = plan

  variables {
    bucket = { name = "shared-dead-letters", kms_key_arn = "arn:aws:kms:us-east-1:123456789012:key/3333cccc-33cc-33cc-33cc-333333333333" }
    prefix = "teams/orders/"
  }

  assert {
    condition = alltrue([
      # Every bucket resource is modules/private-bucket's, made once or not at all.
      length(module.bucket) == 0,
    ])
    error_message = "A bucket of your own: the module makes no bucket resource."
  }

  assert {
    condition = (
      data.aws_iam_policy_document.write.statement[0].resources == toset(["arn:aws:s3:::shared-dead-letters/teams/orders/dead/*"]) &&
      data.aws_iam_policy_document.operator_records.statement[0].resources == toset(["arn:aws:s3:::shared-dead-letters/teams/orders/dead/*"]) &&
      [for c in data.aws_iam_policy_document.operator_list.statement[0].condition : "${c.test} ${c.variable} ${jsonencode(c.values)}"] == ["StringLike s3:prefix [\"teams/orders/*\"]"] &&
      [for s in data.aws_iam_policy_document.kms.statement : jsonencode(sort(s.resources)) if s.sid == "EncryptRecords"] == ["[\"arn:aws:kms:us-east-1:123456789012:key/3333cccc-33cc-33cc-33cc-333333333333\"]"]
    )
    error_message = "IAM is scoped to <prefix>dead/ of your bucket, and to its key."
  }

  assert {
    condition = (
      output.archive_location == "s3://shared-dead-letters/teams/orders/" &&
      !output.bucket_created &&
      strcontains(output.lifecycle_note, "Prefix=teams/orders/dead/") &&
      strcontains(output.lifecycle_note, "Days=180") &&
      module.archiver.function.environment[0].variables["SERVERLESS_RETRY_ARCHIVE_BUCKET"] == "shared-dead-letters"
    )
    error_message = "Outputs name your bucket and say which lifecycle rule to add: ${coalesce(output.lifecycle_note, "null")}"
  }
}

run "empty_prefix_writes_at_the_root" {
  command = plan

  variables {
    prefix          = ""
    expiration_days = 30
  }

  assert {
    condition = (
      data.aws_iam_policy_document.write.statement[0].resources == toset(["arn:aws:s3:::orders-archive-123456789012-us-east-1/dead/*"]) &&
      [for r in module.bucket[0].resources.lifecycle.rule : "${one(r.filter).prefix} ${one(r.expiration).days}" if r.id == "expire-dead"] == ["dead/ 30"]
    )
    error_message = "prefix \"\" puts records under dead/ at the bucket's root, expired by the same rule."
  }
}

run "visibility_under_6x_timeout_is_refused" {
  command = plan

  # 6 x 6 s = 36 s, over the exhausted queue's 30 s.
  variables {
    timeout = 6
  }

  expect_failures = [aws_lambda_event_source_mapping.this["exhausted"]]
}

run "bad_place_is_refused" {
  command = plan

  variables {
    sources = [{ queue_arn = "arn:aws:sqs:us-east-1:123456789012:orders-dlq", place = "graveyard" }]
  }

  expect_failures = [var.sources]
}

run "queue_url_is_refused" {
  command = plan

  variables {
    sources = [{ queue_arn = "https://sqs.us-east-1.amazonaws.com/123456789012/orders-dlq", place = "dlq" }]
  }

  expect_failures = [var.sources]
}

run "no_source_is_refused" {
  command = plan

  variables {
    sources = []
  }

  expect_failures = [var.sources]
}

run "same_queue_twice_is_refused" {
  command = plan

  variables {
    sources = [
      { queue_arn = "arn:aws:sqs:us-east-1:123456789012:orders-dlq", place = "dlq" },
      { queue_arn = "arn:aws:sqs:us-east-1:123456789012:orders-dlq", place = "dlq" },
    ]
  }

  expect_failures = [var.sources]
}

run "leading_slash_prefix_is_refused" {
  command = plan

  variables {
    prefix = "/serverless-retry/"
  }

  expect_failures = [var.prefix]
}

run "prefix_without_trailing_slash_is_refused" {
  command = plan

  variables {
    prefix = "serverless-retry"
  }

  expect_failures = [var.prefix]
}

run "expiration_out_of_range_is_refused" {
  command = plan

  variables {
    expiration_days = 3651
  }

  expect_failures = [var.expiration_days]
}

run "zero_expiration_is_refused" {
  command = plan

  variables {
    expiration_days = 0
  }

  expect_failures = [var.expiration_days]
}

run "uppercase_name_is_refused" {
  command = plan

  variables {
    name = "Orders"
  }

  expect_failures = [var.name]
}

run "bucket_object_arn_is_refused" {
  command = plan

  variables {
    bucket = { name = "shared-dead-letters", arn = "arn:aws:s3:::shared-dead-letters/teams/*" }
  }

  expect_failures = [var.bucket]
}

run "kms_alias_is_refused" {
  command = plan

  variables {
    kms_key_arn = "alias/archive"
  }

  expect_failures = [var.kms_key_arn]
}

run "batch_size_above_10_is_refused" {
  command = plan

  variables {
    batch_size = 11
  }

  expect_failures = [var.batch_size]
}

run "maximum_concurrency_below_2_is_refused" {
  command = plan

  variables {
    maximum_concurrency = 1
  }

  expect_failures = [var.maximum_concurrency]
}

run "brought_role_creates_no_iam_and_gets_the_policy_to_attach" {
  command = plan

  variables {
    role_arn = "arn:aws:iam::123456789012:role/archiver"
  }

  assert {
    condition = (
      length(module.archiver.iam.roles) == 0 &&
      length(module.archiver.iam.policies) == 0 &&
      module.archiver.function.role == "arn:aws:iam::123456789012:role/archiver" &&
      output.role_arn == "arn:aws:iam::123456789012:role/archiver"
    )
    error_message = "With role_arn the module creates no role or policy, and the archiver runs with the role given."
  }
}

run "archiver_runs_with_the_package_settings_given" {
  command = plan

  variables {
    package       = null
    s3_package    = { bucket = "artifacts", key = "orders/orders.zip", source_code_hash = "c29tZWhhc2g=" }
    layers        = ["arn:aws:lambda:us-east-1:123456789012:layer:serverless-retry:3"]
    architectures = ["x86_64"]
    memory_size   = 512
    timeout       = 4
    batch_size    = 5
  }

  assert {
    condition = (
      module.archiver.function.s3_bucket == "artifacts" &&
      module.archiver.function.s3_key == "orders/orders.zip" &&
      module.archiver.function.layers == tolist(["arn:aws:lambda:us-east-1:123456789012:layer:serverless-retry:3"]) &&
      module.archiver.function.architectures == tolist(["x86_64"]) &&
      module.archiver.function.memory_size == 512 &&
      module.archiver.function.timeout == 4 &&
      alltrue([for m in values(aws_lambda_event_source_mapping.this) : m.batch_size == 5])
    )
    error_message = "The archiver takes the code, layers and runtime settings as the operator function does."
  }
}
