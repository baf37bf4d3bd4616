output "alarm_arns" {
  description = "ARN of each alarm by concern: dlq_depth, schedule_dlq_depth, exhausted_depth, oldest_message_age, function_errors, delivery_failed, exhausted_rate, records_failing, <role>_expiry (only those whose inputs were given)."
  value       = local.alarm_arns
}

output "alarm_names" {
  description = "Name of each alarm by concern (the keys of alarm_arns)."
  value = merge(
    { for concern, alarm in aws_cloudwatch_metric_alarm.this : concern => alarm.alarm_name },
    { for alarm in aws_cloudwatch_metric_alarm.exhausted_rate : "exhausted_rate" => alarm.alarm_name },
    { for alarm in aws_cloudwatch_metric_alarm.records_failing : "records_failing" => alarm.alarm_name },
    { for role, alarm in aws_cloudwatch_metric_alarm.expiry : "${role}_expiry" => alarm.alarm_name },
  )
}

output "records_failing_timing" {
  description = "native-retry: the records-failing alarm against the window it must beat, in seconds: period_seconds (its period, at least the visibility timeout), fires_within_seconds (after a record's first failed receive: one period, plus a minute for SQS to publish and one to evaluate) and dlq_after_seconds (max_receive_count x visibility timeout, when SQS moves a failing record to the DLQ). null without that alarm."
  value = local.records_failing ? {
    period_seconds       = local.failing_period
    fires_within_seconds = local.failing_fires_within
    dlq_after_seconds    = local.redrive_window
  } : null
}

output "dashboard_name" {
  description = "Name of the CloudWatch dashboard."
  value       = aws_cloudwatch_dashboard.this.dashboard_name
}

output "dashboard_arn" {
  description = "ARN of the CloudWatch dashboard."
  value       = aws_cloudwatch_dashboard.this.dashboard_arn
}

output "expiry_alarms" {
  description = "The expiry alarm of each terminal queue, by role: retention_seconds, lead_seconds (max(1 day, 20 % of retention)), threshold_seconds (retention - lead, at least 60) and period_seconds. Empty with archive_enabled."
  value       = { for role, e in local.expiry : role => merge(e, { period_seconds = local.expiry_period }) }
}
