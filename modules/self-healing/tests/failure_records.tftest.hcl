# Plan-level tests of failure records in S3 (failure_records.tf) on the mock provider: the bucket and
# its hardening, the notification to the failure queue and the queue's policy for it, the source
# roles' PutObject and the functions' GetObject scoped to each function's prefix, and the validations.
mock_provider "aws" {
  source = "../../tests/terraform/mocks"
}

override_resource {
  target          = module.failure_queue.aws_sqs_queue.source
  override_during = plan
  values = {
    arn  = "arn:aws:sqs:us-east-1:123456789012:heal-failures"
    url  = "https://sqs.us-east-1.amazonaws.com/123456789012/heal-failures"
    name = "heal-failures"
  }
}

override_resource {
  target          = module.failure_queue.aws_sqs_queue.dlq
  override_during = plan
  values = {
    arn = "arn:aws:sqs:us-east-1:123456789012:heal-failures-dlq"
    url = "https://sqs.us-east-1.amazonaws.com/123456789012/heal-failures-dlq"
  }
}

override_resource {
  target          = aws_sqs_queue.exhausted
  override_during = plan
  values = {
    arn = "arn:aws:sqs:us-east-1:123456789012:heal-exhausted"
    url = "https://sqs.us-east-1.amazonaws.com/123456789012/heal-exhausted"
  }
}

override_resource {
  target          = aws_sqs_queue.dlq["rules"]
  override_during = plan
  values = {
    arn = "arn:aws:sqs:us-east-1:123456789012:heal-rules-dlq"
    url = "https://sqs.us-east-1.amazonaws.com/123456789012/heal-rules-dlq"
  }
}

override_resource {
  target          = aws_sqs_queue.dlq["redrive"]
  override_during = plan
  values = {
    arn = "arn:aws:sqs:us-east-1:123456789012:heal-redrive-dlq"
    url = "https://sqs.us-east-1.amazonaws.com/123456789012/heal-redrive-dlq"
  }
}

override_resource {
  target          = aws_sqs_queue.dlq["schedule"]
  override_during = plan
  values = {
    arn = "arn:aws:sqs:us-east-1:123456789012:heal-schedule-dlq"
    url = "https://sqs.us-east-1.amazonaws.com/123456789012/heal-schedule-dlq"
  }
}

override_resource {
  target          = module.enrichment.aws_lambda_function.this
  override_during = plan
  values = {
    arn = "arn:aws:lambda:us-east-1:123456789012:function:heal-enrichment"
  }
}

override_resource {
  target          = module.redrive.aws_lambda_function.this
  override_during = plan
  values = {
    arn = "arn:aws:lambda:us-east-1:123456789012:function:heal-redrive"
  }
}

override_resource {
  target          = module.enrichment.aws_cloudwatch_log_group.this
  override_during = plan
  values = {
    arn = "arn:aws:logs:us-east-1:123456789012:log-group:/aws/lambda/heal-enrichment"
  }
}

override_resource {
  target          = module.redrive.aws_cloudwatch_log_group.this
  override_during = plan
  values = {
    arn = "arn:aws:logs:us-east-1:123456789012:log-group:/aws/lambda/heal-redrive"
  }
}

override_resource {
  target          = aws_cloudwatch_log_group.pipe
  override_during = plan
  values = {
    arn = "arn:aws:logs:us-east-1:123456789012:log-group:/aws/vendedlogs/pipes/heal-failures"
  }
}

override_resource {
  target          = aws_cloudwatch_event_bus.this
  override_during = plan
  values = {
    arn = "arn:aws:events:us-east-1:123456789012:event-bus/heal"
  }
}

override_resource {
  target          = aws_cloudwatch_event_rule.retry["orders"]
  override_during = plan
  values = {
    arn = "arn:aws:events:us-east-1:123456789012:rule/heal/heal-retry-orders"
  }
}

override_resource {
  target          = aws_cloudwatch_event_rule.retry["invoices"]
  override_during = plan
  values = {
    arn = "arn:aws:events:us-east-1:123456789012:rule/heal/heal-retry-invoices"
  }
}

