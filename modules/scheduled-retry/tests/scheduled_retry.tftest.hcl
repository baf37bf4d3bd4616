# Plan-level tests of the composed module on the mock provider (shared defaults in tests/terraform/mocks).
mock_provider "aws" {
  source = "../../tests/terraform/mocks"
}

override_resource {
  target          = module.queue.aws_sqs_queue.source
  override_during = plan
  values = {
    arn = "arn:aws:sqs:us-east-1:123456789012:orders"
    url = "https://sqs.us-east-1.amazonaws.com/123456789012/orders"
  }
}

override_resource {
  target          = module.queue.aws_sqs_queue.dlq
  override_during = plan
  values = {
    arn = "arn:aws:sqs:us-east-1:123456789012:orders-dlq"
    url = "https://sqs.us-east-1.amazonaws.com/123456789012/orders-dlq"
  }
}

override_resource {
  target          = module.queue.aws_sqs_queue.exhausted
  override_during = plan
  values = {
    arn = "arn:aws:sqs:us-east-1:123456789012:orders-exhausted"
    url = "https://sqs.us-east-1.amazonaws.com/123456789012/orders-exhausted"
  }
}

override_resource {
  target          = module.scheduler[0].aws_scheduler_schedule_group.this
  override_during = plan
  values = {
    arn = "arn:aws:scheduler:us-east-1:123456789012:schedule-group/orders-retries"
  }
}

override_resource {
  target          = module.queue.aws_sqs_queue.schedule_dlq[0]
  override_during = plan
  values = {
    arn = "arn:aws:sqs:us-east-1:123456789012:orders-schedule-dlq"
    url = "https://sqs.us-east-1.amazonaws.com/123456789012/orders-schedule-dlq"
  }
}

override_resource {
  target          = module.scheduler[0].aws_iam_role.this
  override_during = plan
  values = {
    arn = "arn:aws:iam::123456789012:role/orders-retries-scheduler"
  }
}

override_resource {
  target          = module.consumer.aws_dynamodb_table.claims[0]
  override_during = plan
  values = {
    arn = "arn:aws:dynamodb:us-east-1:123456789012:table/orders-claims"
  }
}

variables {
  name      = "orders"
  package   = "../../tests/terraform/fixtures/empty.zip"
  processor = "orders.process:handle"
  tags      = { team = "orders" }
}

run "policy_reaches_the_function_as_given" {
  command = plan

  assert {
    condition     = output.retry_policy_json == "{}" && module.consumer.environment["SERVERLESS_RETRY_POLICY"] == "{}"
    error_message = "The default policy is rendered as {} (the function applies the defaults): ${output.retry_policy_json}"
  }
}

run "policy_rendered_without_unset_fields" {
  command = plan

  variables {
    retry_policy = {
      max_attempts    = 5
      max_age_seconds = null
      backoff         = { strategy = "exponential", base_seconds = 10, max_seconds = 3600, jitter = "full" }
      rules = [
        { errors = ["ThrottlingError"], http_status = [429, 503], honor_retry_after = true, backoff = { strategy = "fixed", base_seconds = 60 } },
        { errors = ["TimeoutError", "ConnectionError"], max_attempts = 6, backoff = { strategy = "fixed", base_seconds = 30 } },
        { errors = ["ValidationError"], retry = false },
        { message_regex = "^quota exceeded", backoff = { jitter = "equal" } },
      ]
      unmatched = "dead-letter"
    }
  }

  assert {
    condition = jsondecode(output.retry_policy_json) == {
      max_attempts = 5
      backoff      = { strategy = "exponential", base_seconds = 10, max_seconds = 3600, jitter = "full" }
      rules = [
        { errors = ["ThrottlingError"], http_status = [429, 503], honor_retry_after = true, backoff = { strategy = "fixed", base_seconds = 60 } },
        { errors = ["TimeoutError", "ConnectionError"], max_attempts = 6, backoff = { strategy = "fixed", base_seconds = 30 } },
        { errors = ["ValidationError"], retry = false },
        { message_regex = "^quota exceeded", backoff = { jitter = "equal" } },
      ]
      unmatched = "dead-letter"
    }
    error_message = "Policy rendered as ${output.retry_policy_json}"
  }
}

