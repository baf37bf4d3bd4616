output "function" {
  description = "The aws_lambda_function as planned or applied (its callers' tests read its attributes)."
  value       = aws_lambda_function.this
}

output "function_name" {
  description = "The function's name."
  value       = aws_lambda_function.this.function_name
}

output "function_arn" {
  description = "The function's ARN."
  value       = aws_lambda_function.this.arn
}

output "role_arn" {
  description = "The execution role's ARN: created, or brought (role.arn)."
  value       = local.role_arn
}

output "role_name" {
  description = "The execution role's name."
  value       = local.role_name
}

output "role_created" {
  description = "Whether the module created the role (role.arn was null)."
  value       = local.create_role
}

output "iam" {
  description = "The IAM objects as planned: the roles and policies created (lists, empty with a brought role) and the policy documents of the function's own concerns (for the callers' tests)."
  value = {
    roles          = aws_iam_role.this
    policies       = aws_iam_role_policy.this
    extra_policies = aws_iam_role_policy.extra
    documents = {
      trust   = data.aws_iam_policy_document.trust
      logs    = data.aws_iam_policy_document.logs
      xray    = data.aws_iam_policy_document.xray
      network = data.aws_iam_policy_document.network
      extra   = data.aws_iam_policy_document.extra
    }
  }
}

output "policy_json" {
  description = "Everything the function needs: the caller's policy_json with its logs, traces and VPC network interfaces (what a brought role must be given)."
  value       = data.aws_iam_policy_document.this.json
}

output "extra_policy_json" {
  description = "The extra statements' policy (role.extra_statements), or null without any."
  value       = length(var.role.extra_statements) > 0 ? data.aws_iam_policy_document.extra.json : null
}

output "log_group_name" {
  description = "The function's log group, /aws/lambda/<name>."
  value       = aws_cloudwatch_log_group.this.name
}

output "log_group_arn" {
  description = "The log group's ARN."
  value       = aws_cloudwatch_log_group.this.arn
}

output "log_group" {
  description = "The aws_cloudwatch_log_group as planned or applied."
  value       = aws_cloudwatch_log_group.this
}

output "permissions" {
  description = "The statements the module adds for the function itself ({sid, actions, resources}: logs, traces, network interfaces), for the callers' role_permissions."
  value = flatten([
    for d in [data.aws_iam_policy_document.logs, data.aws_iam_policy_document.xray, data.aws_iam_policy_document.network] :
    [for s in(d.statement == null ? [] : d.statement) : { sid = s.sid, actions = sort(s.actions), resources = sort(s.resources) }]
  ])
}
