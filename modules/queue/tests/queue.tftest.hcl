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
    condition     = tolist([aws_sqs_queue.source.name, aws_sqs_queue.dlq.name, aws_sqs_queue.exhausted[0].name]) == tolist(["orders", "orders-dlq", "orders-exhausted"])
    error_message = "Queue names: <name>, <name>-dlq, <name>-exhausted."
  }

  assert {
    condition     = aws_sqs_queue.source.message_retention_seconds == 345600 && aws_sqs_queue.dlq.message_retention_seconds == 1209600 && aws_sqs_queue.exhausted[0].message_retention_seconds == 1209600
    error_message = "Retention defaults: 4 days for the source, 14 days for the DLQ and the exhausted queue."
  }

  assert {
    condition     = alltrue([for q in [aws_sqs_queue.source, aws_sqs_queue.dlq, aws_sqs_queue.exhausted[0]] : q.sqs_managed_sse_enabled == true && q.kms_master_key_id == null])
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
    condition     = alltrue([for q in [aws_sqs_queue.source, aws_sqs_queue.dlq, aws_sqs_queue.exhausted[0]] : q.tags == tomap({ team = "orders" })])
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
    condition     = aws_sqs_queue_policy.dlq.queue_url == "https://sqs.us-east-1.amazonaws.com/123456789012/orders-dlq" && aws_sqs_queue_policy.exhausted[0].queue_url == "https://sqs.us-east-1.amazonaws.com/123456789012/orders-exhausted" && aws_sqs_queue_policy.source.queue_url == "https://sqs.us-east-1.amazonaws.com/123456789012/orders"
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
    fifo = true
  }

  assert {
    condition     = tolist([aws_sqs_queue.source.name, aws_sqs_queue.dlq.name, aws_sqs_queue.exhausted[0].name]) == tolist(["orders.fifo", "orders-dlq.fifo", "orders-exhausted.fifo"])
    error_message = "FIFO queue names end in .fifo."
  }

  assert {
    condition     = alltrue([for q in [aws_sqs_queue.source, aws_sqs_queue.dlq, aws_sqs_queue.exhausted[0]] : q.fifo_queue == true])
    error_message = "The source, its DLQ and the exhausted queue are FIFO (SQS requires a FIFO source's DLQ to be FIFO)."
  }

  assert {
    condition     = aws_sqs_queue.source.content_based_deduplication == true
    error_message = "A FIFO source has content-based deduplication by default: a Scheduler SQS target can pass only a MessageGroupId."
  }

  assert {
    condition     = aws_sqs_queue.schedule_dlq[0].name == "orders-schedule-dlq" && aws_sqs_queue.schedule_dlq[0].fifo_queue != true && aws_sqs_queue.schedule_dlq[0].content_based_deduplication == null
    error_message = "The schedules' dead-letter queue of a FIFO source is the standard <name>-schedule-dlq (the Scheduler takes no FIFO DLQ)."
  }

  assert {
    condition     = aws_sqs_queue.schedule_dlq[0].message_retention_seconds == 1209600 && aws_sqs_queue.schedule_dlq[0].sqs_managed_sse_enabled == true && aws_sqs_queue.schedule_dlq[0].tags == tomap({ team = "orders" })
    error_message = "The schedule DLQ keeps 14 days, is encrypted and tagged like the others."
  }

  assert {
    condition = alltrue([
      data.aws_iam_policy_document.tls_only["schedule_dlq"].statement[0].effect == "Deny",
      jsonencode(data.aws_iam_policy_document.tls_only["schedule_dlq"].statement[0].condition) == jsonencode([{ test = "Bool", values = ["false"], variable = "aws:SecureTransport" }]),
      length(aws_sqs_queue_policy.schedule_dlq) == 1,
    ])
    error_message = "The schedule DLQ refuses insecure transport too."
  }

  assert {
    condition     = output.schedule_dlq_name == "orders-schedule-dlq" && output.schedule_dlq_arn != output.dlq_arn
    error_message = "The outputs name the standard schedule DLQ."
  }
}

run "standard_source_schedules_dead_letter_to_its_dlq" {
  command = plan

  assert {
    condition     = length(aws_sqs_queue.schedule_dlq) == 0 && output.schedule_dlq_arn == output.dlq_arn && output.schedule_dlq_name == "orders-dlq"
    error_message = "A standard source's DLQ is standard: it is the schedules' dead-letter queue, no extra queue."
  }

  assert {
    condition     = aws_sqs_queue.source.content_based_deduplication == null && aws_sqs_queue.source.fifo_queue == null
    error_message = "Standard queues get no FIFO attributes (SQS rejects them)."
  }
}

run "exhausted_queue_is_as_large_as_the_provider_allows" {
  command = plan

  variables {
    max_message_size = 131072
  }

  assert {
    condition     = aws_sqs_queue.exhausted[0].max_message_size == 262144 && aws_sqs_queue.source.max_message_size == 131072 && aws_sqs_queue.dlq.max_message_size == 131072
    error_message = "The exhausted queue defaults to 256 KiB (hashicorp/aws 5.x's largest), the source and DLQ keep theirs."
  }

  assert {
    condition     = output.exhausted_max_message_size == 262144 && output.max_message_size == 131072
    error_message = "Both sizes are outputs (the consumer's environment)."
  }
}

