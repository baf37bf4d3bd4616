output "queue_url" {
  description = "URL of the source queue."
  value       = aws_sqs_queue.source.url
}

output "queue_arn" {
  description = "ARN of the source queue."
  value       = aws_sqs_queue.source.arn
}

output "queue_name" {
  description = "Name of the source queue."
  value       = aws_sqs_queue.source.name
}

output "dlq_url" {
  description = "URL of the source queue's dead-letter queue."
  value       = aws_sqs_queue.dlq.url
}

output "dlq_arn" {
  description = "ARN of the source queue's dead-letter queue (for a standard source also the dead-letter target of retry schedules)."
  value       = aws_sqs_queue.dlq.arn
}

output "dlq_name" {
  description = "Name of the dead-letter queue."
  value       = aws_sqs_queue.dlq.name
}

output "schedule_dlq_arn" {
  description = "ARN of the dead-letter target of retry schedules: a standard queue, as EventBridge Scheduler requires. The DLQ for a standard source; `<name>-schedule-dlq` for a FIFO source."
  value       = var.fifo ? aws_sqs_queue.schedule_dlq[0].arn : aws_sqs_queue.dlq.arn
}

output "schedule_dlq_url" {
  description = "URL of the dead-letter target of retry schedules."
  value       = var.fifo ? aws_sqs_queue.schedule_dlq[0].url : aws_sqs_queue.dlq.url
}

output "schedule_dlq_name" {
  description = "Name of the dead-letter target of retry schedules."
  value       = var.fifo ? aws_sqs_queue.schedule_dlq[0].name : aws_sqs_queue.dlq.name
}

output "exhausted_queue_url" {
  description = "URL of the retry-exhausted queue (null with exhausted_queue = false)."
  value       = one(aws_sqs_queue.exhausted[*].url)
}

output "exhausted_queue_arn" {
  description = "ARN of the retry-exhausted queue (null with exhausted_queue = false)."
  value       = one(aws_sqs_queue.exhausted[*].arn)
}

output "exhausted_queue_name" {
  description = "Name of the retry-exhausted queue (null with exhausted_queue = false)."
  value       = one(aws_sqs_queue.exhausted[*].name)
}

output "visibility_timeout_seconds" {
  description = "Visibility timeout of the source queue (the consumer module checks it against the function timeout)."
  value       = var.visibility_timeout_seconds
}

output "max_message_size" {
  description = "Maximum message size of the source queue in bytes (the consumer's envelope size guard)."
  value       = var.max_message_size
}

output "exhausted_max_message_size" {
  description = "Maximum message size of the retry-exhausted queue in bytes."
  value       = local.exhausted_max_message_size
}

output "message_retention_seconds" {
  description = "Retention of the source queue: a message retried in place must reach its last attempt before it."
  value       = var.message_retention_seconds
}

output "max_receive_count" {
  description = "Receives before SQS moves a message to the DLQ: with an in-place transport it must exceed the policy's max_attempts."
  value       = var.max_receive_count
}

output "content_based_deduplication" {
  description = "Whether the FIFO source deduplicates by content (null for a standard queue): a Scheduler SQS target needs it."
  value       = var.fifo ? var.content_based_deduplication : null
}

output "fifo" {
  description = "Whether the queues are FIFO queues."
  value       = var.fifo
}

output "kms_key_arn" {
  description = "The KMS key encrypting the queues, or null for SQS-managed SSE."
  value       = var.kms_key_arn
}

output "producer_policy_json" {
  description = "IAM policy JSON a producer attaches to send to the source queue (and use its KMS key)."
  value       = data.aws_iam_policy_document.producer.json
}
