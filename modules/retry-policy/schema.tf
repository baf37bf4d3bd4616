# The retry policy language (docs/retry-policy.md), one entry per field: where it may appear, its JSON type
# and its range. serverless_retry.policy (Python) checks the same fields at cold start;
# tests/terraform/test_policy_parity.py runs one corpus of policies through both and asserts they agree
# on what is accepted, on the field blamed, and on the policy that results.
#
# type: integer | number (JSON number; integer = integral) | boolean | string choice | object | array |
#       regex (a string that RE2 compiles) | class_name (an exception class name, optionally dotted).
# group: which precondition of outputs.tf reports a problem with the field.
locals {
  transports = ["auto", "sqs-delay", "scheduler", "visibility", "sqs-hops"]
  strategies = ["fixed", "linear", "exponential"]
  jitters    = ["none", "full", "equal", "decorrelated"]
  unmatched  = ["retry", "dead-letter"]

  # No delay or cap may exceed a year (backoff.MAX_DELAY_SECONDS); no budget 10000 (MAX_ATTEMPTS_LIMIT).
  delay_limit    = 31536000
  attempts_limit = 10000

  field_specs = {
    policy = {
      max_attempts      = { group = "budget", type = "integer", min = 1, max = local.attempts_limit, choices = null }
      max_age_seconds   = { group = "budget", type = "integer", min = 1, max = null, choices = null }
      backoff           = { group = "structure", type = "object", min = null, max = null, choices = null }
      rules             = { group = "structure", type = "array", min = null, max = null, choices = null }
      unmatched         = { group = "switches", type = "choice", min = null, max = null, choices = local.unmatched }
      transport         = { group = "switches", type = "choice", min = null, max = null, choices = local.transports }
      honor_retry_after = { group = "switches", type = "boolean", min = null, max = null, choices = null }
    }
    # The policy's backoff and every rule's backoff alike.
    backoff = {
      strategy     = { group = "backoff", type = "choice", min = null, max = null, choices = local.strategies }
      base_seconds = { group = "backoff", type = "number", min = 0, max = local.delay_limit, choices = null }
      multiplier   = { group = "backoff", type = "number", min = 1, max = null, choices = null }
      max_seconds  = { group = "backoff", type = "number", min = 0, max = local.delay_limit, choices = null }
      jitter       = { group = "backoff", type = "choice", min = null, max = null, choices = local.jitters }
    }
    # Each element of rules.
    rules = {
      "*" = { group = "structure", type = "object", min = null, max = null, choices = null }
    }
    rule = {
      errors            = { group = "matching", type = "array", min = null, max = null, choices = null }
      http_status       = { group = "matching", type = "array", min = null, max = null, choices = null }
      message_regex     = { group = "matching", type = "regex", min = null, max = null, choices = null }
      retry             = { group = "switches", type = "boolean", min = null, max = null, choices = null }
      max_attempts      = { group = "budget", type = "integer", min = 1, max = local.attempts_limit, choices = null }
      backoff           = { group = "structure", type = "object", min = null, max = null, choices = null }
      honor_retry_after = { group = "switches", type = "boolean", min = null, max = null, choices = null }
    }
    errors = {
      "*" = { group = "matching", type = "class_name", min = null, max = null, choices = null }
    }
    http_status = {
      "*" = { group = "matching", type = "integer", min = 100, max = 599, choices = null }
    }
  }

  # Python's defaults (RetryPolicy, Backoff, Rule): what an unset field means.
  defaults = {
    max_attempts      = 5
    max_age_seconds   = null
    unmatched         = "retry"
    transport         = "auto"
    honor_retry_after = true
    backoff           = { strategy = "exponential", base_seconds = 10, multiplier = 2, max_seconds = 3600, jitter = "none" }
    rule              = { retry = true, honor_retry_after = false }
  }

  # Exception class names as Python's str.isidentifier() accepts them, dot-separated (module.Qualname).
  identifier = "[_\\p{L}\\p{Nl}][_\\p{L}\\p{Nl}\\p{Mn}\\p{Mc}\\p{Nd}\\p{Pc}]*"
  class_name = "^${local.identifier}(\\.${local.identifier})*$"

  # The JSON kind of a value from the first character of its JSON text. Terraform converts between
  # primitive types on its own (tostring(5) is "5", tonumber("5") is 5), so this is the only way to
  # refuse max_attempts = "5" as Python does.
  kinds = { "\"" = "string", "{" = "object", "[" = "array", "t" = "boolean", "f" = "boolean", "n" = "null" }
}
