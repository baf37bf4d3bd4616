output "bucket_name" {
  description = "The archive's bucket: made by the module, or yours (bucket.name)."
  value       = local.bucket_name
}

output "bucket_arn" {
  description = "The bucket's ARN."
  value       = local.bucket_arn
}

output "bucket_created" {
  description = "Whether the module made the bucket (bucket was null)."
  value       = local.create_bucket
}

output "prefix" {
  description = "The key prefix; records are under `<prefix>dead/`."
  value       = var.prefix
}

output "archive_location" {
  description = "`s3://<bucket>/<prefix>`: what the CLI's --archive takes."
  value       = "s3://${local.bucket_name}/${var.prefix}"
}

output "archiver_function_name" {
  description = "The archiver function's name (`<name>-archiver`)."
  value       = module.archiver.function_name
}

output "archiver_function_arn" {
  description = "The archiver function's ARN."
  value       = module.archiver.function_arn
}

output "role_arn" {
  description = "The archiver's execution role: created, or yours (role_arn)."
  value       = module.archiver.role_arn
}

output "policy_json" {
  description = "Everything the archiver's role needs (what a role brought with role_arn must be given)."
  value       = module.archiver.policy_json
}

output "mapping_uuids" {
  description = "The UUID of each source's event source mapping, by its key (sources[*].key, default `<place>-<index>`)."
  value       = { for k, m in aws_lambda_event_source_mapping.this : k => m.uuid }
}

output "operator_policy_json" {
  description = "The least-privilege policy of an operator who inspects, redrives and discards from the archive: ListBucket under the prefix, Get/Put/DeleteObject under `<prefix>dead/`, GetQueueUrl and SendMessage on the sources' source_queue_arn, and the keys."
  value       = data.aws_iam_policy_document.operator.json
}

output "lifecycle_note" {
  description = "With your own bucket: the lifecycle rule to add so that records expire after expiration_days (null when the module made the bucket, which has it)."
  value       = local.lifecycle_note
}
