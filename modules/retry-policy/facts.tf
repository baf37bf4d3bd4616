# What other modules need to know about the policy: its effective values (defaults applied, rule
# backoffs merged), whether it can use the Scheduler, its largest budget, and bounds on its waits.
locals {
  # Invalid fields fall back to their defaults here, so these facts always evaluate (the plan fails on
  # the preconditions of outputs.tf anyway).
  effective = {
    max_attempts      = contains(local.valid_paths, "max_attempts") ? tonumber(local.top.max_attempts) : local.defaults.max_attempts
    max_age_seconds   = contains(local.valid_paths, "max_age_seconds") ? tonumber(local.top.max_age_seconds) : local.defaults.max_age_seconds
    unmatched         = contains(local.valid_paths, "unmatched") ? tostring(local.top.unmatched) : local.defaults.unmatched
    transport         = contains(local.valid_paths, "transport") ? tostring(local.top.transport) : local.defaults.transport
    honor_retry_after = contains(local.valid_paths, "honor_retry_after") ? tobool(local.top.honor_retry_after) : local.defaults.honor_retry_after
    backoff           = local.policy_backoff
    rules = [
      for i, r in local.rules : {
        errors            = [for j, e in local.rule_lists[i].errors : tostring(e) if contains(local.valid_paths, "rules[${i}].errors[${j}]")]
        http_status       = [for j, s in local.rule_lists[i].http_status : tonumber(s) if contains(local.valid_paths, "rules[${i}].http_status[${j}]")]
        message_regex     = contains(local.valid_paths, "rules[${i}].message_regex") ? tostring(r.fields.message_regex) : null
        retry             = contains(local.valid_paths, "rules[${i}].retry") ? tobool(r.fields.retry) : local.defaults.rule.retry
        max_attempts      = contains(local.valid_paths, "rules[${i}].max_attempts") ? tonumber(r.fields.max_attempts) : null
        honor_retry_after = contains(local.valid_paths, "rules[${i}].honor_retry_after") ? tobool(r.fields.honor_retry_after) : local.defaults.rule.honor_retry_after
        backoff           = contains(keys(r.fields), "backoff") ? local.rule_effective_backoffs[i] : null
      }
    ]
  }

  # How the consumer retries on this queue. A FIFO queue has no per-message delay: "ordered" retries in
  # place with the visibility timeout (the group stays blocked); "unordered" leaves the group through
  # the Scheduler, except for the visibility transport, which is in place anyway. sqs-hops cannot work
  # on FIFO (hops are per-message delays); the scheduled-retry module refuses that pairing.
  transport = (
    !var.fifo ? local.effective.transport :
    var.fifo_order == "ordered" ? "visibility" :
    contains(["visibility", "sqs-hops"], local.effective.transport) ? local.effective.transport : "scheduler"
  )

  # Mirrors serverless_retry.config.needs_scheduler: only when some decision can pick the Scheduler.
  # auto: every delay (Retry-After included) is capped by the backoff in force, so the caps decide.
  backoff_caps    = concat([local.policy_backoff.max_seconds], [for r in local.effective.rules : r.backoff.max_seconds if r.backoff != null])
  needs_scheduler = local.transport == "scheduler" || (local.transport == "auto" && max(local.backoff_caps...) > 900)

  # The ways a failure can be retried: errors no rule matches (always possible: a RetryableError or
  # HttpError is retried even under unmatched = "dead-letter"), and each rule that retries.
  paths = concat(
    [{ max_attempts = local.effective.max_attempts, honor = local.effective.honor_retry_after, backoff = local.policy_backoff }],
    [
      for r in local.effective.rules : {
        max_attempts = coalesce(r.max_attempts, local.effective.max_attempts)
        honor        = r.honor_retry_after
        backoff      = r.backoff == null ? local.policy_backoff : r.backoff
      } if r.retry
    ],
  )
  # The largest budget: at most this many attempts, so at most this many receives of one message with
  # an in-place transport (visibility, FIFO ordered).
  max_attempts = max([for p in local.paths : p.max_attempts]...)

  # Each delay is clamped by its transport (Python: sqs-delay to 900 s, visibility to 12 h).
  delay_clamp = lookup({ "sqs-delay" = 900, "visibility" = 43200 }, local.transport, local.delay_limit)

  # Upper bound of each retry's delay, per path and retry number n (1 = the delay after attempt 1):
  # - Retry-After honoured: the server may ask for anything, clamped to the cap, so the cap.
  # - fixed: min(base, cap); linear: min(base * n, cap); exponential: min(base * multiplier^(n-1), cap)
  #   (full and equal jitter only shorten the un-jittered delay).
  # - decorrelated: U(base, 3 * previous delay), capped. The previous delay may come from another rule
  #   or a Retry-After, so with W = the largest delay any other path can produce (and the decorrelated
  #   bases) every delay of retry n is at most min(cap, 3^n * W), by induction over n.
  # Every delay is rounded up to whole seconds (math.ceil, as the consumer sends it).
  w = ceil(max(concat(
    [0],
    [for p in local.paths : p.backoff.base_seconds if p.backoff.jitter == "decorrelated" && !p.honor && p.max_attempts > 1],
    [
      for p in local.paths : (
        p.honor ? p.backoff.max_seconds :
        p.backoff.strategy == "fixed" ? min(p.backoff.base_seconds, p.backoff.max_seconds) :
        p.backoff.strategy == "linear" ? min(p.backoff.base_seconds * (p.max_attempts - 1), p.backoff.max_seconds) :
        p.backoff.base_seconds == 0 ? 0 : min(p.backoff.base_seconds * pow(p.backoff.multiplier, p.max_attempts - 2), p.backoff.max_seconds)
      ) if(p.backoff.jitter != "decorrelated" || p.honor) && p.max_attempts > 1
    ],
  )...))

  # Retry numbers 1 .. max_attempts - 1, built in slices: range() makes at most 1024 values.
  retry_numbers = flatten([
    for hi in range(ceil((local.max_attempts - 1) / 1000)) : range(hi * 1000 + 1, min(local.max_attempts, hi * 1000 + 1001))
  ])
  delay_bounds = [
    for n in local.retry_numbers : max(concat([0], [
      for p in local.paths : min(local.delay_clamp, ceil(
        p.honor ? p.backoff.max_seconds :
        p.backoff.jitter == "decorrelated" ? min(p.backoff.max_seconds, pow(3, min(n, 40)) * local.w) :
        p.backoff.strategy == "fixed" ? min(p.backoff.base_seconds, p.backoff.max_seconds) :
        p.backoff.strategy == "linear" ? min(p.backoff.base_seconds * n, p.backoff.max_seconds) :
        p.backoff.base_seconds == 0 ? 0 : min(p.backoff.base_seconds * pow(p.backoff.multiplier, n - 1), p.backoff.max_seconds)
      )) if p.max_attempts > n
    ])...)
  ]
  max_delay_seconds = max(concat([0], local.delay_bounds)...)
  # The sum of the largest delays; with max_age_seconds no retry is planned once the first failure is
  # older than it, so the waits end at most one delay after it.
  max_total_wait_seconds = min(concat(
    [sum(concat([0], local.delay_bounds))],
    local.effective.max_age_seconds == null ? [] : [local.effective.max_age_seconds + local.max_delay_seconds],
  )...)
}
