# Plan-level tests of the scheduler module on the mock provider (shared defaults in tests/terraform/mocks).
mock_provider "aws" {
  source = "../../tests/terraform/mocks"
}

override_resource {
  target          = aws_scheduler_schedule_group.this
  override_during = plan
  values = {
    arn = "arn:aws:scheduler:us-east-1:123456789012:schedule-group/orders-retries"
  }
}

variables {
  name                   = "orders-retries"
  target_queue_arns      = ["arn:aws:sqs:us-east-1:123456789012:orders"]
  dead_letter_queue_arns = ["arn:aws:sqs:us-east-1:123456789012:orders-dlq"]
  tags                   = { team = "orders" }
}

run "trust_only_the_scheduler_for_this_account" {
  command = plan

  assert {
    condition     = length(data.aws_iam_policy_document.trust.statement) == 1 && data.aws_iam_policy_document.trust.statement[0].actions == toset(["sts:AssumeRole"])
    error_message = "The trust policy has one statement: sts:AssumeRole."
  }

  assert {
    condition     = jsonencode(data.aws_iam_policy_document.trust.statement[0].principals) == jsonencode([{ identifiers = ["scheduler.amazonaws.com"], type = "Service" }])
    error_message = "Only scheduler.amazonaws.com may assume the role."
  }

  assert {
    condition = jsonencode(data.aws_iam_policy_document.trust.statement[0].condition) == jsonencode([{
      test     = "StringEquals"
      values   = ["123456789012"]
      variable = "aws:SourceAccount"
    }])
    error_message = "The trust must be conditioned on aws:SourceAccount = this account."
  }
}

run "send_only_to_its_single_target" {
  command = plan

  assert {
    condition = toset(flatten([
      for d in [
        data.aws_iam_policy_document.targets,
        data.aws_iam_policy_document.dead_letter,
        data.aws_iam_policy_document.kms,
        ] : [
        for s in d.statement : "${s.sid} | ${join(",", sort(s.actions))} | ${join(",", sort(s.resources))}"
      ]
      ])) == toset([
      "SendToTargetQueues | sqs:SendMessage | arn:aws:sqs:us-east-1:123456789012:orders",
      "SendToDeadLetterQueues | sqs:SendMessage | arn:aws:sqs:us-east-1:123456789012:orders-dlq",
    ])
    error_message = "The scheduler role may only send to its target queue (and dead-letter to the DLQ)."
  }

  assert {
    condition     = aws_scheduler_schedule_group.this.name == "orders-retries" && aws_iam_role.this.name == "orders-retries-scheduler"
    error_message = "Group and role names follow the module name."
  }

  assert {
    condition     = output.schedule_arn_pattern == "arn:aws:scheduler:us-east-1:123456789012:schedule/orders-retries/*"
    error_message = "The schedule ARN pattern covers exactly the group's schedules."
  }

  assert {
    condition     = aws_scheduler_schedule_group.this.tags == tomap({ team = "orders" }) && aws_iam_role.this.tags == tomap({ team = "orders" })
    error_message = "Every taggable resource carries the tags."
  }
}

run "self_healing_targets_and_keys" {
  command = plan

  variables {
    target_topic_arns    = ["arn:aws:sns:us-east-1:123456789012:orders-events"]
    target_function_arns = ["arn:aws:lambda:us-east-1:123456789012:function:orders-worker"]
    kms_key_arns         = ["arn:aws:kms:us-east-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab"]
  }

  assert {
    condition = toset(flatten([
      for d in [
        data.aws_iam_policy_document.targets,
        data.aws_iam_policy_document.dead_letter,
        data.aws_iam_policy_document.kms,
        ] : [
        for s in d.statement : "${s.sid} | ${join(",", sort(s.actions))} | ${join(",", sort(s.resources))}"
      ]
      ])) == toset([
      "SendToTargetQueues | sqs:SendMessage | arn:aws:sqs:us-east-1:123456789012:orders",
      "PublishToTargetTopics | sns:Publish | arn:aws:sns:us-east-1:123456789012:orders-events",
      "InvokeTargetFunctions | lambda:InvokeFunction | arn:aws:lambda:us-east-1:123456789012:function:orders-worker",
      "SendToDeadLetterQueues | sqs:SendMessage | arn:aws:sqs:us-east-1:123456789012:orders-dlq",
      "UseTargetKeys | kms:Decrypt,kms:GenerateDataKey | arn:aws:kms:us-east-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab",
    ])
    error_message = "Topic, function and key permissions are scoped to exactly the given ARNs."
  }
}

run "needs_a_target" {
  command = plan

  variables {
    target_queue_arns = []
  }

  expect_failures = [aws_iam_role_policy.execution]
}

run "target_must_be_a_queue_arn" {
  command = plan

  variables {
    target_queue_arns = ["orders"]
  }

  expect_failures = [var.target_queue_arns]
}

run "dead_letter_queue_must_be_standard" {
  command = plan

  variables {
    target_queue_arns      = ["arn:aws:sqs:us-east-1:123456789012:orders.fifo"]
    dead_letter_queue_arns = ["arn:aws:sqs:us-east-1:123456789012:orders-dlq.fifo"]
  }

  expect_failures = [var.dead_letter_queue_arns]
}
