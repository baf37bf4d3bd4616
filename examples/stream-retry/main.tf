# Orders are put on a Kinesis stream of two shards; stream_example.processor:process handles each. A
# record that fails with a retryable error is handed to the retry queue and retried later (the shard
# goes on at once); an invalid one goes straight to the retry-exhausted queue with the reason. A
# batch the function itself cannot hand off lands in the on-failure queue.
locals {
  # Shared by the consumer and its blocking twin: only the stream and the ordering differ.
  retry_policy = {
    max_attempts = 4
    backoff      = { strategy = "exponential", base_seconds = 5, max_seconds = 300, jitter = "full" }
  }
  blocking_name = "${var.name}-blocking"
}

resource "aws_kinesis_stream" "orders" {
  name             = var.name
  shard_count      = 2
  retention_period = 24
  # Server-side encryption with the AWS managed key: no key policy to write, no kms:Decrypt to grant.
  encryption_type = "KMS"
  kms_key_id      = "alias/aws/kinesis"

  stream_mode_details {
    stream_mode = "PROVISIONED"
  }

  tags = var.tags
}

module "orders" {
  source = "../../modules/stream-retry"

  name      = var.name
  package   = coalesce(var.package, "${path.module}/../../dist/examples/stream-retry.zip")
  processor = "stream_example.processor:process"
  timeout   = var.function_timeout

  stream = {
    arn                    = aws_kinesis_stream.orders.arn
    starting_position      = "TRIM_HORIZON"
    batch_size             = 50
    parallelization_factor = 2
  }
  ordering = var.ordering

  retry_policy = local.retry_policy

  environment = var.environment
  tags        = var.tags
}

# blocking_twin: the same stream and consumer again, with Lambda's native behaviour (the shard waits
# at a failed record), for side-by-side comparisons such as `serverless-retry demo stream`.
resource "aws_kinesis_stream" "orders_blocking" {
  count = var.blocking_twin ? 1 : 0

  name             = local.blocking_name
  shard_count      = aws_kinesis_stream.orders.shard_count
  retention_period = aws_kinesis_stream.orders.retention_period
  encryption_type  = "KMS"
  kms_key_id       = "alias/aws/kinesis"

  stream_mode_details {
    stream_mode = "PROVISIONED"
  }

  tags = var.tags
}

module "orders_blocking" {
  source = "../../modules/stream-retry"
  count  = var.blocking_twin ? 1 : 0

  name      = local.blocking_name
  package   = coalesce(var.package, "${path.module}/../../dist/examples/stream-retry.zip")
  processor = "stream_example.processor:process"
  timeout   = var.function_timeout

  stream = {
    arn                    = aws_kinesis_stream.orders_blocking[0].arn
    starting_position      = "TRIM_HORIZON"
    batch_size             = 50
    parallelization_factor = 2
  }
  ordering = "blocking"

  retry_policy = local.retry_policy

  environment = var.environment
  tags        = var.tags
}
