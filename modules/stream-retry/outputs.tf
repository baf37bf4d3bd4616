output "function_name" {
  description = "Name of the function that consumes the stream and the retry queue."
  value       = module.retry.function_name
}

output "function_arn" {
  description = "ARN of the function."
  value       = module.retry.function_arn
}

output "consumer_role_name" {
  description = "Name of the function's execution role: attach your processor's own policies to it."
  value       = module.retry.consumer_role_name
}

output "consumer_role_arn" {
  description = "ARN of the function's execution role."
  value       = module.retry.consumer_role_arn
}

output "log_group_name" {
  description = "The function's log group."
  value       = module.retry.log_group_name
}

output "settings" {
  description = "The SERVERLESS_RETRY_* settings this module adds to the function's environment (the rest is modules/scheduled-retry's wiring)."
  value       = local.settings
}

output "stream_kind" {
  description = "The stream's kind: `kinesis` or `dynamodb` (given, or derived from its ARN)."
  value       = local.kind
}

output "event_source_mapping_uuid" {
  description = "UUID of the stream's event source mapping (disable it to pause reading the stream)."
  value       = aws_lambda_event_source_mapping.stream.uuid
}

output "retry_event_source_mapping_uuid" {
  description = "UUID of the retry queue's SQS event source mapping."
  value       = module.retry.event_source_mapping_uuid
}

output "retry_queue_url" {
  description = "URL of the retry queue: failed records wait here for their next attempt."
  value       = module.retry.queue_url
}

output "retry_queue_arn" {
  description = "ARN of the retry queue."
  value       = module.retry.queue_arn
}

output "dlq_url" {
  description = "URL of the retry queue's DLQ (retries whose next attempt could not be recorded)."
  value       = module.retry.dlq_url
}

output "dlq_arn" {
  description = "ARN of the retry queue's DLQ."
  value       = module.retry.dlq_arn
}

output "exhausted_queue_url" {
  description = "URL of the retry-exhausted queue: records given up on, each with the reason."
  value       = module.retry.exhausted_queue_url
}

output "exhausted_queue_arn" {
  description = "ARN of the retry-exhausted queue."
  value       = module.retry.exhausted_queue_arn
}

output "on_failure_destination_arn" {
  description = "Where Lambda sends a record of each stream batch it gives up on: the queue the module created, or on_failure_destination_arn."
  value       = local.destination_arn
}

output "on_failure_queue_url" {
  description = "URL of the on-failure queue the module created, or null with on_failure_destination_arn."
  value       = local.create_destination ? module.failures[0].queue_url : null
}

output "claims_table_name" {
  description = "Name of the claims table (one retry chain per record), or null with claims.enabled = false."
  value       = module.retry.claims_table_name
}

output "schedule_group_name" {
  description = "Schedule group of retries longer than 15 minutes, or null when the policy never needs the Scheduler."
  value       = module.retry.schedule_group_name
}

output "retry_policy_json" {
  description = "The retry policy as the function receives it in SERVERLESS_RETRY_POLICY."
  value       = module.retry.retry_policy_json
}

output "stream_policy_json" {
  description = "The IAM policy (JSON) the module attaches to the function's role for the stream and the on-failure destination (`serverless-retry-stream`)."
  value       = data.aws_iam_policy_document.stream.json
}

output "stream_permissions" {
  description = "What that policy allows ({sid, actions, resources} per statement), for review."
  value       = local.stream_permissions
}
