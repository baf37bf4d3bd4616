# Native SQS retry, done right: orders arrive on an SQS queue; a plain Powertools BatchProcessor
# handler (src/native_orders) books each into a ledger table, idempotently. A failed record goes back
# to the queue as a batch item failure; SQS hands it out again when its visibility timeout ends, and
# moves it to the DLQ after 5 receives. `release` switches the deployed code between the buggy release
# (every order fails) and the fix: with the fix applied in time, the backlog drains by itself.

locals {
  visibility_timeout_seconds    = 6 * var.function_timeout # AWS Lambda's guidance for SQS sources
  message_retention_seconds     = 345600                   # 4 days
  dlq_message_retention_seconds = 1209600                  # 14 days
  max_receive_count             = 5
  # A copy of an order can arrive while any copy of its message can still be delivered: within the
  # source queue's retention, or later through a redrive from the DLQ. Bookings are remembered as long.
  idempotency_expires_after_seconds = local.message_retention_seconds + local.dlq_message_retention_seconds
  package                           = coalesce(var.package, "${path.module}/../../dist/examples/native-retry.zip")
}

module "queue" {
  source = "../../modules/queue"

  name                          = var.name
  visibility_timeout_seconds    = local.visibility_timeout_seconds
  message_retention_seconds     = local.message_retention_seconds
  dlq_message_retention_seconds = local.dlq_message_retention_seconds
  max_receive_count             = local.max_receive_count
  # A plain handler never gives up by itself: the DLQ is the only place a failing order ends.
  exhausted_queue = false

  tags = var.tags
}

# Powertools idempotency records, one per order_id (partition key `id`, TTL on `expiration`).
resource "aws_dynamodb_table" "idempotency" {
  #checkov:skip=CKV_AWS_28:Idempotency records are derived state that expires on its own (TTL); a point-in-time restore of them would bring back stale in-progress records, not data worth recovering.
  #checkov:skip=CKV_AWS_119:Encrypted at rest with the AWS-owned key (DynamoDB's default); add server_side_encryption with a customer-managed key where a compliance regime requires one.
  name         = "${var.name}-idempotency"
  billing_mode = "PAY_PER_REQUEST"
  hash_key     = "id"

  attribute {
    name = "id"
    type = "S"
  }

  ttl {
    attribute_name = "expiration"
    enabled        = true
  }

  tags = var.tags
}

# The business table: one entry per booking (order_id, entry_id). It appends, so a second booking of
# an order would be a second entry: only the idempotency layer prevents it.
resource "aws_dynamodb_table" "ledger" {
  #checkov:skip=CKV_AWS_119:Encrypted at rest with the AWS-owned key (DynamoDB's default); add server_side_encryption with a customer-managed key where a compliance regime requires one.
  name         = "${var.name}-ledger"
  billing_mode = "PAY_PER_REQUEST"
  hash_key     = "order_id"
  range_key    = "entry_id"

  attribute {
    name = "order_id"
    type = "S"
  }

  attribute {
    name = "entry_id"
    type = "S"
  }

  point_in_time_recovery {
    enabled = true
  }

  tags = var.tags
}

module "consumer" {
  source = "../../modules/consumer"

  name    = var.name
  package = local.package
  # A plain handler of our own: no processor, no retry policy, nothing of serverless_retry wired.
  handler = "native_orders.${var.release}.handler"
  timeout = var.function_timeout

  queue = {
    arn                        = module.queue.queue_arn
    url                        = module.queue.queue_url
    name                       = module.queue.queue_name
    visibility_timeout_seconds = module.queue.visibility_timeout_seconds
    dlq_arn                    = module.queue.dlq_arn
    message_retention_seconds  = module.queue.message_retention_seconds
    max_receive_count          = module.queue.max_receive_count
    max_message_size           = module.queue.max_message_size
  }

  idempotency_table_arn = aws_dynamodb_table.idempotency.arn
  environment = merge(var.environment, {
    IDEMPOTENCY_TABLE                 = aws_dynamodb_table.idempotency.name
    IDEMPOTENCY_EXPIRES_AFTER_SECONDS = tostring(local.idempotency_expires_after_seconds)
    LEDGER_TABLE                      = aws_dynamodb_table.ledger.name
  })

  tags = var.tags
}

# Concern: booking orders. The handler appends ledger entries and does nothing else with the table.
data "aws_iam_policy_document" "ledger" {
  statement {
    sid       = "BookLedgerEntries"
    actions   = ["dynamodb:PutItem"]
    resources = [aws_dynamodb_table.ledger.arn]
  }
}

resource "aws_iam_role_policy" "ledger" {
  name   = "book-ledger-entries"
  role   = module.consumer.role_name
  policy = data.aws_iam_policy_document.ledger.json
}

# Native retry's alarms, worded for a plain handler: records failing (receives that ended without a
# delete), which fires within a visibility timeout and two minutes while a failing order still has
# 5 x the visibility timeout before the DLQ; the source's oldest message (2 x the visibility timeout);
# the function's errors; anything in the DLQ (an order that failed 5 receives).
module "monitoring" {
  source = "../../modules/monitoring"
  count  = var.monitoring ? 1 : 0

  name    = var.name
  pattern = "native-retry"
  queues = {
    source = module.queue.queue_name
    dlq    = module.queue.dlq_name
  }
  function_name = module.consumer.function_name
  source_redrive = {
    visibility_timeout_seconds = module.queue.visibility_timeout_seconds
    max_receive_count          = module.queue.max_receive_count
  }
  functions = { for a in module.archive : "archiver" => { function_name = a.archiver_function_name, role = "other", alarm_errors = true } }
  # With the archive the DLQ is a buffer: no alarm for its retention.
  archive_enabled = var.archive_enabled

  alarm_actions = var.alarm_actions
  ok_actions    = var.alarm_actions
  tags          = var.tags
}

# The dead set in S3 (archive_enabled): an archiver drains the DLQ into the bucket as SQS moves orders
# there, so an order that failed 5 receives outlives the DLQ's 14 days; a redrive from the archive
# sends it back to the orders queue.
module "archive" {
  source = "../../modules/archive"
  count  = var.archive_enabled ? 1 : 0

  name    = var.name
  package = local.package
  sources = [
    { key = "dlq", queue_arn = module.queue.dlq_arn, place = "dlq", source_queue_arn = module.queue.queue_arn },
  ]
  tags = var.tags
}
