locals {
  # Pointed at a local emulator: every service the modules use goes there, with credentials only the
  # emulator accepts, so a real account can never be touched by mistake.
  emulated = var.aws_endpoint_url != null
}

provider "aws" {
  region = var.aws_region

  access_key = local.emulated ? "testing" : null
  secret_key = local.emulated ? "testing" : null

  skip_credentials_validation = local.emulated
  skip_requesting_account_id  = local.emulated
  skip_metadata_api_check     = local.emulated
  skip_region_validation      = local.emulated
  # The emulator answers on an IP address: bucket names go in the path, not the host name.
  s3_use_path_style = local.emulated

  # Left out when AWS_ENDPOINT_URL already names the emulator: the provider checks this block (a set
  # of 303 attributes) at ~2 s of CPU on every configure, twice in a plan, three times in an apply.
  dynamic "endpoints" {
    for_each = local.emulated && !var.aws_endpoint_url_in_environment ? [var.aws_endpoint_url] : []
    content {
      cloudwatch     = endpoints.value
      cloudwatchlogs = endpoints.value
      dynamodb       = endpoints.value
      eventbridge    = endpoints.value
      iam            = endpoints.value
      kms            = endpoints.value
      lambda         = endpoints.value
      pipes          = endpoints.value
      scheduler      = endpoints.value
      sns            = endpoints.value
      s3             = endpoints.value
      sqs            = endpoints.value
      sts            = endpoints.value
    }
  }
}
