terraform {
  # 1.6: startswith(), regexall() with RE2 syntax, output preconditions and `terraform test`.
  # No provider: this module creates nothing, it only reads, checks and renders a policy.
  required_version = ">= 1.6"
}
