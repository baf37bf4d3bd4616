output "arn" {
  description = "ARN of the layer version (with its version number): what the `layers` input of consumer, scheduled-retry and self-healing takes."
  value       = aws_lambda_layer_version.this.arn
}

output "layer_arn" {
  description = "ARN of the layer without the version (for permissions that cover every version)."
  value       = aws_lambda_layer_version.this.layer_arn
}

output "name" {
  description = "Name of the layer."
  value       = aws_lambda_layer_version.this.layer_name
}

output "version" {
  description = "Version number of the layer version published."
  value       = aws_lambda_layer_version.this.version
}

output "code_size" {
  description = "Size of the layer zip in bytes, as Lambda reports it."
  value       = aws_lambda_layer_version.this.source_code_size
}

output "compatible_architectures" {
  description = "Instruction sets the layer version is for."
  value       = aws_lambda_layer_version.this.compatible_architectures
}

output "compatible_runtimes" {
  description = "Runtimes the layer version is for."
  value       = aws_lambda_layer_version.this.compatible_runtimes
}