run "exhausted_queue_needs_room_for_the_reason" {
  command = plan

  variables {
    max_message_size           = 131072
    exhausted_max_message_size = 131072
  }

  expect_failures = [aws_sqs_queue.exhausted]
}

run "exhausted_margin_at_the_provider_limit" {
  command = plan

  variables {
    # The default source (260096) plus the 2048-byte frame is exactly what hashicorp/aws 5.x allows.
    exhausted_max_message_size = 262144
  }

  assert {
    condition     = aws_sqs_queue.exhausted[0].max_message_size == 262144 && aws_sqs_queue.source.max_message_size == 260096
    error_message = "The default source leaves the exhausted queue exactly its 2048-byte frame."
  }
}

run "source_of_256_kib_leaves_no_room_for_the_reason" {
  command = plan

  variables {
    # 262144 + 2048 does not fit in the 262144 hashicorp/aws 5.x allows the exhausted queue: refused.
    max_message_size = 262144
  }

  expect_failures = [aws_sqs_queue.exhausted]
}

run "source_of_256_kib_with_an_exhausted_queue_one_byte_short" {
  command = plan

  variables {
    max_message_size           = 262144
    exhausted_max_message_size = 264191
  }

  expect_failures = [aws_sqs_queue.exhausted]
}

run "source_of_256_kib_without_an_exhausted_queue" {
  command = plan

  variables {
    # A plain handler's queue set: nothing writes a terminal message, so no room is needed.
    max_message_size = 262144
    exhausted_queue  = false
  }

  assert {
    condition     = aws_sqs_queue.source.max_message_size == 262144 && length(aws_sqs_queue.exhausted) == 0
    error_message = "Without an exhausted queue the source may take 262144."
  }
}

run "dlq_must_be_reached_within_the_retention" {
  command = plan

  variables {
    # 5 receives x 150 s = 750 s >= 600 s: SQS would delete a failing message before its DLQ move.
    message_retention_seconds  = 600
    visibility_timeout_seconds = 150
    max_receive_count          = 5
  }

  expect_failures = [aws_sqs_queue.source]
}

run "dlq_reached_one_second_inside_the_retention" {
  command = plan

  variables {
    message_retention_seconds  = 751
    visibility_timeout_seconds = 150
    max_receive_count          = 5
  }

  assert {
    condition     = aws_sqs_queue.source.message_retention_seconds == 751
    error_message = "750 s of receives inside a 751 s retention plans."
  }
}

# Sizes above 262144 (SQS allows 1 MiB since 2025) cannot be planned here: hashicorp/aws 5.100.0
# itself refuses them ("expected max_message_size to be in the range (1024 - 262144)"); 6.8 accepts them.
run "max_message_size_up_to_sqs_limit" {
  command = plan

  variables {
    max_message_size = 1048577
  }

  expect_failures = [var.max_message_size]
}

run "kms_key" {
  command = plan

  variables {
    kms_key_arn = "arn:aws:kms:us-east-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab"
  }

  assert {
    condition     = alltrue([for q in [aws_sqs_queue.source, aws_sqs_queue.dlq, aws_sqs_queue.exhausted[0]] : q.kms_master_key_id == var.kms_key_arn && q.kms_data_key_reuse_period_seconds == 300 && q.sqs_managed_sse_enabled != true])
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

run "max_receive_count_at_least_5" {
  command = plan

  variables {
    max_receive_count = 3
  }

  expect_failures = [aws_sqs_queue.source]
}

run "max_receive_count_below_5_when_accepted" {
  command = plan

  variables {
    max_receive_count               = 3
    allow_max_receive_count_below_5 = true
  }

  assert {
    condition     = jsondecode(aws_sqs_queue.source.redrive_policy).maxReceiveCount == 3
    error_message = "The opt-out lets a lower count through."
  }
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

run "no_exhausted_queue_for_a_plain_handler" {
  command = plan

  variables {
    exhausted_queue = false
  }

  assert {
    condition     = length(aws_sqs_queue.exhausted) == 0 && length(aws_sqs_queue_policy.exhausted) == 0 && keys(data.aws_iam_policy_document.tls_only) == ["dlq", "source"]
    error_message = "exhausted_queue = false creates no retry-exhausted queue (nor its policy)."
  }

  assert {
    condition     = output.exhausted_queue_url == null && output.exhausted_queue_arn == null && output.exhausted_queue_name == null
    error_message = "Without the exhausted queue its outputs are null."
  }

  assert {
    condition     = jsondecode(aws_sqs_queue.source.redrive_policy).maxReceiveCount == 5
    error_message = "The source still dead-letters to its DLQ after 5 receives."
  }
}
