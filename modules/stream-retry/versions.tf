terraform {
  # 1.6: optional() defaults, lifecycle preconditions and `terraform test` are all needed.
  required_version = ">= 1.6"

  required_providers {
    aws = {
      source = "hashicorp/aws"
      # 5.70 is the first release that can tag an event source mapping; no upper bound so 6.x works too.
      version = ">= 5.70"
    }
  }
}