run "composition_wiring" {
  command = plan

  variables {
    timeout = 20
  }

  assert {
    condition     = module.queue.visibility_timeout_seconds == 120
    error_message = "The visibility timeout defaults to 6 x the function timeout."
  }

  assert {
    condition = alltrue([
      module.consumer.environment["SERVERLESS_RETRY_QUEUE_ARN"] == "arn:aws:sqs:us-east-1:123456789012:orders",
      module.consumer.environment["SERVERLESS_RETRY_QUEUE_URL"] == "https://sqs.us-east-1.amazonaws.com/123456789012/orders",
      module.consumer.environment["SERVERLESS_RETRY_DLQ_ARN"] == "arn:aws:sqs:us-east-1:123456789012:orders-dlq",
      module.consumer.environment["SERVERLESS_RETRY_EXHAUSTED_QUEUE_URL"] == "https://sqs.us-east-1.amazonaws.com/123456789012/orders-exhausted",
      module.consumer.environment["SERVERLESS_RETRY_SCHEDULE_GROUP"] == "orders-retries",
      module.consumer.environment["SERVERLESS_RETRY_SCHEDULER_ROLE_ARN"] == "arn:aws:iam::123456789012:role/orders-retries-scheduler",
      module.consumer.environment["SERVERLESS_RETRY_MAX_MESSAGE_BYTES"] == "260096",
      module.consumer.environment["SERVERLESS_RETRY_EXHAUSTED_MAX_MESSAGE_BYTES"] == "262144",
      module.consumer.environment["SERVERLESS_RETRY_QUEUE_RETENTION_SECONDS"] == "345600",
      !contains(keys(module.consumer.environment), "SERVERLESS_RETRY_FIFO_ORDER"),
    ])
    error_message = "The consumer is wired to this module's queues and scheduler: ${jsonencode(module.consumer.environment)}"
  }

  assert {
    condition = alltrue([
      output.queue_url == "https://sqs.us-east-1.amazonaws.com/123456789012/orders",
      output.queue_arn == "arn:aws:sqs:us-east-1:123456789012:orders",
      output.dlq_arn == "arn:aws:sqs:us-east-1:123456789012:orders-dlq",
      output.schedule_dlq_arn == "arn:aws:sqs:us-east-1:123456789012:orders-dlq",
      output.exhausted_queue_url == "https://sqs.us-east-1.amazonaws.com/123456789012/orders-exhausted",
      output.schedule_group_name == "orders-retries",
      output.scheduler_role_arn == "arn:aws:iam::123456789012:role/orders-retries-scheduler",
    ])
    error_message = "Outputs are named for the resource they come from (queue_url, dlq_arn, scheduler_role_arn, ...)."
  }
}

