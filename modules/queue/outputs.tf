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
  description = "ARN of the source queue's dead-letter queue (also the dead-letter target of retry schedules)."
  value       = aws_sqs_queue.dlq.arn
}

output "dlq_name" {
  description = "Name of the dead-letter queue."
  value       = aws_sqs_queue.dlq.name
}

output "exhausted_queue_url" {
  description = "URL of the retry-exhausted queue."
  value       = aws_sqs_queue.exhausted.url
}

output "exhausted_queue_arn" {
  description = "ARN of the retry-exhausted queue."
  value       = aws_sqs_queue.exhausted.arn
}

output "exhausted_queue_name" {
  description = "Name of the retry-exhausted queue."
  value       = aws_sqs_queue.exhausted.name
}

output "visibility_timeout_seconds" {
  description = "Visibility timeout of the source queue (the consumer module checks it against the function timeout)."
  value       = var.visibility_timeout_seconds
}

output "max_message_size" {
  description = "Maximum message size of the queues in bytes (the consumer's envelope size guard)."
  value       = var.max_message_size
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
