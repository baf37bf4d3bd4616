terraform {
  # 1.6: optional() defaults, lifecycle preconditions and `terraform test` are all needed.
  required_version = ">= 1.6"

  required_providers {
    aws = {
      source  = "hashicorp/aws"
      version = ">= 5.70"
    }
  }
}