run "least_privilege_across_the_roles" {
  command = plan

  assert {
    condition = toset([for p in output.consumer_permissions : "${p.sid} | ${join(",", p.actions)} | ${join(",", p.resources)}"]) == toset([
      "ConsumeSourceQueue | sqs:DeleteMessage,sqs:GetQueueAttributes,sqs:ReceiveMessage | arn:aws:sqs:us-east-1:123456789012:orders",
      "SendRetriesAndExhausted | sqs:SendMessage | arn:aws:sqs:us-east-1:123456789012:orders,arn:aws:sqs:us-east-1:123456789012:orders-exhausted",
      "CreateRetrySchedules | scheduler:CreateSchedule,scheduler:GetSchedule | arn:aws:scheduler:us-east-1:123456789012:schedule/orders-retries/*",
      "PassSchedulerRole | iam:PassRole | arn:aws:iam::123456789012:role/orders-retries-scheduler",
      "WriteOwnLogs | logs:CreateLogStream,logs:PutLogEvents | arn:aws:logs:us-east-1:123456789012:log-group:/aws/lambda/mock-function:log-stream:*",
      "RetryClaims | dynamodb:UpdateItem | arn:aws:dynamodb:us-east-1:123456789012:table/orders-claims",
    ])
    error_message = "The consumer's permissions (no DeleteSchedule: each schedule deletes itself): ${jsonencode(output.consumer_permissions)}"
  }

  assert {
    condition = toset([for p in output.scheduler_permissions : "${p.sid} | ${join(",", p.actions)} | ${join(",", p.resources)}"]) == toset([
      "SendToTargetQueues | sqs:SendMessage | arn:aws:sqs:us-east-1:123456789012:orders",
      "SendToDeadLetterQueues | sqs:SendMessage | arn:aws:sqs:us-east-1:123456789012:orders-dlq",
    ])
    error_message = "The scheduler role sends to the source queue and its dead-letter queue only: ${jsonencode(output.scheduler_permissions)}"
  }
}

run "claims_table_by_default" {
  command = plan

  assert {
    condition     = output.claims_table_name == "orders-claims" && output.claims_table_arn == "arn:aws:dynamodb:us-east-1:123456789012:table/orders-claims"
    error_message = "The composed module creates the claims table by default and names it."
  }

  assert {
    condition     = module.consumer.environment["SERVERLESS_RETRY_CLAIMS_TABLE"] == "orders-claims" && module.consumer.environment["SERVERLESS_RETRY_VISIBILITY_TIMEOUT_SECONDS"] == "180"
    error_message = "The consumer gets the claims table and the visibility timeout (the claim lease): ${jsonencode(module.consumer.environment)}"
  }
}

run "claims_pass_through" {
  command = plan

  variables {
    claims = { table_arn = "arn:aws:dynamodb:us-east-1:123456789012:table/shared-claims", kms_key_arn = "arn:aws:kms:us-east-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab" }
  }

  assert {
    condition     = output.claims_table_name == "shared-claims" && output.claims_table_arn == var.claims.table_arn && module.consumer.environment["SERVERLESS_RETRY_CLAIMS_TABLE"] == "shared-claims"
    error_message = "A table of one's own reaches the consumer; none is created."
  }

  assert {
    condition     = contains([for p in output.consumer_permissions : "${p.sid} | ${join(",", p.resources)}"], "UseClaimsTableKey | ${var.claims.kms_key_arn}")
    error_message = "The claims key reaches the consumer's role: ${jsonencode(output.consumer_permissions)}"
  }
}

run "claims_opt_out" {
  command = plan

  variables {
    claims = { enabled = false }
  }

  assert {
    condition     = output.claims_table_name == null && output.claims_table_arn == null && !contains(keys(module.consumer.environment), "SERVERLESS_RETRY_CLAIMS_TABLE")
    error_message = "claims.enabled = false: no table, no SERVERLESS_RETRY_CLAIMS_TABLE."
  }
}

run "max_receive_count_default_for_delivery_transports" {
  command = plan

  assert {
    condition     = module.queue.max_receive_count == 5 && output.transport == "auto"
    error_message = "Retries that re-enqueue a fresh copy keep Lambda's 5."
  }
}

run "no_scheduler_when_every_delay_fits_sqs" {
  command = plan

  variables {
    retry_policy = { backoff = { max_seconds = 900 } }
  }

  assert {
    condition     = output.schedule_group_name == null && output.scheduler_role_arn == null && !contains(keys(module.consumer.environment), "SERVERLESS_RETRY_SCHEDULE_GROUP")
    error_message = "auto transport with every cap <= 900 s never schedules, so no scheduler is created or granted."
  }

  assert {
    condition     = !anytrue([for p in output.consumer_permissions : anytrue([for a in p.actions : startswith(a, "scheduler:") || a == "iam:PassRole"])]) && output.scheduler_permissions == []
    error_message = "Without a scheduler the consumer gets no scheduler permission: ${jsonencode(output.consumer_permissions)}"
  }
}

