terraform {
  required_version = ">= 1.6"

  required_providers {
    aws = {
      source = "hashicorp/aws"
      # 5.40: pipes log_configuration and every other argument used here; no upper bound so 6.x works too.
      version = ">= 5.40"
    }
  }
}
