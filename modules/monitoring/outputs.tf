output "alarm_arns" {
  description = "ARN of each alarm by concern: dlq_depth, schedule_dlq_depth, exhausted_depth, oldest_message_age, function_errors, delivery_failed, exhausted_rate (only those whose inputs were given)."
  value       = local.alarm_arns
}

output "alarm_names" {
  description = "Name of each alarm by concern (the keys of alarm_arns)."
  value = merge(
    { for concern, alarm in aws_cloudwatch_metric_alarm.this : concern => alarm.alarm_name },
    { for alarm in aws_cloudwatch_metric_alarm.exhausted_rate : "exhausted_rate" => alarm.alarm_name },
  )
}

output "dashboard_name" {
  description = "Name of the CloudWatch dashboard."
  value       = aws_cloudwatch_dashboard.this.dashboard_name
}

output "dashboard_arn" {
  description = "ARN of the CloudWatch dashboard."
  value       = aws_cloudwatch_dashboard.this.dashboard_arn
}