run "scheduler_when_a_rule_cap_exceeds_sqs" {
  command = plan

  variables {
    retry_policy = {
      backoff = { max_seconds = 900 }
      rules   = [{ http_status = [503], backoff = { max_seconds = 7200 } }]
    }
  }

  assert {
    condition     = output.schedule_group_name == "orders-retries"
    error_message = "A rule that can wait past 15 minutes needs the Scheduler."
  }
}

run "no_scheduler_for_forced_sqs_delay_or_hops" {
  command = plan

  variables {
    retry_policy = { transport = "sqs-hops" }
  }

  assert {
    condition     = output.schedule_group_name == null && output.transport == "sqs-hops"
    error_message = "sqs-hops never schedules: no schedule group, no scheduler role."
  }
}

run "fifo_ordered_retries_in_place" {
  command = plan

  # FIFO names, as SQS gives them.
  override_resource {
    target          = module.queue.aws_sqs_queue.source
    override_during = plan
    values = {
      arn = "arn:aws:sqs:us-east-1:123456789012:orders.fifo"
      url = "https://sqs.us-east-1.amazonaws.com/123456789012/orders.fifo"
    }
  }

  override_resource {
    target          = module.queue.aws_sqs_queue.dlq
    override_during = plan
    values = {
      arn = "arn:aws:sqs:us-east-1:123456789012:orders-dlq.fifo"
      url = "https://sqs.us-east-1.amazonaws.com/123456789012/orders-dlq.fifo"
    }
  }

  override_resource {
    target          = module.queue.aws_sqs_queue.exhausted
    override_during = plan
    values = {
      arn = "arn:aws:sqs:us-east-1:123456789012:orders-exhausted.fifo"
      url = "https://sqs.us-east-1.amazonaws.com/123456789012/orders-exhausted.fifo"
    }
  }

  variables {
    fifo = true
  }

  assert {
    condition     = output.queue_name == "orders.fifo" && output.dlq_name == "orders-dlq.fifo" && output.exhausted_queue_name == "orders-exhausted.fifo" && output.schedule_dlq_name == "orders-schedule-dlq"
    error_message = "A FIFO set: FIFO source, DLQ and exhausted queue; a standard schedule DLQ."
  }

  assert {
    condition = alltrue([
      output.transport == "visibility",
      output.schedule_group_name == null,
      module.consumer.environment["SERVERLESS_RETRY_FIFO_ORDER"] == "ordered",
      module.consumer.environment["SERVERLESS_RETRY_DLQ_ARN"] == "arn:aws:sqs:us-east-1:123456789012:orders-schedule-dlq",
      output.schedule_dlq_arn == "arn:aws:sqs:us-east-1:123456789012:orders-schedule-dlq",
    ])
    error_message = "FIFO ordered retries in place (no Scheduler); schedules would dead-letter to the standard queue: ${jsonencode(module.consumer.environment)}"
  }

  assert {
    condition     = module.queue.max_receive_count == 11
    error_message = "Ordered FIFO: a message held back behind a failing one is received once per attempt of it, then needs its own budget: the default maxReceiveCount is 2 x 5 + 1 = 11, got ${module.queue.max_receive_count}."
  }
}

