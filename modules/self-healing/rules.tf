# The rules of the contract's table (docs/self-healing-contract.md section 2). With K = the sources'
# function names, D = do_not_retry + MissingErrorType + InvalidFailureRecord and L(s) = a source's
# retry limit, every event the pipe emits matches exactly one rule:
#   error_type = InvalidFailureRecord                         -> invalid record
#   function_name not in K (and not an invalid record)       -> unknown source
#   function_name in K, error_type in D - InvalidFailureRecord -> do-not-retry
#   function_name = s, error_type not in D, retry_count < L(s)  -> retry (redrive function)
#   function_name = s, error_type not in D, retry_count >= L(s) -> budget spent
# The enrichment writes every meta field on every event (FailureMeta), so no field is ever missing.
locals {
  # serverless_retry.selfheal.types: BUS_SOURCE, BUS_DETAIL_TYPE, ERROR_INVALID_RECORD, ALWAYS_EXHAUSTED_ERROR_TYPES.
  bus_source      = "serverless-retry.self-healing"
  bus_detail_type = "serverless-retry failure"
  invalid_record  = "InvalidFailureRecord"
  # Sorted, as serverless_retry.selfheal.rules.bus_rules() writes them (tests compare the two).
  not_retried    = sort(distinct(concat(var.do_not_retry, ["MissingErrorType", local.invalid_record])))
  function_names = sort([for s in values(local.sources) : s.function_name])

  envelope = {
    source        = [local.bus_source]
    "detail-type" = [local.bus_detail_type]
  }

  retry_patterns = {
    for k, s in local.sources : k => merge(local.envelope, {
      detail = { meta = {
        function_name = [s.function_name]
        error_type    = [{ anything-but = local.not_retried }]
        retry_count   = [{ numeric = ["<", local.retry_limit[k]] }]
      } }
    })
  }
  budget_patterns = {
    for k, s in local.sources : k => merge(local.envelope, {
      detail = { meta = {
        function_name = [s.function_name]
        error_type    = [{ anything-but = local.not_retried }]
        retry_count   = [{ numeric = [">=", local.retry_limit[k]] }]
      } }
    })
  }

  # The exhausted rules: pattern, the outcome (ExhaustedOutcome) and the reason written with the event
  # (the texts of serverless_retry.selfheal.rules.bus_rules()).
  exhausted_rules = merge(
    {
      for k, s in local.sources : "budget-${k}" => {
        pattern = local.budget_patterns[k]
        outcome = "exhausted"
        reason  = "retry budget of ${s.function_name} (${local.retry_limit[k]} retries) spent"
      }
    },
    {
      do-not-retry = {
        pattern = merge(local.envelope, { detail = { meta = {
          function_name = local.function_names
          error_type    = [for e in local.not_retried : e if e != local.invalid_record]
        } } })
        outcome = "non-retryable"
        reason  = "the error type is in the do-not-retry list (or the record names no error type)"
      }
      invalid-record = {
        pattern = merge(local.envelope, { detail = { meta = {
          error_type = [local.invalid_record]
        } } })
        outcome = "invalid-failure-record"
        reason  = "the failure queue held a record that is not a readable Lambda failure record"
      }
      unknown-source = {
        pattern = merge(local.envelope, { detail = { meta = {
          function_name = [{ anything-but = local.function_names }]
          error_type    = [{ anything-but = [local.invalid_record] }]
        } } })
        outcome = "unknown-source"
        reason  = "the failed function is not a source of this module"
      }
    },
  )

  # Terraform's jsonencode escapes < and > (\u003c): send them plain, as AWS would echo them back.
  retry_pattern_json     = { for k, p in local.retry_patterns : k => replace(replace(jsonencode(p), "\\u003c", "<"), "\\u003e", ">") }
  exhausted_pattern_json = { for k, r in local.exhausted_rules : k => replace(replace(jsonencode(r.pattern), "\\u003c", "<"), "\\u003e", ">") }

  # EventBridge's default quota on an event pattern's length (raising it is a service quota request).
  max_pattern_length = 2048
}

