data "aws_region" "current" {}

data "aws_partition" "current" {}

# Concern: who may assume the role.
data "aws_iam_policy_document" "trust" {
  statement {
    sid     = "LambdaAssumesRole"
    actions = ["sts:AssumeRole"]

    principals {
      type        = "Service"
      identifiers = ["lambda.amazonaws.com"]
    }
  }
}

# Concern: writing the function's own logs.
data "aws_iam_policy_document" "logs" {
  statement {
    sid       = "WriteOwnLogs"
    actions   = ["logs:CreateLogStream", "logs:PutLogEvents"]
    resources = ["${aws_cloudwatch_log_group.this.arn}:log-stream:*"]
  }
}

# Concern: X-Ray, only when tracing is on.
data "aws_iam_policy_document" "xray" {
  dynamic "statement" {
    for_each = var.function.tracing ? [1] : []
    content {
      #checkov:skip=CKV_AWS_356:X-Ray's PutTraceSegments and PutTelemetryRecords support no resource-level permissions; "*" is the only resource they accept.
      sid       = "WriteTraces"
      actions   = ["xray:PutTraceSegments", "xray:PutTelemetryRecords"]
      resources = ["*"]
    }
  }
}

# Concern: the network interfaces Lambda creates for the function in your VPC, with the function's
# role (the actions AWS's AWSLambdaVPCAccessExecutionRole grants, narrowed to what its resources allow).
data "aws_caller_identity" "current" {
  count = var.function.vpc == null ? 0 : 1
}

locals {
  ec2_prefix = "arn:${data.aws_partition.current.partition}:ec2:${data.aws_region.current.name}"
  own_interfaces = (
    var.function.vpc == null ? null : "${local.ec2_prefix}:${data.aws_caller_identity.current[0].account_id}:network-interface/*"
  )
}

data "aws_iam_policy_document" "network" {
  dynamic "statement" {
    for_each = var.function.vpc == null ? [] : [var.function.vpc]
    content {
      # Created only in the given subnets, with the given security groups (an ENI create is authorised
      # on all three resource types). Subnet and security group IDs are unique across accounts, so any
      # owner account is allowed: a shared VPC's subnets belong to another account.
      sid     = "CreateNetworkInterfacesInSubnets"
      actions = ["ec2:CreateNetworkInterface"]
      resources = concat(
        [local.own_interfaces],
        [for id in statement.value.subnet_ids : "${local.ec2_prefix}:*:subnet/${id}"],
        [for id in statement.value.security_group_ids : "${local.ec2_prefix}:*:security-group/${id}"],
      )
    }
  }

  dynamic "statement" {
    for_each = var.function.vpc == null ? [] : [var.function.vpc]
    content {
      # The interfaces' IDs are made at run time, so this account's and region's interfaces: Lambda's
      # guide warns that a DeleteNetworkInterface narrower than that can strand the function's
      # interfaces (and narrowing it to today's subnets would strand those of yesterday's).
      sid       = "ManageOwnNetworkInterfaces"
      actions   = ["ec2:DeleteNetworkInterface", "ec2:AssignPrivateIpAddresses", "ec2:UnassignPrivateIpAddresses"]
      resources = [local.own_interfaces]
    }
  }

  dynamic "statement" {
    for_each = var.function.vpc == null ? [] : [var.function.vpc]
    content {
      #checkov:skip=CKV_AWS_356:DescribeNetworkInterfaces and DescribeSubnets support no resource-level permissions; "*" is the only resource they accept, limited here to the function's region.
      sid       = "DescribeNetwork"
      actions   = ["ec2:DescribeNetworkInterfaces", "ec2:DescribeSubnets"]
      resources = ["*"]

      condition {
        test     = "StringEquals"
        variable = "aws:RequestedRegion"
        values   = [data.aws_region.current.name]
      }
    }
  }
}

# Concern: what the caller's user adds (policy_statements), in a policy of its own.
data "aws_iam_policy_document" "extra" {
  dynamic "statement" {
    for_each = var.role.extra_statements
    content {
      sid       = statement.value.sid
      effect    = statement.value.effect
      actions   = statement.value.actions
      resources = statement.value.resources

      dynamic "condition" {
        for_each = statement.value.conditions
        content {
          test     = condition.value.test
          variable = condition.value.variable
          values   = condition.value.values
        }
      }
    }
  }
}

# The caller's concerns, then the function's own.
data "aws_iam_policy_document" "this" {
  source_policy_documents = [
    var.role.policy_json,
    data.aws_iam_policy_document.logs.json,
    data.aws_iam_policy_document.xray.json,
    data.aws_iam_policy_document.network.json,
  ]
}

resource "aws_iam_role" "this" {
  count = local.create_role ? 1 : 0

  name                 = var.function.name
  description          = var.role.description
  assume_role_policy   = data.aws_iam_policy_document.trust.json
  permissions_boundary = var.role.permissions_boundary_arn
  tags                 = var.tags

  # A renamed role is replaced: the new one and its policy first, then the function moves to it, and
  # only then the old one goes, so the function never runs under a deleted role.
  lifecycle {
    create_before_destroy = true
  }
}

resource "aws_iam_role_policy" "this" {
  count = local.create_role ? 1 : 0

  name   = var.role.policy_name
  role   = aws_iam_role.this[0].id
  policy = data.aws_iam_policy_document.this.json

  # With the role: a replaced role's policy stays until the function has moved to the new role.
  lifecycle {
    create_before_destroy = true
  }
}

resource "aws_iam_role_policy" "extra" {
  count = local.create_role && length(var.role.extra_statements) > 0 ? 1 : 0

  name   = "extra"
  role   = aws_iam_role.this[0].id
  policy = data.aws_iam_policy_document.extra.json

  lifecycle {
    create_before_destroy = true
  }
}