run "fifo_unordered_retries_through_the_scheduler" {
  command = plan

  # FIFO names, as SQS gives them.
  override_resource {
    target          = module.queue.aws_sqs_queue.source
    override_during = plan
    values = {
      arn = "arn:aws:sqs:us-east-1:123456789012:orders.fifo"
      url = "https://sqs.us-east-1.amazonaws.com/123456789012/orders.fifo"
    }
  }

  override_resource {
    target          = module.queue.aws_sqs_queue.dlq
    override_during = plan
    values = {
      arn = "arn:aws:sqs:us-east-1:123456789012:orders-dlq.fifo"
      url = "https://sqs.us-east-1.amazonaws.com/123456789012/orders-dlq.fifo"
    }
  }

  override_resource {
    target          = module.queue.aws_sqs_queue.exhausted
    override_during = plan
    values = {
      arn = "arn:aws:sqs:us-east-1:123456789012:orders-exhausted.fifo"
      url = "https://sqs.us-east-1.amazonaws.com/123456789012/orders-exhausted.fifo"
    }
  }

  variables {
    fifo         = true
    fifo_order   = "unordered"
    retry_policy = { transport = "sqs-delay", backoff = { max_seconds = 60 } }
  }

  assert {
    condition = alltrue([
      output.schedule_group_name == "orders-retries",
      module.consumer.environment["SERVERLESS_RETRY_FIFO_ORDER"] == "unordered",
      toset([for p in output.scheduler_permissions : "${p.sid} | ${join(",", p.resources)}"]) == toset([
        "SendToTargetQueues | arn:aws:sqs:us-east-1:123456789012:orders.fifo",
        "SendToDeadLetterQueues | arn:aws:sqs:us-east-1:123456789012:orders-schedule-dlq",
      ]),
    ])
    error_message = "A FIFO queue has no per-message delay: unordered retries go through the Scheduler, dead-lettering to the standard schedule DLQ."
  }
}

run "sizes_reach_the_queues_and_the_function" {
  command = plan

  variables {
    max_message_size = 131072
  }

  assert {
    condition = alltrue([
      module.consumer.environment["SERVERLESS_RETRY_MAX_MESSAGE_BYTES"] == "131072",
      module.consumer.environment["SERVERLESS_RETRY_EXHAUSTED_MAX_MESSAGE_BYTES"] == "262144",
    ])
    error_message = "The exhausted queue is larger than the source, and the function knows both."
  }
}

run "bad_fifo_order" {
  command = plan

  variables {
    fifo       = true
    fifo_order = "sorted"
  }

  expect_failures = [var.fifo_order]
}

run "name_too_long_for_the_scheduler_role" {
  command = plan

  variables {
    name = "a-very-long-consumer-name-that-does-not-fit-iam"
  }

  expect_failures = [var.name]
}

# --- how it deploys its functions: code from S3 and layers, the architecture, a VPC, roles of the
# user's own and extra statements, for the consumer and the operator ---------------------------------

run "deployment_reaches_both_functions" {
  command = plan

  variables {
    package          = null
    s3_package       = { bucket = "orders-artifacts", key = "orders.zip", object_version = "7" }
    layers           = ["arn:aws:lambda:us-east-1:123456789012:layer:serverless-retry:4"]
    architectures    = ["x86_64"]
    operator_redrive = { enabled = true }
    vpc = {
      subnet_ids         = ["subnet-0a1b2c3d4e5f60718"]
      security_group_ids = ["sg-0123456789abcdef0"]
    }
  }

  assert {
    # The consumer's own function is checked in the plan that tests/terraform/test_checkov_plan.py scans.
    condition = alltrue([for f in [module.operator[0].function] : (
      f.s3_bucket == "orders-artifacts" && f.s3_key == "orders.zip" && f.s3_object_version == "7" && f.filename == null &&
      f.layers == tolist(["arn:aws:lambda:us-east-1:123456789012:layer:serverless-retry:4"]) &&
      f.architectures == tolist(["x86_64"]) &&
      f.vpc_config[0].subnet_ids == toset(["subnet-0a1b2c3d4e5f60718"]) && f.vpc_config[0].security_group_ids == toset(["sg-0123456789abcdef0"])
    )])
    error_message = "The operator's function runs from the consumer's code, layers, architecture and VPC."
  }

  assert {
    condition = [for s in module.operator[0].iam.documents.network.statement : s.resources if s.sid == "CreateNetworkInterfacesInSubnets"][0] == toset([
      "arn:aws:ec2:us-east-1:123456789012:network-interface/*",
      "arn:aws:ec2:us-east-1:*:subnet/subnet-0a1b2c3d4e5f60718",
      "arn:aws:ec2:us-east-1:*:security-group/sg-0123456789abcdef0",
    ])
    error_message = "The operator's role may create interfaces only in the given subnets, with the given security groups."
  }

  assert {
    condition     = contains([for s in output.consumer_permissions : s.sid], "CreateNetworkInterfacesInSubnets")
    error_message = "The consumer's role gets the network-interface permissions too."
  }
}

