# Plan-level tests of the policy module (no provider: it creates nothing). The parity test
# (tests/terraform/test_policy_parity.py) runs a larger corpus through this module and through Python.

run "defaults" {
  command = plan

  assert {
    condition     = output.policy_json == "{}" && output.problems == []
    error_message = "An empty policy renders as {} (the function applies the defaults): ${output.policy_json}"
  }

  assert {
    condition = alltrue([
      output.effective_policy.max_attempts == 5,
      output.effective_policy.backoff == { strategy = "exponential", base_seconds = 10, multiplier = 2, max_seconds = 3600, jitter = "none" },
      output.effective_policy.transport == "auto",
      output.effective_policy.honor_retry_after,
    ])
    error_message = "Defaults are Python's: ${jsonencode(output.effective_policy)}"
  }

  assert {
    # Retry-After is honoured by default, so each of the 4 retries may wait the full cap.
    condition     = output.max_attempts == 5 && output.max_delay_seconds == 3600 && output.max_total_wait_seconds == 4 * 3600
    error_message = "Bounds: ${output.max_attempts} attempts, ${output.max_delay_seconds} s, ${output.max_total_wait_seconds} s"
  }

  assert {
    condition     = output.needs_scheduler && output.transport == "auto"
    error_message = "A 3600 s cap with transport auto needs the Scheduler."
  }
}

run "rendered_as_given_without_nulls" {
  command = plan

  variables {
    retry_policy = {
      max_attempts    = 5
      max_age_seconds = null
      backoff         = { strategy = "exponential", base_seconds = 10, max_seconds = 3600, jitter = "full", multiplier = null }
      rules = [
        { errors = ["ThrottlingError"], http_status = [429, 503], honor_retry_after = true, backoff = { strategy = "fixed", base_seconds = 60 } },
        { errors = ["ValidationError"], retry = false, max_attempts = null },
        { message_regex = "^quota (exceeded|exhausted)\\b", backoff = {} },
      ]
    }
  }

  assert {
    condition = jsondecode(output.policy_json) == {
      max_attempts = 5
      backoff      = { strategy = "exponential", base_seconds = 10, max_seconds = 3600, jitter = "full" }
      rules = [
        { errors = ["ThrottlingError"], http_status = [429, 503], honor_retry_after = true, backoff = { strategy = "fixed", base_seconds = 60 } },
        { errors = ["ValidationError"], retry = false },
        { message_regex = "^quota (exceeded|exhausted)\\b", backoff = {} },
      ]
    }
    error_message = "Rendered as ${output.policy_json}"
  }

  assert {
    condition = alltrue([
      output.effective_policy.rules[0].backoff == { strategy = "fixed", base_seconds = 60, multiplier = 2, max_seconds = 3600, jitter = "full" },
      output.effective_policy.rules[1].backoff == null,
      output.effective_policy.rules[2].backoff == output.effective_policy.backoff,
    ])
    error_message = "A rule's backoff inherits what it leaves unset: ${jsonencode(output.effective_policy.rules)}"
  }
}

run "json_file_form" {
  command = plan

  variables {
    retry_policy = jsondecode("{\"max_attempts\": 3, \"rules\": [{\"http_status\": [503], \"max_attempts\": 7}], \"transport\": \"sqs-hops\"}")
  }

  assert {
    condition     = output.max_attempts == 7 && output.transport == "sqs-hops" && !output.needs_scheduler
    error_message = "sqs-hops never needs the Scheduler; the largest budget is the rule's."
  }
}

run "bounds_per_strategy" {
  command = plan

  variables {
    retry_policy = {
      max_attempts      = 4
      honor_retry_after = false
      backoff           = { strategy = "linear", base_seconds = 100, max_seconds = 250, jitter = "equal" }
      rules = [
        # fixed 7 s, attempts up to 6: its retries 4 and 5 are the only ones after the policy's budget.
        { errors = ["TimeoutError"], max_attempts = 6, backoff = { strategy = "fixed", base_seconds = 7 } },
        # never retried: does not count.
        { errors = ["KeyError"], retry = false, max_attempts = 50 },
      ]
    }
  }

  assert {
    # linear 100, 200, 250 (capped) for retries 1-3, then the fixed rule's 7 s for retries 4 and 5.
    condition     = output.max_attempts == 6 && output.max_total_wait_seconds == 100 + 200 + 250 + 7 + 7 && output.max_delay_seconds == 250
    error_message = "Bounds: ${output.max_attempts}, ${output.max_delay_seconds}, ${output.max_total_wait_seconds}"
  }
}

