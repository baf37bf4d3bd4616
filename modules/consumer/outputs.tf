output "function_name" {
  description = "Name of the consumer function."
  value       = module.function.function_name
}

output "function_arn" {
  description = "ARN of the consumer function."
  value       = module.function.function_arn
}

output "role_arn" {
  description = "ARN of the function's execution role: the one the module created, or role_arn."
  value       = module.function.role_arn
}

output "role_name" {
  description = "Name of the function's execution role (attach more policies to it by this name)."
  value       = module.function.role_name
}

output "role_created" {
  description = "Whether the module created the role (false with role_arn: attach policy_json to yours)."
  value       = module.function.role_created
}

output "policy_json" {
  description = "The IAM policy (JSON) of every statement the function needs, on exact ARNs: what the module attaches to the role it creates, and what to attach to your own role with role_arn. policy_statements are not in it."
  value       = module.function.policy_json
}

output "log_group_name" {
  description = "The function's log group."
  value       = module.function.log_group_name
}

output "log_group_arn" {
  description = "ARN of the function's log group."
  value       = module.function.log_group_arn
}

output "event_source_mapping_uuid" {
  description = "UUID of the SQS event source mapping."
  value       = aws_lambda_event_source_mapping.this.uuid
}

output "environment" {
  description = "The environment variables the function is given (the wiring, for inspection and local runs)."
  value       = local.environment
}

output "retry_policy_json" {
  description = "The retry policy as the function receives it in SERVERLESS_RETRY_POLICY (nulls dropped); null with a plain handler."
  value       = local.native ? null : module.policy.policy_json
}

output "needs_scheduler" {
  description = "Whether the policy can send retries through EventBridge Scheduler on this queue (then scheduler must be given); false with a plain handler."
  value       = !local.native && module.policy.needs_scheduler
}

output "transport" {
  description = "How retries travel on this queue (the policy's transport; for a FIFO queue visibility when ordered, scheduler when unordered); null with a plain handler."
  value       = local.native ? null : module.policy.transport
}

output "max_attempts" {
  description = "The policy's largest max_attempts (policy or a retrying rule); null with a plain handler."
  value       = local.native ? null : module.policy.max_attempts
}

output "max_total_wait_seconds" {
  description = "Upper bound of the waits between a message's first failure and its last attempt (see modules/retry-policy); null with a plain handler."
  value       = local.native ? null : module.policy.max_total_wait_seconds
}

output "environment_bytes" {
  description = "Size of the function's environment in bytes as checked against Lambda's 4096 at plan time (an upper bound while queue URLs and ARNs are unknown)."
  value       = local.environment_bytes
}

output "role_permissions" {
  description = "Every statement of the function role's policy ({sid, actions, resources}), for review: what the consumer may do, on exactly which ARNs."
  value = concat(flatten([
    for d in [
      data.aws_iam_policy_document.consume,
      data.aws_iam_policy_document.in_place,
      data.aws_iam_policy_document.send,
      data.aws_iam_policy_document.schedule,
      data.aws_iam_policy_document.pass_role,
      data.aws_iam_policy_document.kms,
      data.aws_iam_policy_document.claims,
      data.aws_iam_policy_document.claims_kms,
      data.aws_iam_policy_document.idempotency,
    ] : [for s in(d.statement == null ? [] : d.statement) : { sid = s.sid, actions = sort(s.actions), resources = sort(s.resources) }]
  ]), module.function.permissions)
}

output "claims_table_name" {
  description = "Name of the claims table (one retry chain per message): the one created, or the one given in claims.table_arn; null with claims.enabled = false or a plain handler."
  value       = local.claims_table_name
}

output "claims_table_arn" {
  description = "ARN of the claims table (the one created, or claims.table_arn); null with claims.enabled = false or a plain handler."
  value       = local.claims_table_arn
}

output "recursive_loop" {
  description = "The function's recursive loop detection setting: `Allow` (set by aws_lambda_function_recursion_config, the consumer sends retries to its own queue) or `Terminate` (Lambda's default, nothing set)."
  value       = local.recursive_loop
}
