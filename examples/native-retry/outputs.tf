output "queue_url" {
  description = "Send orders here."
  value       = module.queue.queue_url
}

output "queue_arn" {
  description = "ARN of the orders queue."
  value       = module.queue.queue_arn
}

output "dlq_url" {
  description = "The orders queue's DLQ: orders that failed 5 receives."
  value       = module.queue.dlq_url
}

output "dlq_arn" {
  description = "ARN of the orders queue's DLQ."
  value       = module.queue.dlq_arn
}

output "function_name" {
  description = "The consumer function."
  value       = module.consumer.function_name
}

output "role_name" {
  description = "The consumer function's role."
  value       = module.consumer.role_name
}

output "handler" {
  description = "The deployed handler: native_orders.<release>.handler."
  value       = "native_orders.${var.release}.handler"
}

output "release" {
  description = "The deployed release (buggy or fixed)."
  value       = var.release
}

output "idempotency_table_name" {
  description = "Powertools idempotency records, one per booked order_id."
  value       = aws_dynamodb_table.idempotency.name
}

output "ledger_table_name" {
  description = "The business table: one entry per booking (order_id, entry_id)."
  value       = aws_dynamodb_table.ledger.name
}

output "visibility_timeout_seconds" {
  description = "How long after a receive a failed order comes back (6 x the function timeout)."
  value       = module.queue.visibility_timeout_seconds
}

output "max_receive_count" {
  description = "Receives of an order before SQS moves it to the DLQ."
  value       = module.queue.max_receive_count
}

output "message_retention_seconds" {
  description = "Retention of the orders queue."
  value       = module.queue.message_retention_seconds
}

output "idempotency_expires_after_seconds" {
  description = "How long a booking is remembered: the source queue's retention plus the DLQ's."
  value       = local.idempotency_expires_after_seconds
}

output "dashboard_name" {
  description = "The CloudWatch dashboard, or null with monitoring = false."
  value       = var.monitoring ? module.monitoring[0].dashboard_name : null
}

output "alarm_arns" {
  description = "The alarms by concern ({} with monitoring = false)."
  value       = var.monitoring ? module.monitoring[0].alarm_arns : {}
}

output "archive_location" {
  description = "`s3://<bucket>/<prefix>` of the archive (what the CLI's --archive takes), or null with archive_enabled = false."
  value       = var.archive_enabled ? module.archive[0].archive_location : null
}

output "archiver_function_name" {
  description = "The archiver draining the DLQ into the archive, or null with archive_enabled = false."
  value       = var.archive_enabled ? module.archive[0].archiver_function_name : null
}