run "exponential_and_max_age" {
  command = plan

  variables {
    retry_policy = {
      max_attempts      = 20
      max_age_seconds   = 600
      honor_retry_after = false
      backoff           = { base_seconds = 1, multiplier = 3, max_seconds = 100 }
    }
  }

  assert {
    # 1, 3, 9, 27, 81, then 100 for retries 6..19 would sum to 1521; max_age 600 + one 100 s delay is less.
    condition     = output.max_total_wait_seconds == 700 && output.max_delay_seconds == 100 && !output.needs_scheduler
    error_message = "Bounds: ${output.max_delay_seconds}, ${output.max_total_wait_seconds}"
  }
}

run "decorrelated_bound" {
  command = plan

  variables {
    retry_policy = {
      max_attempts      = 5
      honor_retry_after = false
      backoff           = { base_seconds = 2, max_seconds = 100, jitter = "decorrelated" }
    }
  }

  assert {
    # U(base, 3 x previous), capped: at most 6, 18, 54, then 100.
    condition     = output.max_total_wait_seconds == 6 + 18 + 54 + 100
    error_message = "Bound: ${output.max_total_wait_seconds}"
  }
}

run "transport_clamps_the_bound" {
  command = plan

  variables {
    retry_policy = { transport = "sqs-delay", max_attempts = 3 }
  }

  assert {
    # Retry-After may ask for the 3600 s cap, but sqs-delay sends at most 900 s.
    condition     = output.max_delay_seconds == 900 && output.max_total_wait_seconds == 1800 && !output.needs_scheduler
    error_message = "Bounds: ${output.max_delay_seconds}, ${output.max_total_wait_seconds}"
  }
}

run "fifo_ordered_retries_in_place" {
  command = plan

  variables {
    fifo         = true
    retry_policy = { backoff = { max_seconds = 86400 } }
  }

  assert {
    condition     = output.transport == "visibility" && !output.needs_scheduler && output.max_delay_seconds == 43200
    error_message = "FIFO ordered: in place (visibility, clamped to 12 h), no Scheduler."
  }
}

run "fifo_unordered_uses_the_scheduler" {
  command = plan

  variables {
    fifo         = true
    fifo_order   = "unordered"
    retry_policy = { transport = "sqs-delay", backoff = { max_seconds = 60 } }
  }

  assert {
    condition     = output.transport == "scheduler" && output.needs_scheduler
    error_message = "A FIFO queue has no per-message delay: unordered retries go through the Scheduler."
  }
}

run "bad_fifo_order" {
  command = plan

  variables {
    fifo_order = "sorted"
  }

  expect_failures = [var.fifo_order]
}

# Each precondition of policy_json, by the kind of problem it reports.

run "not_an_object" {
  command = plan

  variables {
    retry_policy = ["max_attempts", 3]
  }

  expect_failures = [output.policy_json]
}

run "unknown_top_level_field" {
  command = plan

  variables {
    retry_policy = { max_attempt = 3 }
  }

  expect_failures = [output.policy_json]

  assert {
    condition     = output.problems == ["retry_policy: unknown field \"max_attempt\" (known fields: backoff, honor_retry_after, max_age_seconds, max_attempts, rules, transport, unmatched)"]
    error_message = "Problems: ${jsonencode(output.problems)}"
  }
}

run "unknown_rule_field" {
  command = plan

  variables {
    retry_policy = { rules = [{ errors = ["A"] }, { errors = ["ValidationError"], retyr = false }] }
  }

  expect_failures = [output.policy_json]

  assert {
    condition     = length(output.problems) == 1 && startswith(output.problems[0], "retry_policy.rules[1]: unknown field \"retyr\"")
    error_message = "Problems: ${jsonencode(output.problems)}"
  }
}

