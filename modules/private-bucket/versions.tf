terraform {
  # 1.6: optional() defaults, lifecycle preconditions and `terraform test` are all needed.
  required_version = ">= 1.6"

  required_providers {
    aws = {
      source = "hashicorp/aws"
      # 5.70: the floor of the modules that call this one; every S3 resource used here
      # is older.
      version = ">= 5.70"
    }
  }
}
