# Read the policy as given (type = any, so nothing is dropped or converted on the way in), list every
# problem with the field it concerns, and render the JSON the function receives.
#
# Every expression here must evaluate for ANY input, valid or not: the problems are reported by the
# preconditions of outputs.tf, and an evaluation error anywhere else would hide them behind a less
# helpful message. Hence try() around every access to the input and the JSON kind checks before use.
locals {
  policy_kind = lookup(local.kinds, substr(jsonencode(var.retry_policy), 0, 1), "number")

  # Absent and null mean the same, "not set", at every object level (as in Python): a caller's own
  # typed object() writes its unset optional attributes as null.
  top          = try({ for k, v in var.retry_policy : k => v if v != null && local.policy_kind == "object" }, {})
  backoff_kind = lookup(local.kinds, substr(jsonencode(try(local.top.backoff, null)), 0, 1), "number")
  backoff      = try({ for k, v in local.top.backoff : k => v if v != null && local.backoff_kind == "object" }, {})
  rules_kind   = lookup(local.kinds, substr(jsonencode(try(local.top.rules, null)), 0, 1), "number")
  rules_given  = try([for r in local.top.rules : r if local.rules_kind == "array"], [])
  rules = [
    for r in local.rules_given : {
      fields = try({ for k, v in r : k => v if v != null && startswith(jsonencode(r), "{") }, {})
    }
  ]
  rule_backoffs = [
    for r in local.rules :
    try({ for k, v in r.fields.backoff : k => v if v != null && startswith(jsonencode(r.fields.backoff), "{") }, {})
  ]
  rule_lists = [
    for r in local.rules : {
      errors      = try([for x in r.fields.errors : x if startswith(jsonencode(r.fields.errors), "[")], [])
      http_status = try([for x in r.fields.http_status : x if startswith(jsonencode(r.fields.http_status), "[")], [])
    }
  ]

  # The objects as given, nulls included: an unknown key is an error even when its value is null, as
  # in Python (which checks the keys before it drops the nulls).
  raw = {
    policy  = try({ for k, v in var.retry_policy : k => v if local.policy_kind == "object" }, {})
    backoff = try({ for k, v in local.top.backoff : k => v if local.backoff_kind == "object" }, {})
    rules   = [for r in local.rules_given : try({ for k, v in r : k => v if startswith(jsonencode(r), "{") }, {})]
    rule_backoffs = [
      for r in local.rules : try({ for k, v in r.fields.backoff : k => v if startswith(jsonencode(r.fields.backoff), "{") }, {})
    ]
  }

  # Every field the policy names, with the path Python's PolicyError names (e.g. rules[1].backoff.jitter).
  # A null object field is unset (fine if known); a null array element is a value, and a wrong one.
  fields = concat(
    [for k, v in local.raw.policy : { scope = "policy", parent = "", path = k, key = k, value = v, unset = v == null }],
    [for k, v in local.raw.backoff : { scope = "backoff", parent = "backoff", path = "backoff.${k}", key = k, value = v, unset = v == null }],
    [for i, r in local.rules_given : { scope = "rules", parent = "rules", path = "rules[${i}]", key = "*", value = r, unset = false }],
    flatten([
      for i, r in local.raw.rules : [
        for k, v in r : { scope = "rule", parent = "rules[${i}]", path = "rules[${i}].${k}", key = k, value = v, unset = v == null }
      ]
    ]),
    flatten([
      for i, b in local.raw.rule_backoffs : [
        for k, v in b : { scope = "backoff", parent = "rules[${i}].backoff", path = "rules[${i}].backoff.${k}", key = k, value = v, unset = v == null }
      ]
    ]),
    flatten([
      for i, l in local.rule_lists : [
        for j, v in l.errors : { scope = "errors", parent = "rules[${i}].errors", path = "rules[${i}].errors[${j}]", key = "*", value = v, unset = false }
      ]
    ]),
    flatten([
      for i, l in local.rule_lists : [
        for j, v in l.http_status : { scope = "http_status", parent = "rules[${i}].http_status", path = "rules[${i}].http_status[${j}]", key = "*", value = v, unset = false }
      ]
    ]),
  )

  typed_fields = [
    for f in local.fields : merge(f, {
      json = jsonencode(f.value)
      kind = lookup(local.kinds, substr(jsonencode(f.value), 0, 1), "number")
      spec = try(local.field_specs[f.scope][f.key], null)
    })
  ]

  # One result per field: "" when the field is fine, else what is wrong with it. Both branches of a
  # conditional are evaluated and only the chosen one's errors count, so e.g. floor() of a string in
  # the branch the kind check does not choose is harmless.
  field_results = [
    for f in local.typed_fields : {
      path  = f.path
      group = f.spec == null ? "unknown" : f.spec.group
      unset = f.unset
      message = (
        f.spec == null ? "unknown field \"${f.key}\" (known fields: ${join(", ", keys(local.field_specs[f.scope]))})" :
        f.unset ? "" :
        f.spec.type == "integer" ? (
          f.kind != "number" ? "must be an integer, got ${f.kind} ${f.json}" :
          floor(f.value) != f.value ? "must be an integer, got ${f.json}" :
          (f.spec.min == null ? false : f.value < f.spec.min) ? "must be >= ${f.spec.min}, got ${f.json}" :
          (f.spec.max == null ? false : f.value > f.spec.max) ? "must be <= ${f.spec.max}, got ${f.json}" : ""
        ) :
        f.spec.type == "number" ? (
          f.kind != "number" ? "must be a number, got ${f.kind} ${f.json}" :
          (f.spec.min == null ? false : f.value < f.spec.min) ? "must be >= ${f.spec.min}, got ${f.json}" :
          (f.spec.max == null ? false : f.value > f.spec.max) ? "must be <= ${f.spec.max}, got ${f.json}" : ""
        ) :
        f.spec.type == "boolean" ? (f.kind != "boolean" ? "must be true or false, got ${f.kind} ${f.json}" : "") :
        f.spec.type == "choice" ? (
          (f.kind == "string" ? contains(f.spec.choices, f.value) : false) ? "" : "must be one of ${join(", ", f.spec.choices)}, got ${f.json}"
        ) :
        f.spec.type == "object" ? (f.kind != "object" ? "must be an object, got ${f.kind} ${f.json}" : "") :
        f.spec.type == "array" ? (f.kind != "array" ? "must be an array, got ${f.kind} ${f.json}" : "") :
        f.spec.type == "regex" ? (
          f.kind != "string" ? "must be a string (an RE2 regular expression), got ${f.kind} ${f.json}" :
          !can(regexall(f.value, "")) ? "not a valid RE2 regular expression: ${f.json} (the syntax is RE2's, as Terraform's regex() and the function's matcher use)" : ""
        ) :
        f.spec.type == "class_name" ? (
          (f.kind == "string" ? can(regex(local.class_name, f.value)) : false) ? "" : "must be an exception class name such as \"TimeoutError\" or \"mypkg.errors.Throttled\", got ${f.json}"
        ) : "unchecked field type ${f.spec.type}"
      )
    }
  ]
  # Fields set to a valid value (unset ones take their defaults).
  valid_paths = toset([for r in local.field_results : r.path if r.message == "" && !r.unset])

  # A backoff's effective values: what it sets (when valid), else what it inherits.
  # (Conditionals unify the types of both branches even when one is not chosen, hence the to*().)
  policy_backoff = {
    strategy     = contains(local.valid_paths, "backoff.strategy") ? tostring(local.backoff.strategy) : local.defaults.backoff.strategy
    base_seconds = contains(local.valid_paths, "backoff.base_seconds") ? tonumber(local.backoff.base_seconds) : local.defaults.backoff.base_seconds
    multiplier   = contains(local.valid_paths, "backoff.multiplier") ? tonumber(local.backoff.multiplier) : local.defaults.backoff.multiplier
    max_seconds  = contains(local.valid_paths, "backoff.max_seconds") ? tonumber(local.backoff.max_seconds) : local.defaults.backoff.max_seconds
    jitter       = contains(local.valid_paths, "backoff.jitter") ? tostring(local.backoff.jitter) : local.defaults.backoff.jitter
  }
  rule_effective_backoffs = [
    for i, b in local.rule_backoffs : {
      strategy     = contains(local.valid_paths, "rules[${i}].backoff.strategy") ? tostring(b.strategy) : local.policy_backoff.strategy
      base_seconds = contains(local.valid_paths, "rules[${i}].backoff.base_seconds") ? tonumber(b.base_seconds) : local.policy_backoff.base_seconds
      multiplier   = contains(local.valid_paths, "rules[${i}].backoff.multiplier") ? tonumber(b.multiplier) : local.policy_backoff.multiplier
      max_seconds  = contains(local.valid_paths, "rules[${i}].backoff.max_seconds") ? tonumber(b.max_seconds) : local.policy_backoff.max_seconds
      jitter       = contains(local.valid_paths, "rules[${i}].backoff.jitter") ? tostring(b.jitter) : local.policy_backoff.jitter
    }
  ]

  # max_seconds caps every delay, so it must be >= base_seconds once inheritance is applied. Blame the
  # field the object set; when it set both or neither, the cap (as Python does).
  backoff_objects = concat(
    [{ path = "backoff", given = local.backoff, effective = local.policy_backoff, present = true }],
    [for i, b in local.rule_backoffs : { path = "rules[${i}].backoff", given = b, effective = local.rule_effective_backoffs[i], present = contains(keys(local.rules[i].fields), "backoff") }],
  )
  cap_results = [
    for o in local.backoff_objects : (
      # Only when both values are valid: a malformed one is reported as such, as Python reports only it.
      !o.present || o.effective.max_seconds >= o.effective.base_seconds ? null :
      !alltrue([for k in ["base_seconds", "max_seconds"] : !contains(keys(o.given), k) || contains(local.valid_paths, "${o.path}.${k}")]) ? null :
      contains(keys(o.given), "base_seconds") && !contains(keys(o.given), "max_seconds") ? {
        path    = "${o.path}.base_seconds"
        message = "must be <= max_seconds (${o.effective.max_seconds}, inherited), got ${o.effective.base_seconds}"
        } : {
        path    = "${o.path}.max_seconds"
        message = "must be >= base_seconds (${o.effective.base_seconds}), got ${o.effective.max_seconds}: it caps every delay"
      }
    )
  ]

  # A rule must say which errors it covers. (Not reported when errors/http_status are themselves
  # malformed: that problem is reported, as Python reports only it.)
  matcher_results = [
    for i, r in local.rules : (
      startswith(jsonencode(local.rules_given[i]), "{") &&
      length(local.rule_lists[i].errors) == 0 && length(local.rule_lists[i].http_status) == 0 &&
      !contains(keys(r.fields), "message_regex") &&
      alltrue([for k in ["errors", "http_status"] : !contains(keys(r.fields), k) || startswith(jsonencode(try(r.fields[k], null)), "[")])
    ) ? "rules[${i}]" : null
  ]

  problems = {
    structure = concat(
      local.policy_kind == "object" ? [] : ["retry_policy: must be an object (the policy), got ${local.policy_kind} ${jsonencode(var.retry_policy)}"],
      [for r in local.field_results : "retry_policy.${r.path}: ${r.message}" if r.message != "" && r.group == "structure"],
    )
    # An unknown field names its parent and itself: retry_policy.rules[1]: unknown field "retyr".
    unknown = [
      for f in local.typed_fields : "retry_policy${f.parent == "" ? "" : ".${f.parent}"}: unknown field \"${f.key}\" (known fields: ${join(", ", keys(local.field_specs[f.scope]))})"
      if f.spec == null
    ]
    budget  = [for r in local.field_results : "retry_policy.${r.path}: ${r.message}" if r.message != "" && r.group == "budget"]
    backoff = [for r in local.field_results : "retry_policy.${r.path}: ${r.message}" if r.message != "" && r.group == "backoff"]
    cap     = [for c in local.cap_results : "retry_policy.${c.path}: ${c.message}" if c != null]
    matching = concat(
      [for r in local.field_results : "retry_policy.${r.path}: ${r.message}" if r.message != "" && r.group == "matching"],
      [for p in local.matcher_results : "retry_policy.${p}: needs at least one of errors, http_status, message_regex (which errors does the rule cover?)" if p != null],
    )
    switches = [for r in local.field_results : "retry_policy.${r.path}: ${r.message}" if r.message != "" && r.group == "switches"]
  }
  problem_count = sum([for k, v in local.problems : length(v)])

  # What SERVERLESS_RETRY_POLICY holds: the policy as given, without the fields left unset. The function
  # applies the same defaults, and every byte counts against Lambda's 4 KB environment.
  rendered_rules = [
    for i, r in local.rules : merge(
      { for k, v in r.fields : k => v if k != "backoff" },
      { for k, v in { backoff = local.rule_backoffs[i] } : k => v if contains(keys(r.fields), "backoff") },
    )
  ]
  document = merge(
    { for k, v in local.top : k => v if !contains(["backoff", "rules"], k) },
    { for k, v in { backoff = local.backoff } : k => v if contains(keys(local.top), "backoff") },
    { for k, v in { rules = local.rendered_rules } : k => v if contains(keys(local.top), "rules") },
  )
  policy_json = jsonencode(local.document)
}