run "unknown_backoff_field" {
  command = plan

  variables {
    retry_policy = { rules = [{ errors = ["A"], backoff = { jiter = "full" } }] }
  }

  expect_failures = [output.policy_json]

  assert {
    condition     = length(output.problems) == 1 && startswith(output.problems[0], "retry_policy.rules[0].backoff: unknown field \"jiter\"")
    error_message = "Problems: ${jsonencode(output.problems)}"
  }
}

run "string_where_a_number_belongs" {
  command = plan

  variables {
    retry_policy = { max_attempts = "5" }
  }

  expect_failures = [output.policy_json]

  assert {
    condition     = output.problems == ["retry_policy.max_attempts: must be an integer, got string \"5\""]
    error_message = "Problems: ${jsonencode(output.problems)}"
  }
}

run "attempts_out_of_range" {
  command = plan

  variables {
    retry_policy = { rules = [{ errors = ["A"], max_attempts = 10001 }] }
  }

  expect_failures = [output.policy_json]
}

run "fractional_age" {
  command = plan

  variables {
    retry_policy = { max_age_seconds = 1.5 }
  }

  expect_failures = [output.policy_json]
}

run "bad_strategy" {
  command = plan

  variables {
    retry_policy = { backoff = { strategy = "fibonacci" } }
  }

  expect_failures = [output.policy_json]
}

run "bad_rule_jitter" {
  command = plan

  variables {
    retry_policy = { rules = [{ errors = ["A"], backoff = { jitter = "some" } }] }
  }

  expect_failures = [output.policy_json]
}

run "multiplier_below_one" {
  command = plan

  variables {
    retry_policy = { backoff = { multiplier = 0.5 } }
  }

  expect_failures = [output.policy_json]
}

run "delay_over_a_year" {
  command = plan

  variables {
    retry_policy = { backoff = { max_seconds = 31536001 } }
  }

  expect_failures = [output.policy_json]
}

run "rule_cap_below_inherited_base" {
  command = plan

  variables {
    retry_policy = { backoff = { base_seconds = 120 }, rules = [{ errors = ["TimeoutError"], backoff = { max_seconds = 60 } }] }
  }

  expect_failures = [output.policy_json]

  assert {
    condition     = output.problems == ["retry_policy.rules[0].backoff.max_seconds: must be >= base_seconds (120), got 60: it caps every delay"]
    error_message = "Problems: ${jsonencode(output.problems)}"
  }
}

run "base_above_inherited_cap" {
  command = plan

  variables {
    retry_policy = { backoff = { base_seconds = 5000 } }
  }

  expect_failures = [output.policy_json]

  assert {
    condition     = output.problems == ["retry_policy.backoff.base_seconds: must be <= max_seconds (3600, inherited), got 5000"]
    error_message = "Problems: ${jsonencode(output.problems)}"
  }
}

run "rule_without_a_matcher" {
  command = plan

  variables {
    retry_policy = { rules = [{ retry = false, errors = [] }] }
  }

  expect_failures = [output.policy_json]
}

run "rule_not_an_object" {
  command = plan

  variables {
    retry_policy = { rules = ["TimeoutError"] }
  }

  expect_failures = [output.policy_json]
}

run "bad_status_and_name" {
  command = plan

  variables {
    retry_policy = { rules = [{ http_status = [429, 700] }, { errors = ["Timeout Error"] }] }
  }

  expect_failures = [output.policy_json]

  assert {
    condition     = length(output.problems) == 2
    error_message = "Problems: ${jsonencode(output.problems)}"
  }
}

run "regex_that_re2_refuses" {
  command = plan

  variables {
    # A backreference: Python's re accepts it, RE2 (and so the function's matcher) does not.
    retry_policy = { rules = [{ message_regex = "(a)\\1" }] }
  }

  expect_failures = [output.policy_json]
}

run "bad_switches" {
  command = plan

  variables {
    retry_policy = { transport = "carrier-pigeon", unmatched = "drop", honor_retry_after = "yes", rules = [{ errors = ["A"], retry = 0 }] }
  }

  expect_failures = [output.policy_json]

  assert {
    condition     = length(output.problems) == 4
    error_message = "Problems: ${jsonencode(output.problems)}"
  }
}
