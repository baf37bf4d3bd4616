output "schedule_group_name" {
  description = "Name of the schedule group retries are scheduled in."
  value       = aws_scheduler_schedule_group.this.name
}

output "schedule_group_arn" {
  description = "ARN of the schedule group."
  value       = aws_scheduler_schedule_group.this.arn
}

output "schedule_arn_pattern" {
  description = "ARN pattern matching every schedule of the group (arn:...:schedule/<group>/*), for the consumer's IAM policy."
  value       = "${replace(aws_scheduler_schedule_group.this.arn, ":schedule-group/", ":schedule/")}/*"
}

output "scheduler_role_arn" {
  description = "ARN of the execution role schedules run as (the consumer passes it to CreateSchedule)."
  value       = aws_iam_role.this.arn
}

output "scheduler_role_name" {
  description = "Name of the execution role."
  value       = aws_iam_role.this.name
}

output "role_permissions" {
  description = "Every statement of the execution role's policy ({sid, actions, resources}), for review: where schedules may deliver, on exactly which ARNs."
  value = flatten([
    for d in [data.aws_iam_policy_document.targets, data.aws_iam_policy_document.dead_letter, data.aws_iam_policy_document.kms] :
    [for s in(d.statement == null ? [] : d.statement) : { sid = s.sid, actions = sort(s.actions), resources = sort(s.resources) }]
  ])
}
