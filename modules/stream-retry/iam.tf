# What the stream's event source mapping does with the function's role (Lambda reads the stream and
# sends to the on-failure destination as the function's execution role), one document per concern,
# attached to the role modules/scheduled-retry creates. Every statement names exact ARNs, but one:
# dynamodb:ListStreams (below).

locals {
  # arn:<partition>:s3:::<bucket>: objects are <bucket>/<key>.
  destination_objects = local.destination_service == "s3" ? "${var.on_failure_destination_arn}/*" : null
}

# Concern: reading a Kinesis data stream (AWSLambdaKinesisExecutionRole's actions less ListStreams,
# which a mapping given the stream's ARN does not call), on that stream only.
data "aws_iam_policy_document" "read_kinesis" {
  dynamic "statement" {
    for_each = local.kinesis ? [var.stream.arn] : []
    content {
      sid = "ReadKinesisStream"
      actions = [
        "kinesis:DescribeStream",
        "kinesis:DescribeStreamSummary",
        "kinesis:GetRecords",
        "kinesis:GetShardIterator",
        "kinesis:ListShards",
      ]
      resources = [statement.value]
    }
  }
}

# Concern: enhanced fan-out. SubscribeToShard and DescribeStreamConsumer act on the consumer's ARN.
data "aws_iam_policy_document" "fan_out" {
  dynamic "statement" {
    for_each = local.fan_out ? [var.stream.consumer_arn] : []
    content {
      sid       = "ReadThroughStreamConsumer"
      actions   = ["kinesis:SubscribeToShard", "kinesis:DescribeStreamConsumer"]
      resources = [statement.value]
    }
  }
}

# Concern: reading a DynamoDB stream, on that stream only; and ListStreams, which the Lambda and
# DynamoDB guides list for a function reading a DynamoDB stream ("IAM policy to allow an AWS Lambda
# function to access DynamoDB stream records", docs.aws.amazon.com/amazondynamodb/latest/developerguide/
# iam-policy-example-lamda-process-dynamodb-streams.html; AWSLambdaDynamoDBExecutionRole). ListStreams
# has no resource type in the Service Authorization Reference (it lists streams, it reads none), so its
# resource can only be "*".
data "aws_iam_policy_document" "read_dynamodb" {
  dynamic "statement" {
    for_each = local.kinesis ? [] : [var.stream.arn]
    content {
      sid = "ReadDynamoDBStream"
      actions = [
        "dynamodb:DescribeStream",
        "dynamodb:GetRecords",
        "dynamodb:GetShardIterator",
      ]
      resources = [statement.value]
    }
  }

  dynamic "statement" {
    for_each = local.kinesis ? [] : ["*"]
    content {
      sid       = "ListDynamoDBStreams"
      actions   = ["dynamodb:ListStreams"]
      resources = [statement.value]
    }
  }
}

# Concern: a stream encrypted with a customer managed key: its records are decrypted as they are read.
data "aws_iam_policy_document" "stream_kms" {
  dynamic "statement" {
    for_each = var.stream.kms_key_arn == null ? [] : [var.stream.kms_key_arn]
    content {
      sid       = "DecryptStreamRecords"
      actions   = ["kms:Decrypt"]
      resources = [statement.value]
    }
  }
}

# Concern: the on-failure destination (Lambda developer guide, "Retain discarded batch records for a
# Kinesis Data Streams event source in Lambda" and "Retain discarded records for a DynamoDB event
# source in Lambda": a standard SQS queue, a standard SNS topic or an S3 bucket, sent to with the
# execution role, which needs sqs:SendMessage, sns:Publish, or s3:PutObject and s3:ListBucket). The queue the module creates shares kms_key_arn with the retry queues, whose use
# modules/consumer already grants.
data "aws_iam_policy_document" "on_failure" {
  dynamic "statement" {
    for_each = local.destination_service == "sqs" ? [local.destination_arn] : []
    content {
      sid       = "SendDiscardedBatches"
      actions   = ["sqs:SendMessage"]
      resources = [statement.value]
    }
  }

  dynamic "statement" {
    for_each = local.destination_service == "sns" ? [local.destination_arn] : []
    content {
      sid       = "PublishDiscardedBatches"
      actions   = ["sns:Publish"]
      resources = [statement.value]
    }
  }

  dynamic "statement" {
    for_each = local.destination_service == "s3" ? [local.destination_objects] : []
    content {
      sid       = "PutDiscardedBatches"
      actions   = ["s3:PutObject"]
      resources = [statement.value]
    }
  }

  dynamic "statement" {
    for_each = local.destination_service == "s3" ? [local.destination_arn] : []
    content {
      sid       = "ListDiscardedBatches"
      actions   = ["s3:ListBucket"]
      resources = [statement.value]
    }
  }
}

data "aws_iam_policy_document" "stream" {
  source_policy_documents = [
    data.aws_iam_policy_document.read_kinesis.json,
    data.aws_iam_policy_document.fan_out.json,
    data.aws_iam_policy_document.read_dynamodb.json,
    data.aws_iam_policy_document.stream_kms.json,
    data.aws_iam_policy_document.on_failure.json,
  ]
}

resource "aws_iam_role_policy" "stream" {
  name   = "serverless-retry-stream"
  role   = module.retry.consumer_role_name
  policy = data.aws_iam_policy_document.stream.json
}

locals {
  # The statements as planned ({sid, actions, resources}), for review and the plan-level tests.
  stream_permissions = flatten([
    for d in [
      data.aws_iam_policy_document.read_kinesis,
      data.aws_iam_policy_document.fan_out,
      data.aws_iam_policy_document.read_dynamodb,
      data.aws_iam_policy_document.stream_kms,
      data.aws_iam_policy_document.on_failure,
    ] : [for s in(d.statement == null ? [] : d.statement) : { sid = s.sid, actions = sort(s.actions), resources = sort(s.resources) }]
  ])
}
