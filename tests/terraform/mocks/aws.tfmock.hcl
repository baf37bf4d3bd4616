# Shared defaults for `mock_provider "aws" { source = ".../tests/terraform/mocks" }` in every module's
# plan-level tests. A bare mock provider invents random strings for computed attributes, which are
# neither JSON policies nor ARNs; these give well-formed values, known already at plan time.

mock_data "aws_caller_identity" {
  defaults = {
    account_id = "123456789012"
    arn        = "arn:aws:iam::123456789012:user/terraform-test"
    user_id    = "AIDATERRAFORMTEST"
  }
}

mock_data "aws_iam_policy_document" {
  defaults = {
    json = "{\"Version\":\"2012-10-17\",\"Statement\":[]}"
  }
}

mock_resource "aws_sqs_queue" {
  override_during = plan
  defaults = {
    arn = "arn:aws:sqs:us-east-1:123456789012:mock-queue"
    url = "https://sqs.us-east-1.amazonaws.com/123456789012/mock-queue"
  }
}

mock_resource "aws_iam_role" {
  override_during = plan
  defaults = {
    arn = "arn:aws:iam::123456789012:role/mock-role"
  }
}

mock_resource "aws_scheduler_schedule_group" {
  override_during = plan
  defaults = {
    arn = "arn:aws:scheduler:us-east-1:123456789012:schedule-group/mock-group"
  }
}

mock_resource "aws_cloudwatch_log_group" {
  override_during = plan
  defaults = {
    arn = "arn:aws:logs:us-east-1:123456789012:log-group:/aws/lambda/mock-function"
  }
}

mock_resource "aws_lambda_function" {
  override_during = plan
  defaults = {
    arn = "arn:aws:lambda:us-east-1:123456789012:function:mock-function"
  }
}

mock_data "aws_partition" {
  defaults = {
    partition  = "aws"
    dns_suffix = "amazonaws.com"
  }
}

mock_data "aws_region" {
  defaults = {
    name = "us-east-1"
  }
}

mock_resource "aws_cloudwatch_metric_alarm" {
  override_during = plan
  defaults = {
    arn = "arn:aws:cloudwatch:us-east-1:123456789012:alarm:mock-alarm"
  }
}

mock_resource "aws_cloudwatch_dashboard" {
  override_during = plan
  defaults = {
    dashboard_arn = "arn:aws:cloudwatch::123456789012:dashboard/mock-dashboard"
  }
}

mock_resource "aws_sns_topic" {
  override_during = plan
  defaults = {
    arn = "arn:aws:sns:us-east-1:123456789012:mock-topic"
  }
}

mock_resource "aws_dynamodb_table" {
  override_during = plan
  defaults = {
    arn = "arn:aws:dynamodb:us-east-1:123456789012:table/mock-table"
  }
}
