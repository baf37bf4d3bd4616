output "queue_url" {
  description = "URL of the source queue: producers send here."
  value       = module.queue.queue_url
}

output "queue_arn" {
  description = "ARN of the source queue."
  value       = module.queue.queue_arn
}

output "queue_name" {
  description = "Name of the source queue (the QueueName dimension of its CloudWatch metrics)."
  value       = module.queue.queue_name
}

output "dlq_url" {
  description = "URL of the source queue's DLQ."
  value       = module.queue.dlq_url
}

output "dlq_arn" {
  description = "ARN of the source queue's DLQ."
  value       = module.queue.dlq_arn
}

output "dlq_name" {
  description = "Name of the source queue's DLQ."
  value       = module.queue.dlq_name
}

output "schedule_dlq_arn" {
  description = "ARN of the retry schedules' dead-letter queue: standard, as EventBridge Scheduler requires (the DLQ for a standard source, `<name>-schedule-dlq` for a FIFO one)."
  value       = module.queue.schedule_dlq_arn
}

output "schedule_dlq_url" {
  description = "URL of the retry schedules' dead-letter queue."
  value       = module.queue.schedule_dlq_url
}

output "schedule_dlq_name" {
  description = "Name of the retry schedules' dead-letter queue (alarm on it: the monitoring module's queues.schedule_dlq)."
  value       = module.queue.schedule_dlq_name
}

output "exhausted_queue_url" {
  description = "URL of the retry-exhausted queue (envelopes that say why they were given up)."
  value       = module.queue.exhausted_queue_url
}

output "exhausted_queue_arn" {
  description = "ARN of the retry-exhausted queue."
  value       = module.queue.exhausted_queue_arn
}

output "exhausted_queue_name" {
  description = "Name of the retry-exhausted queue."
  value       = module.queue.exhausted_queue_name
}

output "producer_policy_json" {
  description = "IAM policy JSON a producer attaches to send to the source queue."
  value       = module.queue.producer_policy_json
}

output "function_name" {
  description = "Name of the consumer function."
  value       = module.consumer.function_name
}

output "function_arn" {
  description = "ARN of the consumer function."
  value       = module.consumer.function_arn
}

output "consumer_role_arn" {
  description = "ARN of the consumer's execution role (the one created, or role_arn)."
  value       = module.consumer.role_arn
}

output "consumer_role_name" {
  description = "Name of the consumer's execution role: attach your processor's own policies to it."
  value       = module.consumer.role_name
}

output "consumer_policy_json" {
  description = "The IAM policy (JSON) of what the consumer needs: attached to the role the module creates; attach it to your own role with role_arn."
  value       = module.consumer.policy_json
}

output "log_group_arn" {
  description = "ARN of the consumer's log group."
  value       = module.consumer.log_group_arn
}

output "event_source_mapping_uuid" {
  description = "UUID of the consumer's SQS event source mapping (disable it to pause the consumer)."
  value       = module.consumer.event_source_mapping_uuid
}

output "log_group_name" {
  description = "The consumer's log group."
  value       = module.consumer.log_group_name
}

output "schedule_group_name" {
  description = "Schedule group of long retries, or null when the policy never needs the Scheduler."
  value       = local.needs_scheduler ? module.scheduler[0].schedule_group_name : null
}

output "scheduler_role_arn" {
  description = "Execution role of the retry schedules, or null when the policy never needs the Scheduler."
  value       = local.needs_scheduler ? module.scheduler[0].scheduler_role_arn : null
}

output "scheduler_role_name" {
  description = "Name of the retry schedules' execution role, or null when the policy never needs the Scheduler."
  value       = local.needs_scheduler ? module.scheduler[0].scheduler_role_name : null
}

output "schedule_group_arn" {
  description = "ARN of the schedule group of long retries, or null when the policy never needs the Scheduler."
  value       = local.needs_scheduler ? module.scheduler[0].schedule_group_arn : null
}

output "retry_policy_json" {
  description = "The retry policy as the function receives it in SERVERLESS_RETRY_POLICY (the fields given, nulls dropped)."
  value       = module.policy.policy_json
}

output "transport" {
  description = "How retries travel: the policy's transport, or for FIFO visibility (ordered) / scheduler (unordered)."
  value       = module.policy.transport
}

output "max_total_wait_seconds" {
  description = "Upper bound of the waits between a message's first failure and its last attempt (modules/retry-policy explains the bound)."
  value       = module.policy.max_total_wait_seconds
}

output "consumer_permissions" {
  description = "What the consumer's role may do ({sid, actions, resources} per statement), for review."
  value       = module.consumer.role_permissions
}

output "scheduler_permissions" {
  description = "What the retry schedules' role may do ({sid, actions, resources} per statement), or [] without a Scheduler."
  value       = local.needs_scheduler ? module.scheduler[0].role_permissions : []
}

output "claims_table_name" {
  description = "Name of the claims table (one retry chain per message), or null with claims.enabled = false."
  value       = module.consumer.claims_table_name
}

output "claims_table_arn" {
  description = "ARN of the claims table, or null with claims.enabled = false."
  value       = module.consumer.claims_table_arn
}

output "operator_function_name" {
  description = "The operator's redrive function (invoke with the options of serverless-retry redrive as JSON), or null when operator_redrive is off."
  value       = local.operator ? module.operator[0].function_name : null
}

output "operator_function_arn" {
  description = "ARN of the operator's redrive function, or null when operator_redrive is off."
  value       = local.operator ? module.operator[0].function_arn : null
}

output "operator_role_arn" {
  description = "ARN of the operator's redrive function's role (created, or operator_redrive.role_arn), or null when operator_redrive is off."
  value       = local.operator ? module.operator[0].role_arn : null
}

output "operator_role_name" {
  description = "Name of the operator's redrive function's role, or null when operator_redrive is off."
  value       = local.operator ? module.operator[0].role_name : null
}

output "operator_policy_json" {
  description = "The IAM policy (JSON) of what the operator's redrive function needs (attach it to operator_redrive.role_arn when you bring the role), or null when operator_redrive is off."
  value       = local.operator ? module.operator[0].policy_json : null
}

output "operator_log_group_name" {
  description = "The operator's redrive function's log group, or null when operator_redrive is off."
  value       = local.operator ? module.operator[0].log_group_name : null
}