override_resource {
  target          = aws_cloudwatch_event_rule.exhausted
  override_during = plan
  values = {
    arn = "arn:aws:events:us-east-1:123456789012:rule/heal/heal-exhausted-rule"
  }
}

override_resource {
  target          = module.scheduler.aws_scheduler_schedule_group.this
  override_during = plan
  values = {
    arn = "arn:aws:scheduler:us-east-1:123456789012:schedule-group/heal-redrive"
  }
}

override_resource {
  target          = module.scheduler.aws_iam_role.this
  override_during = plan
  values = {
    arn = "arn:aws:iam::123456789012:role/heal-redrive-scheduler"
  }
}

variables {
  name    = "heal"
  package = "../../tests/terraform/fixtures/empty.zip"
  sources = {
    orders = {
      function_name      = "orders-fn"
      function_role_name = "orders-fn-role"
      on_failure         = "s3"
    }
    invoices = {
      function_name      = "invoices-fn"
      function_role_name = "invoices-fn-role"
    }
  }
  tags = { team = "orders" }
}

run "the_bucket_is_made_hardened" {
  command = plan

  assert {
    condition     = aws_s3_bucket.failure_records[0].bucket == "heal-failure-records-123456789012-us-east-1" && aws_s3_bucket.failure_records[0].tags["team"] == "orders"
    error_message = "The bucket the module makes: <name>-failure-records-<account>-<region>, tagged."
  }

  assert {
    condition = alltrue([
      aws_s3_bucket_public_access_block.failure_records[0].block_public_acls,
      aws_s3_bucket_public_access_block.failure_records[0].block_public_policy,
      aws_s3_bucket_public_access_block.failure_records[0].ignore_public_acls,
      aws_s3_bucket_public_access_block.failure_records[0].restrict_public_buckets,
    ]) && aws_s3_bucket_ownership_controls.failure_records[0].rule[0].object_ownership == "BucketOwnerEnforced"
    error_message = "Public access blocked, ACLs off."
  }

  assert {
    condition     = one([for r in aws_s3_bucket_server_side_encryption_configuration.failure_records[0].rule : one(r.apply_server_side_encryption_by_default).sse_algorithm]) == "AES256"
    error_message = "SSE-S3 by default."
  }

  assert {
    condition     = length(aws_s3_bucket_versioning.failure_records) == 0
    error_message = "Versioning is off by default."
  }

  assert {
    condition = [for r in aws_s3_bucket_lifecycle_configuration.failure_records[0].rule : {
      id = r.id, prefix = one(r.filter).prefix, days = one(r.expiration).days, noncurrent = length(r.noncurrent_version_expiration)
    } if r.id == "expire-failure-records"] == [{ id = "expire-failure-records", prefix = "aws/lambda/async/", days = 30, noncurrent = 0 }]
    error_message = "Records expire after 30 days by default, under Lambda's prefix."
  }

  assert {
    condition     = alltrue([for r in aws_s3_bucket_lifecycle_configuration.failure_records[0].rule : one(r.abort_incomplete_multipart_upload).days_after_initiation == 1]) && length(aws_s3_bucket_lifecycle_configuration.failure_records[0].rule) == 2
    error_message = "Every rule aborts incomplete uploads after a day."
  }

  assert {
    condition = jsondecode(aws_s3_bucket_policy.failure_records[0].policy).Statement == [{
      Sid       = "DenyInsecureTransport"
      Effect    = "Deny"
      Principal = "*"
      Action    = "s3:*"
      Resource  = ["arn:aws:s3:::heal-failure-records-123456789012-us-east-1", "arn:aws:s3:::heal-failure-records-123456789012-us-east-1/*"]
      Condition = { Bool = { "aws:SecureTransport" = "false" } }
    }]
    error_message = "The bucket refuses plain HTTP."
  }

  assert {
    condition     = output.failure_records_bucket == { name = "heal-failure-records-123456789012-us-east-1", arn = "arn:aws:s3:::heal-failure-records-123456789012-us-east-1", prefix = "aws/lambda/async/" }
    error_message = "The output names the bucket and Lambda's prefix."
  }
}

