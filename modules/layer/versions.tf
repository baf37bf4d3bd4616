terraform {
  # 1.6: optional() defaults, lifecycle preconditions and `terraform test` are all needed.
  required_version = ">= 1.6"

  required_providers {
    aws = {
      source = "hashicorp/aws"
      # The same floor as the other modules (5.70), so one provider version serves them all; no upper
      # bound so 6.x works too.
      version = ">= 5.70"
    }
  }
}
