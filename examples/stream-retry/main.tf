# Orders are put on a Kinesis stream of two shards; stream_example.processor:process handles each. A
# record that fails with a retryable error is handed to the retry queue and retried later (the shard
# goes on at once); an invalid one goes straight to the retry-exhausted queue with the reason. A
# batch the function itself cannot hand off lands in the on-failure queue.
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

  retry_policy = {
    max_attempts = 4
    backoff      = { strategy = "exponential", base_seconds = 5, max_seconds = 300, jitter = "full" }
  }

  environment = var.environment
  tags        = var.tags
}
