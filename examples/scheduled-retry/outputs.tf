output "queue_url" {
  description = "Send orders here."
  value       = module.orders.queue_url
}

output "queue_arn" {
  description = "ARN of the orders queue."
  value       = module.orders.queue_arn
}

output "dlq_url" {
  description = "The orders queue's DLQ."
  value       = module.orders.dlq_url
}

output "dlq_arn" {
  description = "ARN of the orders queue's DLQ."
  value       = module.orders.dlq_arn
}

output "exhausted_queue_url" {
  description = "Orders given up on, each with the reason."
  value       = module.orders.exhausted_queue_url
}

output "exhausted_queue_arn" {
  description = "ARN of the retry-exhausted queue."
  value       = module.orders.exhausted_queue_arn
}

output "function_name" {
  description = "The consumer function."
  value       = module.orders.function_name
}

output "consumer_role_name" {
  description = "The consumer function's role."
  value       = module.orders.consumer_role_name
}

output "schedule_group_name" {
  description = "Schedule group of retries longer than 15 minutes."
  value       = module.orders.schedule_group_name
}

output "scheduler_role_arn" {
  description = "Role the retry schedules run as."
  value       = module.orders.scheduler_role_arn
}

output "claims_table_name" {
  description = "The claims table the module created: one retry chain per message."
  value       = module.orders.claims_table_name
}

output "claims_table_arn" {
  description = "ARN of the claims table."
  value       = module.orders.claims_table_arn
}

output "retry_policy_json" {
  description = "The policy the consumer runs with (SERVERLESS_RETRY_POLICY)."
  value       = module.orders.retry_policy_json
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
  description = "The archiver draining the exhausted queue and the DLQ into the archive, or null with archive_enabled = false."
  value       = var.archive_enabled ? module.archive[0].archiver_function_name : null
}
