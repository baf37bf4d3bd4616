output "failure_queue_url" {
  description = "URL of the failure queue: the sources' on-failure destination records."
  value       = module.failure_queue.queue_url
}

output "failure_queue_arn" {
  description = "ARN of the failure queue."
  value       = module.failure_queue.queue_arn
}

output "failure_queue_name" {
  description = "Name of the failure queue (the QueueName dimension of its CloudWatch metrics)."
  value       = module.failure_queue.queue_name
}

output "failure_dlq_url" {
  description = "URL of the failure queue's DLQ: records whose enrichment or PutEvents failed max_receive_count times."
  value       = module.failure_queue.dlq_url
}

output "failure_dlq_arn" {
  description = "ARN of the failure queue's DLQ."
  value       = module.failure_queue.dlq_arn
}

output "failure_dlq_name" {
  description = "Name of the failure queue's DLQ."
  value       = module.failure_queue.dlq_name
}

output "exhausted_queue_url" {
  description = "URL of the retry-exhausted queue: one ExhaustedRecord {outcome, reason, detail} per event given up on."
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

output "rules_dlq_url" {
  description = "URL of the dead-letter queue of every rule target (events EventBridge could not hand to the redrive function or the retry-exhausted queue)."
  value       = aws_sqs_queue.dlq["rules"].url
}

output "rules_dlq_arn" {
  description = "ARN of the rule targets' dead-letter queue."
  value       = aws_sqs_queue.dlq["rules"].arn
}

output "rules_dlq_name" {
  description = "Name of the rule targets' dead-letter queue."
  value       = aws_sqs_queue.dlq["rules"].name
}

output "redrive_dlq_url" {
  description = "URL of the redrive function's on-failure destination: retry events whose redrive kept failing, with the error."
  value       = aws_sqs_queue.dlq["redrive"].url
}

output "redrive_dlq_arn" {
  description = "ARN of the redrive function's on-failure destination queue."
  value       = aws_sqs_queue.dlq["redrive"].arn
}

output "redrive_dlq_name" {
  description = "Name of the redrive function's on-failure destination queue."
  value       = aws_sqs_queue.dlq["redrive"].name
}

output "schedule_dlq_url" {
  description = "URL of the retry schedules' dead-letter queue (schedules the Scheduler could not deliver)."
  value       = aws_sqs_queue.dlq["schedule"].url
}

output "schedule_dlq_arn" {
  description = "ARN of the retry schedules' dead-letter queue (SERVERLESS_RETRY_DLQ_ARN of the redrive function)."
  value       = aws_sqs_queue.dlq["schedule"].arn
}

output "schedule_dlq_name" {
  description = "Name of the retry schedules' dead-letter queue."
  value       = aws_sqs_queue.dlq["schedule"].name
}

output "queue_names" {
  description = "Every queue's name by role (failure, failure_dlq, exhausted, rules_dlq, redrive_dlq, schedule_dlq), e.g. for monitoring."
  value = {
    failure      = module.failure_queue.queue_name
    failure_dlq  = module.failure_queue.dlq_name
    exhausted    = aws_sqs_queue.exhausted.name
    rules_dlq    = aws_sqs_queue.dlq["rules"].name
    redrive_dlq  = aws_sqs_queue.dlq["redrive"].name
    schedule_dlq = aws_sqs_queue.dlq["schedule"].name
  }
}

output "event_bus_name" {
  description = "Name of the event bus the pipe puts failure events on."
  value       = aws_cloudwatch_event_bus.this.name
}

output "event_bus_arn" {
  description = "ARN of the event bus."
  value       = aws_cloudwatch_event_bus.this.arn
}

output "pipe_name" {
  description = "Name of the pipe (failure queue -> enrichment -> bus)."
  value       = aws_pipes_pipe.failures.name
}

output "pipe_arn" {
  description = "ARN of the pipe."
  value       = aws_pipes_pipe.failures.arn
}

output "pipe_role_arn" {
  description = "ARN of the pipe's execution role."
  value       = aws_iam_role.pipe.arn
}

output "pipe_role_name" {
  description = "Name of the pipe's execution role."
  value       = aws_iam_role.pipe.name
}

output "pipe_log_group_name" {
  description = "The pipe's log group."
  value       = aws_cloudwatch_log_group.pipe.name
}

output "enrichment_function_name" {
  description = "Name of the enrichment function."
  value       = module.enrichment.function_name
}

output "enrichment_function_arn" {
  description = "ARN of the enrichment function."
  value       = module.enrichment.function_arn
}

output "enrichment_role_arn" {
  description = "ARN of the enrichment function's role (the one created, or enrichment_role_arn)."
  value       = module.enrichment.role_arn
}

output "enrichment_role_name" {
  description = "Name of the enrichment function's role."
  value       = module.enrichment.role_name
}

output "enrichment_policy_json" {
  description = "The IAM policy (JSON) of what the enrichment function needs: attached to the role the module creates; attach it to your own with enrichment_role_arn."
  value       = module.enrichment.policy_json
}

output "enrichment_log_group_name" {
  description = "The enrichment function's log group."
  value       = module.enrichment.log_group_name
}

output "redrive_function_name" {
  description = "Name of the redrive function."
  value       = module.redrive.function_name
}

output "redrive_function_arn" {
  description = "ARN of the redrive function."
  value       = module.redrive.function_arn
}

output "redrive_role_arn" {
  description = "ARN of the redrive function's role (the one created, or redrive_role_arn)."
  value       = module.redrive.role_arn
}

output "redrive_role_name" {
  description = "Name of the redrive function's role."
  value       = module.redrive.role_name
}

output "redrive_policy_json" {
  description = "The IAM policy (JSON) of what the redrive function needs: attached to the role the module creates; attach it to your own with redrive_role_arn."
  value       = module.redrive.policy_json
}

output "redrive_log_group_name" {
  description = "The redrive function's log group."
  value       = module.redrive.log_group_name
}

output "schedule_group_name" {
  description = "Schedule group of delayed retries."
  value       = module.scheduler.schedule_group_name
}

output "scheduler_role_name" {
  description = "Name of the role the retry schedules run as."
  value       = module.scheduler.scheduler_role_name
}

output "scheduler_role_arn" {
  description = "Role the retry schedules run as: may only invoke the source functions (and publish to their topics in topic mode)."
  value       = module.scheduler.scheduler_role_arn
}

output "retry_rule_names" {
  description = "Name of each source's retry rule, by source key."
  value       = { for k, r in aws_cloudwatch_event_rule.retry : k => r.name }
}

output "exhausted_rule_names" {
  description = "Name of each exhausted rule, by rule key (budget-<source key>, do-not-retry, invalid-record, unknown-source)."
  value       = { for k, r in aws_cloudwatch_event_rule.exhausted : k => r.name }
}

output "event_patterns" {
  description = "Every rule's event pattern (JSON) by rule name: the retry rules and the exhausted rules, which together match every failure event exactly once."
  value = merge(
    { for k, r in aws_cloudwatch_event_rule.retry : r.name => local.retry_pattern_json[k] },
    { for k, r in aws_cloudwatch_event_rule.exhausted : r.name => local.exhausted_pattern_json[k] },
  )
}

output "retry_limits" {
  description = "Each source's retry limit by source key: retries (redrives) before the budget rule sends a failure to the retry-exhausted queue."
  value       = local.retry_limit
}

output "source_function_arns" {
  description = "Unqualified ARN of each source function, by source key."
  value       = { for k, s in local.sources : k => s.function_arn }
}

output "redrive_environment" {
  description = "The redrive function's environment (the wiring, for inspection and local runs)."
  value       = local.redrive_environment.applied
}

output "enrichment_environment" {
  description = "The enrichment function's environment."
  value       = local.enrichment_environment.applied
}

output "failure_records_bucket" {
  description = "The bucket of the sources with on_failure = \"s3\" (name, arn, and the prefix Lambda writes under: aws/lambda/async/<function-name>/), or null when no source writes there."
  value = local.records_on ? {
    name   = local.records_bucket_name
    arn    = local.records_bucket_arn
    prefix = local.records_prefix
  } : null
}

output "failure_records_read_policy_json" {
  description = "For whoever runs serverless-retry redrive --to-function on records whose payload is in S3: s3:GetObject on each S3 source's aws/lambda/async/<function-name>/* of the bucket (kms:Decrypt on failure_records.kms_key_arn when given), the enrichment's and redrive's own read; null when no source writes there."
  value       = local.records_on ? data.aws_iam_policy_document.read_records.json : null
}