run "only_the_s3_source_writes_to_the_bucket" {
  command = plan

  assert {
    condition     = aws_lambda_function_event_invoke_config.source["orders"].destination_config[0].on_failure[0].destination == "arn:aws:s3:::heal-failure-records-123456789012-us-east-1"
    error_message = "orders (on_failure = s3): on failure -> the bucket."
  }

  assert {
    condition     = aws_lambda_function_event_invoke_config.source["invoices"].destination_config[0].on_failure[0].destination == "arn:aws:sqs:us-east-1:123456789012:heal-failures"
    error_message = "invoices (the default): on failure -> the failure queue, as before."
  }

  assert {
    condition = [for s in data.aws_iam_policy_document.source_s3["orders"].statement : "${s.sid} | ${join(",", sort(s.actions))} | ${join(",", sort(s.resources))}"] == [
      "WriteFailureRecords | s3:PutObject | arn:aws:s3:::heal-failure-records-123456789012-us-east-1/aws/lambda/async/orders-fn/*",
      "ListFailureRecordsBucket | s3:ListBucket | arn:aws:s3:::heal-failure-records-123456789012-us-east-1",
    ]
    error_message = "The S3 source's role may write under its own function's prefix only (and list the bucket, as Lambda requires)."
  }

  assert {
    condition     = keys(data.aws_iam_policy_document.source_s3) == ["orders"]
    error_message = "Only the S3 source gets S3 permissions."
  }

  assert {
    condition = [for s in data.aws_iam_policy_document.read_records.statement : "${s.sid} | ${join(",", sort(s.actions))} | ${join(",", sort(s.resources))}"] == [
      "ReadFailureRecords | s3:GetObject | arn:aws:s3:::heal-failure-records-123456789012-us-east-1/aws/lambda/async/orders-fn/*",
    ]
    error_message = "Enrichment and redrive may read exactly the S3 sources' records."
  }

  assert {
    condition = alltrue([
      contains(data.aws_iam_policy_document.enrichment.source_policy_documents, data.aws_iam_policy_document.read_records.json),
      contains(data.aws_iam_policy_document.redrive.source_policy_documents, data.aws_iam_policy_document.read_records.json),
    ])
    error_message = "Both functions' policies include the read."
  }

  assert {
    condition     = output.failure_records_read_policy_json == data.aws_iam_policy_document.read_records.json
    error_message = "An operator who redrives records whose payload is in S3 gets the same read, and nothing more."
  }
}

run "new_records_notify_the_failure_queue" {
  command = plan

  assert {
    condition = jsonencode([for q in aws_s3_bucket_notification.failure_records[0].queue : {
      id = q.id, queue_arn = q.queue_arn, events = sort(q.events), prefix = q.filter_prefix
      }]) == jsonencode([{
      id = "serverless-retry-heal-orders", queue_arn = "arn:aws:sqs:us-east-1:123456789012:heal-failures", events = ["s3:ObjectCreated:*"], prefix = "aws/lambda/async/orders-fn/"
    }])
    error_message = "One notification per S3 source, on its function's prefix, to the failure queue."
  }

  assert {
    condition = jsonencode([for s in data.aws_iam_policy_document.failure_queue_from_s3[0].statement : {
      sid        = s.sid
      actions    = sort(s.actions)
      resources  = sort(s.resources)
      principals = [for p in s.principals : "${p.type}:${join(",", sort(p.identifiers))}"]
      conditions = sort([for c in s.condition : "${c.test} ${c.variable} ${join(",", c.values)}"])
      }]) == jsonencode([{
      sid        = "S3SendsFailureRecordEvents"
      actions    = ["sqs:SendMessage"]
      resources  = ["arn:aws:sqs:us-east-1:123456789012:heal-failures"]
      principals = ["Service:s3.amazonaws.com"]
      conditions = ["ArnEquals aws:SourceArn arn:aws:s3:::heal-failure-records-123456789012-us-east-1", "StringEquals aws:SourceAccount 123456789012"]
    }])
    error_message = "Only this bucket of this account may send to the failure queue as S3."
  }
}