run "names_each_role_once" {
  command = plan

  variables {
    operator_redrive = { enabled = true }
  }

  assert {
    condition     = output.consumer_role_name == "orders" && module.operator[0].iam.roles[0].name == "orders-redrive"
    error_message = "The consumer's role is <name> (was <name>-consumer), the operator's <name>-redrive."
  }

  assert {
    condition     = output.operator_role_name == "orders-redrive" && output.operator_log_group_name == "/aws/lambda/orders-redrive" && output.scheduler_role_name == "orders-retries-scheduler"
    error_message = "Every role a user wires to has its name in the outputs."
  }
}

run "own_roles" {
  command = plan

  variables {
    role_arn = "arn:aws:iam::123456789012:role/orders-consumer-runtime"
    operator_redrive = {
      enabled  = true
      role_arn = "arn:aws:iam::123456789012:role/ops/orders-redrive-runtime"
    }
  }

  assert {
    condition     = length(module.operator[0].iam.roles) == 0 && length(module.operator[0].iam.policies) == 0 && output.consumer_role_arn == var.role_arn
    error_message = "With role_arn and operator_redrive.role_arn no role is created (the consumer's module reports the role given)."
  }

  assert {
    condition     = module.operator[0].function.role == "arn:aws:iam::123456789012:role/ops/orders-redrive-runtime"
    error_message = "Each function runs as the role given."
  }

  assert {
    condition     = output.consumer_role_name == "orders-consumer-runtime" && output.operator_role_name == "orders-redrive-runtime" && output.operator_role_arn == "arn:aws:iam::123456789012:role/ops/orders-redrive-runtime"
    error_message = "The outputs name the roles given."
  }
}

run "operator_extra_statements" {
  command = plan

  variables {
    operator_redrive = {
      enabled           = true
      policy_statements = [{ sid = "ReadRunbook", actions = ["ssm:GetParameter"], resources = ["arn:aws:ssm:us-east-1:123456789012:parameter/orders/runbook"] }]
    }
  }

  assert {
    condition     = module.operator[0].iam.extra_policies[0].name == "extra" && module.operator[0].iam.documents.extra.statement[0].sid == "ReadRunbook"
    error_message = "The operator's extra statements go in their own inline policy."
  }
}

run "operator_extra_statements_name_their_actions" {
  command = plan

  variables {
    operator_redrive = {
      enabled           = true
      policy_statements = [{ actions = ["ssm:*"], resources = ["arn:aws:ssm:us-east-1:123456789012:parameter/orders/runbook"] }]
    }
  }

  expect_failures = [var.operator_redrive]
}

run "operator_extra_statements_not_with_own_role" {
  command = plan

  variables {
    operator_redrive = {
      enabled           = true
      role_arn          = "arn:aws:iam::123456789012:role/orders-redrive-runtime"
      policy_statements = [{ actions = ["ssm:GetParameter"], resources = ["arn:aws:ssm:us-east-1:123456789012:parameter/orders/runbook"] }]
    }
  }

  expect_failures = [var.operator_redrive]
}

run "one_architecture" {
  command = plan

  variables {
    architectures = ["x86_64", "arm64"]
  }

  expect_failures = [var.architectures]
}

