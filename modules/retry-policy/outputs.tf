# Terraform does not let a variable's validation use values derived from that variable (it is a cycle),
# so the problems are computed once in main.tf and enforced here, one precondition per kind of problem.
# Every message line names the field at fault, e.g. retry_policy.rules[1]: unknown field "retyr".
output "policy_json" {
  description = "The policy as the function receives it in SERVERLESS_RETRY_POLICY: the fields given, nulls dropped (the function applies the same defaults)."
  value       = local.policy_json

  precondition {
    condition     = length(local.problems.structure) == 0
    error_message = "Invalid retry policy:\n${join("\n", local.problems.structure)}"
  }
  precondition {
    condition     = length(local.problems.unknown) == 0
    error_message = "Invalid retry policy (a misspelt field would otherwise be ignored):\n${join("\n", local.problems.unknown)}"
  }
  precondition {
    condition     = length(local.problems.budget) == 0
    error_message = "Invalid retry policy budget:\n${join("\n", local.problems.budget)}"
  }
  precondition {
    condition     = length(local.problems.backoff) == 0
    error_message = "Invalid retry policy backoff:\n${join("\n", local.problems.backoff)}"
  }
  precondition {
    condition     = length(local.problems.cap) == 0
    error_message = "Invalid retry policy backoff (a rule's backoff inherits the fields it leaves unset from the policy's):\n${join("\n", local.problems.cap)}"
  }
  precondition {
    condition     = length(local.problems.matching) == 0
    error_message = "Invalid retry policy rule:\n${join("\n", local.problems.matching)}"
  }
  precondition {
    condition     = length(local.problems.switches) == 0
    error_message = "Invalid retry policy:\n${join("\n", local.problems.switches)}"
  }
}

output "problems" {
  description = "Every problem found in the policy, one line each naming the field (empty when valid). The plan fails on policy_json's preconditions when this is not empty."
  value       = flatten([for group in ["structure", "unknown", "budget", "backoff", "cap", "matching", "switches"] : local.problems[group]])
}

output "effective_policy" {
  description = "The policy with every default applied and each rule's backoff merged over the policy's: what the function will run."
  value       = local.effective
}

output "transport" {
  description = "How retries travel on this queue: the policy's transport, or for a FIFO queue `visibility` (ordered) / `scheduler` (unordered, except visibility and sqs-hops as given)."
  value       = local.transport
}

output "needs_scheduler" {
  description = "Whether some retry can go through EventBridge Scheduler (mirrors serverless_retry.config.needs_scheduler); sqs-hops, sqs-delay and visibility never do on a standard queue."
  value       = local.needs_scheduler
}

output "max_attempts" {
  description = "The largest max_attempts over the policy and its retrying rules: no message is attempted more often."
  value       = local.max_attempts
}

output "max_delay_seconds" {
  description = "Upper bound of any single retry delay, in seconds (caps, Retry-After and the transport's clamp applied)."
  value       = local.max_delay_seconds
}

output "max_total_wait_seconds" {
  description = "Upper bound of the total wait between the first failure and the last attempt, in seconds: the sum of the largest possible delay of every retry (bounded per strategy as the README says), or max_age_seconds plus one delay when that is smaller. Processing time is not included."
  value       = local.max_total_wait_seconds
}

output "schema" {
  description = "The policy language: for each scope (policy, backoff, rule, ...) its fields with type, range and allowed values."
  value       = local.field_specs
}
