# One Lambda function with its log group and (unless one is brought) its role: what the consumer, the
# scheduled-retry operator and the self-healing functions have in common. Each caller keeps what is its
# own (its IAM concerns as policy_json, its environment, its preconditions) and its resources around.
locals {
  create_role = var.role.arn == null
  role_arn    = local.create_role ? aws_iam_role.this[0].arn : var.role.arn
  role_name   = local.create_role ? aws_iam_role.this[0].name : element(split("/", var.role.arn), length(split("/", var.role.arn)) - 1)
}

resource "aws_cloudwatch_log_group" "this" {
  #checkov:skip=CKV_AWS_338:Retention is the callers' log_retention_days input (default 30 days of operational logs); set 365 or more where a compliance regime requires it.
  #checkov:skip=CKV_AWS_158:CloudWatch Logs encrypts every log group at rest with keys it manages; a customer managed key is the callers' logs_kms_key_arn input (its key policy must allow logs.<region>.amazonaws.com), not a default, because the module cannot write that key policy for a key it does not own.
  name              = "/aws/lambda/${var.function.name}"
  retention_in_days = var.logs.retention_days
  kms_key_id        = var.logs.kms_key_arn
  tags              = var.tags
}

resource "aws_lambda_function" "this" {
  #checkov:skip=CKV_AWS_116:No caller is invoked asynchronously without a destination: the SQS event source mapping and the pipe invoke synchronously (failed records go to the queue's own DLQ), an operator invokes the redrive synchronously, and the self-healing redrive sends its failures to an on-failure destination (its DLQ), which keeps the error with the event.
  #checkov:skip=CKV_AWS_117:VPC is opt-in (the vpc input): the functions call only AWS APIs (SQS, Lambda, SNS, EventBridge Scheduler, DynamoDB, CloudWatch Logs), which in a VPC need a NAT gateway or endpoints; run them there when your code must reach private resources.
  #checkov:skip=CKV_AWS_272:Code signing is opt-in (code_signing_config_arn): it needs an AWS Signer profile and a zip signed by a Signer job, which a locally built package cannot be; when it is null, the zip deployed is the one whose SHA-256 the plan pins (source_code_hash).
  #checkov:skip=CKV_AWS_115:Concurrency is the callers' reserved_concurrency input, unset by default: the consumer's is bounded by its event source mapping (maximum_concurrency), the enrichment's by the pipe, the redrive's by the failure rate; a reservation would only take capacity from the account's other functions.
  function_name = var.function.name
  description   = var.function.description
  role          = local.role_arn
  # The code: a local zip (its hash redeploys a new build) or an S3 object (a new version, or the
  # hash given, redeploys); the layers come on top, e.g. serverless_retry from the layer module.
  filename          = var.code.package
  s3_bucket         = try(var.code.s3_package.bucket, null)
  s3_key            = try(var.code.s3_package.key, null)
  s3_object_version = try(var.code.s3_package.object_version, null)
  source_code_hash  = var.code.package != null ? filebase64sha256(var.code.package) : try(var.code.s3_package.source_code_hash, null)
  layers            = var.code.layers
  handler           = var.function.handler
  runtime           = var.function.runtime
  architectures     = var.function.architectures
  memory_size       = var.function.memory_size
  timeout           = var.function.timeout
  kms_key_arn       = var.function.environment_kms_key_arn

  code_signing_config_arn = var.function.code_signing_config_arn

  reserved_concurrent_executions = var.function.reserved_concurrency

  environment {
    variables = var.function.environment
  }

  tracing_config {
    mode = var.function.tracing ? "Active" : "PassThrough"
  }

  dynamic "vpc_config" {
    for_each = var.function.vpc == null ? [] : [var.function.vpc]
    content {
      subnet_ids         = vpc_config.value.subnet_ids
      security_group_ids = vpc_config.value.security_group_ids
    }
  }

  tags = var.tags

  # The log group must exist first (or Lambda creates one without retention), and the role's
  # permissions before the first invocation (in a VPC, Lambda creates the network interfaces with them).
  depends_on = [aws_cloudwatch_log_group.this, aws_iam_role_policy.this, aws_iam_role_policy.extra]

  lifecycle {
    precondition {
      condition     = (var.code.package == null) != (var.code.s3_package == null)
      error_message = "Give the function's code once: package (a local zip) or s3_package (an S3 object), not ${var.code.package == null ? "neither" : "both"}."
    }

    precondition {
      condition     = var.role.arn == null || length(var.role.extra_statements) == 0
      error_message = "The extra policy statements add to the role the module creates, but a role ARN brings your own (${var.role.inputs}): attach your statements to it yourself (next to the policy_json output), or leave the role ARN null."
    }
  }
}
