output "orders_topic_arn" {
  description = "Publish orders here: the charge (fails with HTTP 503) and the audit (never fails) functions are subscribed."
  value       = aws_sns_topic.example["orders"].arn
}

output "invoices_topic_arn" {
  description = "Publish invoices here: the invoice function (KeyError without customer_id) is subscribed."
  value       = aws_sns_topic.example["invoices"].arn
}

output "charge_function_name" {
  description = "Function one: retried on HTTP 503, 3 retries with backoff."
  value       = aws_lambda_function.example["charge"].function_name
}

output "invoice_function_name" {
  description = "Function two: KeyError, never retried."
  value       = aws_lambda_function.example["invoice"].function_name
}

output "audit_function_name" {
  description = "The second subscriber of the orders topic: never fails, sees each order once."
  value       = aws_lambda_function.example["audit"].function_name
}

output "function_names" {
  description = "The example's three functions by role (charge, invoice, audit)."
  value       = { for k, f in aws_lambda_function.example : k => f.function_name }
}

output "failure_queue_url" {
  description = "The sources' on-failure destination records."
  value       = module.heal.failure_queue_url
}

output "failure_dlq_url" {
  description = "Failure records the pipe could not process."
  value       = module.heal.failure_dlq_url
}

output "exhausted_queue_url" {
  description = "Every event given up on, as {outcome, reason, detail}."
  value       = module.heal.exhausted_queue_url
}

output "rules_dlq_url" {
  description = "Events EventBridge could not deliver to a rule target."
  value       = module.heal.rules_dlq_url
}

output "redrive_dlq_url" {
  description = "Retry events whose redrive kept failing, with the error."
  value       = module.heal.redrive_dlq_url
}

output "schedule_dlq_url" {
  description = "Retry schedules the Scheduler could not deliver."
  value       = module.heal.schedule_dlq_url
}

output "queue_names" {
  description = "Every queue of the self-healing module by role."
  value       = module.heal.queue_names
}

output "event_bus_name" {
  description = "The bus failure events go on."
  value       = module.heal.event_bus_name
}

output "pipe_name" {
  description = "The pipe: failure queue -> enrichment -> bus."
  value       = module.heal.pipe_name
}

output "enrichment_function_name" {
  description = "The pipe's enrichment function."
  value       = module.heal.enrichment_function_name
}

output "redrive_function_name" {
  description = "The retry rules' target."
  value       = module.heal.redrive_function_name
}

output "schedule_group_name" {
  description = "Schedule group of delayed retries."
  value       = module.heal.schedule_group_name
}

output "scheduler_role_arn" {
  description = "Role the retry schedules run as."
  value       = module.heal.scheduler_role_arn
}

output "retry_limits" {
  description = "Retries each source gets before the budget rule gives up (charge: 3, invoice: 2)."
  value       = module.heal.retry_limits
}

output "retry_rule_names" {
  description = "Each source's retry rule."
  value       = module.heal.retry_rule_names
}

output "exhausted_rule_names" {
  description = "The exhausted rules (budget-<source>, do-not-retry, invalid-record, unknown-source)."
  value       = module.heal.exhausted_rule_names
}

output "event_patterns" {
  description = "Every rule's event pattern by rule name."
  value       = module.heal.event_patterns
}

output "dashboard_name" {
  description = "The CloudWatch dashboard of every queue and function, or null with monitoring = false."
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
  description = "The archiver draining the retry-exhausted queue and the DLQs into the archive, or null with archive_enabled = false."
  value       = var.archive_enabled ? module.archive[0].archiver_function_name : null
}