run "without_an_s3_source_nothing_is_made" {
  command = plan

  variables {
    sources = {
      orders = { function_name = "orders-fn", function_role_name = "orders-fn-role" }
    }
  }

  assert {
    condition = alltrue([
      length(aws_s3_bucket.failure_records) == 0,
      length(aws_s3_bucket_notification.failure_records) == 0,
      length(data.aws_iam_policy_document.failure_queue_from_s3) == 0,
      length(data.aws_iam_policy_document.source_s3) == 0,
      length(data.aws_iam_policy_document.read_records.statement) == 0,
      output.failure_records_bucket == null,
      output.failure_records_read_policy_json == null,
    ])
    error_message = "The default keeps today's behaviour: no bucket, no S3 permission."
  }
}

run "your_own_bucket" {
  command = plan

  variables {
    failure_records = { bucket = "my-records" }
  }

  assert {
    condition     = length(aws_s3_bucket.failure_records) == 0 && length(aws_s3_bucket_policy.failure_records) == 0 && length(aws_s3_bucket_lifecycle_configuration.failure_records) == 0
    error_message = "With your bucket the module makes none."
  }

  assert {
    condition     = aws_s3_bucket_notification.failure_records[0].bucket == "my-records" && aws_lambda_function_event_invoke_config.source["orders"].destination_config[0].on_failure[0].destination == "arn:aws:s3:::my-records"
    error_message = "Your bucket gets the records and the notification."
  }

  assert {
    condition     = one([for s in data.aws_iam_policy_document.read_records.statement : s.resources]) == toset(["arn:aws:s3:::my-records/aws/lambda/async/orders-fn/*"])
    error_message = "The reads are scoped to your bucket's prefix of the function."
  }
}

run "your_own_bucket_without_managed_notifications" {
  command = plan

  variables {
    failure_records = { bucket = "my-records", manage_notifications = false }
  }

  assert {
    condition     = length(aws_s3_bucket_notification.failure_records) == 0 && length(data.aws_iam_policy_document.failure_queue_from_s3) == 1
    error_message = "manage_notifications = false leaves the notification to you (the queue still lets the bucket in)."
  }
}

run "versioned_and_encrypted_with_your_key" {
  command = plan

  variables {
    failure_records = {
      versioning  = true
      kms_key_arn = "arn:aws:kms:us-east-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab"
    }
  }

  assert {
    condition     = aws_s3_bucket_versioning.failure_records[0].versioning_configuration[0].status == "Enabled" && one(one([for r in aws_s3_bucket_lifecycle_configuration.failure_records[0].rule : r if r.id == "expire-failure-records"]).noncurrent_version_expiration).noncurrent_days == 7
    error_message = "Versioning on, noncurrent versions expire after 7 days."
  }

  assert {
    condition     = one([for r in aws_s3_bucket_server_side_encryption_configuration.failure_records[0].rule : r.bucket_key_enabled && one(r.apply_server_side_encryption_by_default).sse_algorithm == "aws:kms"])
    error_message = "SSE-KMS with a Bucket Key."
  }

  assert {
    condition = alltrue([
      contains([for s in data.aws_iam_policy_document.source_s3["orders"].statement : "${s.sid} | ${join(",", s.actions)} | ${join(",", s.resources)}"], "EncryptFailureRecords | kms:GenerateDataKey | arn:aws:kms:us-east-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab"),
      contains([for s in data.aws_iam_policy_document.read_records.statement : "${s.sid} | ${join(",", s.actions)} | ${join(",", s.resources)}"], "DecryptFailureRecords | kms:Decrypt | arn:aws:kms:us-east-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab"),
    ])
    error_message = "The writer may encrypt, the readers decrypt, with that key only."
  }
}

run "unknown_on_failure" {
  command = plan

  variables {
    sources = { orders = { function_name = "orders-fn", function_role_name = "orders-fn-role", on_failure = "sqs" } }
  }

  expect_failures = [var.sources]
}

run "bucket_given_as_an_arn" {
  command = plan

  variables {
    failure_records = { bucket = "arn:aws:s3:::my-records" }
  }

  expect_failures = [var.failure_records]
}

run "records_expire_before_their_exhausted_pointer" {
  command = plan

  variables {
    failure_records = { expiration_days = 7 }
  }

  expect_failures = [aws_s3_bucket_lifecycle_configuration.failure_records]
}
