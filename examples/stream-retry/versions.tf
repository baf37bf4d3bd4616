terraform {
  required_version = ">= 1.6"

  required_providers {
    aws = {
      source = "hashicorp/aws"
      # 5.70: the first release that can tag an event source mapping; no upper bound so 6.x works too.
      version = ">= 5.70"
    }
  }
}