# --- the optional operator redrive function ----------------------------------------------------------

run "operator_redrive_is_off_by_default" {
  command = plan

  assert {
    condition     = length(module.operator) == 0
    error_message = "The operator's redrive function must not exist unless operator_redrive.enabled is true."
  }

  assert {
    condition     = output.operator_function_name == null
    error_message = "operator_function_name must be null when the operator function is off."
  }
}

run "operator_redrive_on_least_privilege" {
  command = plan

  variables {
    operator_redrive = { enabled = true, timeout = 120 }
  }

  assert {
    condition     = module.operator[0].function.handler == "serverless_retry.handlers.redrive_queue.handler"
    error_message = "The operator function runs the package's redrive_queue handler."
  }

  assert {
    condition     = module.operator[0].function.reserved_concurrent_executions == 1 && module.operator[0].function.timeout == 120
    error_message = "One redrive pass at a time, with the given timeout."
  }

  assert {
    condition = module.operator[0].function.environment[0].variables == tomap({
      SERVERLESS_RETRY_REDRIVE_FROM_QUEUE_URLS = "https://sqs.us-east-1.amazonaws.com/123456789012/orders-exhausted,https://sqs.us-east-1.amazonaws.com/123456789012/orders-dlq"
      SERVERLESS_RETRY_REDRIVE_TO_QUEUE_URL    = "https://sqs.us-east-1.amazonaws.com/123456789012/orders"
      POWERTOOLS_SERVICE_NAME                  = "orders-redrive"
      POWERTOOLS_LOG_LEVEL                     = "INFO"
    })
    error_message = "The function is confined to the exhausted queue and DLQ as sources and the source queue as destination."
  }

  assert {
    condition = alltrue(flatten([
      for d in [data.aws_iam_policy_document.operator_read[0], data.aws_iam_policy_document.operator_send[0], data.aws_iam_policy_document.operator_native[0], module.operator[0].iam.documents.logs] : [
        for st in d.statement : !contains(tolist(st.resources), "*") && !anytrue([for a in st.actions : endswith(a, "*")])
      ]
    ]))
    error_message = "Every statement names exact resources and actions."
  }

  assert {
    condition     = data.aws_iam_policy_document.operator_send[0].statement[0].resources == toset(["arn:aws:sqs:us-east-1:123456789012:orders"])
    error_message = "The operator function may send to the source queue only."
  }

  assert {
    condition     = data.aws_iam_policy_document.operator_read[0].statement[0].resources == toset(["arn:aws:sqs:us-east-1:123456789012:orders-exhausted", "arn:aws:sqs:us-east-1:123456789012:orders-dlq"])
    error_message = "The operator function may receive and delete only in the exhausted queue and the DLQ."
  }

  assert {
    condition = [for st in data.aws_iam_policy_document.operator_native[0].statement : { actions = st.actions, resources = st.resources }] == [
      { actions = toset(["sqs:ListDeadLetterSourceQueues"]), resources = toset(["arn:aws:sqs:us-east-1:123456789012:orders-exhausted", "arn:aws:sqs:us-east-1:123456789012:orders-dlq"]) },
      { actions = toset(["sqs:StartMessageMoveTask"]), resources = toset(["arn:aws:sqs:us-east-1:123456789012:orders-dlq"]) },
    ]
    error_message = "StartMessageMoveTask only on the DLQ (the only queue a redrive policy feeds); its sources are checked on either queue; no task is listed or cancelled."
  }

  assert {
    condition     = length(data.aws_iam_policy_document.operator_kms[0].statement) == 0
    error_message = "No KMS statement without a kms_key_arn."
  }
}

run "operator_redrive_timeout_is_validated" {
  command = plan

  variables {
    operator_redrive = { enabled = true, timeout = 10 }
  }

  expect_failures = [var.operator_redrive]
}
