output "id" {
  description = "The bucket's name, from the bucket resource (for the caller's resources that must wait for it)."
  value       = aws_s3_bucket.this.id
}

output "arn" {
  description = "The bucket's ARN."
  value       = local.arn
}

output "resources" {
  description = "The resources as planned, by what they set (versioning a list, empty without it): for the callers' tests."
  value = {
    bucket              = aws_s3_bucket.this
    public_access_block = aws_s3_bucket_public_access_block.this
    ownership_controls  = aws_s3_bucket_ownership_controls.this
    encryption          = aws_s3_bucket_server_side_encryption_configuration.this
    versioning          = aws_s3_bucket_versioning.this
    lifecycle           = aws_s3_bucket_lifecycle_configuration.this
    policy              = aws_s3_bucket_policy.this
  }
}
