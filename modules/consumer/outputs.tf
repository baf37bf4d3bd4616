output "function_name" {
  description = "Name of the consumer function."
  value       = aws_lambda_function.this.function_name
}

output "function_arn" {
  description = "ARN of the consumer function."
  value       = aws_lambda_function.this.arn
}

output "role_arn" {
  description = "ARN of the function's execution role."
  value       = aws_iam_role.this.arn
}

output "role_name" {
  description = "Name of the function's execution role."
  value       = aws_iam_role.this.name
}

output "log_group_name" {
  description = "The function's log group."
  value       = aws_cloudwatch_log_group.this.name
}

output "event_source_mapping_uuid" {
  description = "UUID of the SQS event source mapping."
  value       = aws_lambda_event_source_mapping.this.uuid
}

output "environment" {
  description = "The environment variables the function is given (the wiring, for inspection and local runs)."
  value       = local.environment
}