resource "aws_cloudwatch_event_rule" "retry" {
  for_each = local.sources

  name           = "${var.name}-retry-${each.key}"
  description    = "serverless-retry: retry ${each.value.function_name} (retry_count < ${local.retry_limit[each.key]}, error not in the do-not-retry list) through the redrive function."
  event_bus_name = aws_cloudwatch_event_bus.this.name
  event_pattern  = local.retry_pattern_json[each.key]
  tags           = var.tags

  lifecycle {
    precondition {
      condition     = local.retry_limit[each.key] >= 1
      error_message = "Source ${each.key} (${each.value.function_name}) would never be retried: its policy's largest max_attempts is ${local.retry_limit[each.key] + 1}, so its retry limit is ${local.retry_limit[each.key]}. Give it max_attempts >= 2 (1 first attempt + at least 1 retry), or leave the function out of sources."
    }

    precondition {
      condition     = contains(["auto", "scheduler"], local.policy_transport[each.key])
      error_message = "The retry policy of source ${each.key} has transport \"${local.policy_transport[each.key]}\"; self-healing needs \"auto\" (delay 0 = invoke now, else a one-time schedule) or \"scheduler\" (always a schedule)."
    }

    precondition {
      condition     = length(local.retry_pattern_json[each.key]) <= local.max_pattern_length
      error_message = "The retry rule's event pattern of source ${each.key} is ${length(local.retry_pattern_json[each.key])} characters; EventBridge allows ${local.max_pattern_length}. Shorten do_not_retry."
    }
  }
}

resource "aws_cloudwatch_event_target" "retry" {
  for_each = local.sources

  rule           = aws_cloudwatch_event_rule.retry[each.key].name
  event_bus_name = aws_cloudwatch_event_bus.this.name
  target_id      = "redrive"
  arn            = module.redrive.function_arn

  # EventBridge retries a failed hand-over to Lambda for a day, then dead-letters it. (A redrive that
  # fails inside the function is retried by Lambda and lands in the redrive DLQ instead.)
  retry_policy {
    maximum_event_age_in_seconds = 86400
    maximum_retry_attempts       = 185
  }

  dead_letter_config {
    arn = aws_sqs_queue.dlq["rules"].arn
  }

  # EventBridge may invoke the redrive function, and dead-letter to the rules DLQ, once these exist.
  depends_on = [aws_lambda_permission.redrive, aws_sqs_queue_policy.dlq]
}

resource "aws_cloudwatch_event_rule" "exhausted" {
  for_each = local.exhausted_rules

  name           = "${var.name}-${each.key}"
  description    = "serverless-retry: ${each.value.outcome} -> the retry-exhausted queue of ${var.name}."
  event_bus_name = aws_cloudwatch_event_bus.this.name
  event_pattern  = local.exhausted_pattern_json[each.key]
  tags           = var.tags

  lifecycle {
    precondition {
      condition     = length(local.exhausted_pattern_json[each.key]) <= local.max_pattern_length
      error_message = "The ${each.key} rule's event pattern is ${length(local.exhausted_pattern_json[each.key])} characters; EventBridge allows ${local.max_pattern_length}. The do-not-retry and unknown-source rules spell out every source's function name: use fewer or shorter function names, or split the sources over two self-healing modules."
    }
  }
}

resource "aws_cloudwatch_event_target" "exhausted" {
  for_each = local.exhausted_rules

  rule           = aws_cloudwatch_event_rule.exhausted[each.key].name
  event_bus_name = aws_cloudwatch_event_bus.this.name
  target_id      = "exhausted"
  arn            = aws_sqs_queue.exhausted.arn

  # One shape for every message of the retry-exhausted queue: ExhaustedRecord {outcome, reason, detail}.
  input_transformer {
    input_paths    = { detail = "$.detail" }
    input_template = "{\"outcome\": ${jsonencode(each.value.outcome)}, \"reason\": ${jsonencode(each.value.reason)}, \"detail\": <detail>}"
  }

  retry_policy {
    maximum_event_age_in_seconds = 86400
    maximum_retry_attempts       = 185
  }

  dead_letter_config {
    arn = aws_sqs_queue.dlq["rules"].arn
  }

  # The queue policies let these rules (and only these) send, and dead-letter.
  depends_on = [aws_sqs_queue_policy.exhausted, aws_sqs_queue_policy.dlq]
}
