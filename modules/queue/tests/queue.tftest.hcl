# Plan-level tests of the queue module on the mock provider (shared defaults in tests/terraform/mocks).
mock_provider "aws" {
  source = "../../tests/terraform/mocks"
}

override_resource {
  target          = aws_sqs_queue.source
  override_during = plan
  values = {
    arn = "arn:aws:sqs:us-east-1:123456789012:orders"
    url = "https://sqs.us-east-1.amazonaws.com/123456789012/orders"
  }
}

override_resource {
  target          = aws_sqs_queue.dlq
  override_during = plan
  values = {
    arn = "arn:aws:sqs:us-east-1:123456789012:orders-dlq"
    url = "https://sqs.us-east-1.amazonaws.com/123456789012/orders-dlq"
  }
}

override_resource {
  target          = aws_sqs_queue.exhausted
  override_during = plan
  values = {
    arn = "arn:aws:sqs:us-east-1:123456789012:orders-exhausted"
    url = "https://sqs.us-east-1.amazonaws.com/123456789012/orders-exhausted"
  }
}

variables {
  name = "orders"
  tags = { team = "orders" }
}

run "defaults" {
  command = plan

  assert {
    condition     = tolist([aws_sqs_queue.source.name, aws_sqs_queue.dlq.name, aws_sqs_queue.exhausted.name]) == tolist(["orders", "orders-dlq", "orders-exhausted"])
    error_message = "Queue names: <name>, <name>-dlq, <name>-exhausted."
  }

  assert {
    condition     = aws_sqs_queue.source.message_retention_seconds == 345600 && aws_sqs_queue.dlq.message_retention_seconds == 1209600 && aws_sqs_queue.exhausted.message_retention_seconds == 1209600
    error_message = "Retention defaults: 4 days for the source, 14 days for the DLQ and the exhausted queue."
  }

  assert {
    condition     = alltrue([for q in [aws_sqs_queue.source, aws_sqs_queue.dlq, aws_sqs_queue.exhausted] : q.sqs_managed_sse_enabled == true && q.kms_master_key_id == null])
    error_message = "SQS-managed SSE by default on every queue."
  }

  assert {
    condition     = jsondecode(aws_sqs_queue.source.redrive_policy) == { deadLetterTargetArn = "arn:aws:sqs:us-east-1:123456789012:orders-dlq", maxReceiveCount = 5 }
    error_message = "The source queue redrives to its DLQ after 5 receives."
  }

  assert {
    condition     = jsondecode(aws_sqs_queue_redrive_allow_policy.dlq.redrive_allow_policy) == { redrivePermission = "byQueue", sourceQueueArns = ["arn:aws:sqs:us-east-1:123456789012:orders"] }
    error_message = "Only the source queue may dead-letter into the DLQ."
  }

  assert {
    condition     = aws_sqs_queue.source.visibility_timeout_seconds == 180
    error_message = "The visibility timeout defaults to 180 s (6 x a 30 s function)."
  }

  assert {
    condition     = alltrue([for q in [aws_sqs_queue.source, aws_sqs_queue.dlq, aws_sqs_queue.exhausted] : q.tags == tomap({ team = "orders" })])
    error_message = "Every queue carries the tags."
  }
}

run "every_queue_denies_insecure_transport" {
  command = plan

  assert {
    condition = alltrue([
      for k, d in data.aws_iam_policy_document.tls_only : (
        d.statement[0].effect == "Deny" &&
        d.statement[0].resources == toset([{ source = "arn:aws:sqs:us-east-1:123456789012:orders", dlq = "arn:aws:sqs:us-east-1:123456789012:orders-dlq", exhausted = "arn:aws:sqs:us-east-1:123456789012:orders-exhausted" }[k]]) &&
        jsonencode(d.statement[0].condition) == jsonencode([{ test = "Bool", values = ["false"], variable = "aws:SecureTransport" }]) &&
        jsonencode(d.statement[0].principals) == jsonencode([{ identifiers = ["*"], type = "*" }])
      )
    ]) && length(data.aws_iam_policy_document.tls_only) == 3
    error_message = "Each of the three queues must deny requests without TLS."
  }

  assert {
    condition     = aws_sqs_queue_policy.dlq.queue_url == "https://sqs.us-east-1.amazonaws.com/123456789012/orders-dlq" && aws_sqs_queue_policy.exhausted.queue_url == "https://sqs.us-east-1.amazonaws.com/123456789012/orders-exhausted" && aws_sqs_queue_policy.source.queue_url == "https://sqs.us-east-1.amazonaws.com/123456789012/orders"
    error_message = "Each policy is attached to its own queue."
  }

  assert {
    condition     = toset(data.aws_iam_policy_document.producer.statement[*].sid) == toset(["SendToSourceQueue"]) && data.aws_iam_policy_document.producer.statement[0].resources == toset(["arn:aws:sqs:us-east-1:123456789012:orders"])
    error_message = "Producers may only send to the source queue."
  }
}

run "fifo" {
  command = plan

  variables {
    fifo                        = true
    content_based_deduplication = true
  }

  assert {
    condition     = tolist([aws_sqs_queue.source.name, aws_sqs_queue.dlq.name, aws_sqs_queue.exhausted.name]) == tolist(["orders.fifo", "orders-dlq.fifo", "orders-exhausted.fifo"])
    error_message = "FIFO queue names end in .fifo."
  }

  assert {
    condition     = alltrue([for q in [aws_sqs_queue.source, aws_sqs_queue.dlq, aws_sqs_queue.exhausted] : q.fifo_queue == true && q.content_based_deduplication == true])
    error_message = "All three queues are FIFO (a FIFO source needs a FIFO DLQ)."
  }
}

run "kms_key" {
  command = plan

  variables {
    kms_key_arn = "arn:aws:kms:us-east-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab"
  }

  assert {
    condition     = alltrue([for q in [aws_sqs_queue.source, aws_sqs_queue.dlq, aws_sqs_queue.exhausted] : q.kms_master_key_id == var.kms_key_arn && q.kms_data_key_reuse_period_seconds == 300 && q.sqs_managed_sse_enabled != true])
    error_message = "A key switches every queue to SSE-KMS."
  }

  assert {
    condition     = data.aws_iam_policy_document.producer.statement[1].actions == toset(["kms:Decrypt", "kms:GenerateDataKey"]) && data.aws_iam_policy_document.producer.statement[1].resources == toset([var.kms_key_arn])
    error_message = "Producers get the key's data-key actions on exactly that key."
  }
}

run "dlq_must_outlive_its_source" {
  command = plan

  variables {
    message_retention_seconds     = 1209600
    dlq_message_retention_seconds = 1209600
  }

  expect_failures = [aws_sqs_queue.dlq]
}

run "max_receive_count_in_range" {
  command = plan

  variables {
    max_receive_count = 0
  }

  expect_failures = [var.max_receive_count]
}

run "visibility_timeout_in_range" {
  command = plan

  variables {
    visibility_timeout_seconds = 43201
  }

  expect_failures = [var.visibility_timeout_seconds]
}

run "name_fits_sqs_limits" {
  command = plan

  variables {
    name = "orders queue"
  }

  expect_failures = [var.name]
}
