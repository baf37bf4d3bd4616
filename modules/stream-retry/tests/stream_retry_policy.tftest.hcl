# The policy JSON as the real provider renders it, for a Kinesis and a DynamoDB stream. The
# mock provider renders no aws_iam_policy_document (tests/terraform/mocks), so these runs plan with
# the real hashicorp/aws offline: dummy credentials, no account or credential lookup, and every
# endpoint a closed port on 127.0.0.1, so nothing can leave the machine. A plan reads the stream's
# documents: their inputs are all variables here (a destination of one's own; the default queue's ARN
# would be known only after apply).
provider "aws" {
  region                      = "us-east-1"
  access_key                  = "offline"
  secret_key                  = "offline"
  skip_credentials_validation = true
  skip_requesting_account_id  = true
  skip_metadata_api_check     = true
  skip_region_validation      = true
  max_retries                 = 1

  endpoints {
    cloudwatchlogs = "http://127.0.0.1:9"
    dynamodb       = "http://127.0.0.1:9"
    iam            = "http://127.0.0.1:9"
    kinesis        = "http://127.0.0.1:9"
    kms            = "http://127.0.0.1:9"
    lambda         = "http://127.0.0.1:9"
    s3             = "http://127.0.0.1:9"
    scheduler      = "http://127.0.0.1:9"
    sns            = "http://127.0.0.1:9"
    sqs            = "http://127.0.0.1:9"
    sts            = "http://127.0.0.1:9"
  }
}

# The one data source that would ask AWS (the account, for the Scheduler role's trust condition).
override_data {
  target = module.retry.module.scheduler[0].data.aws_caller_identity.current
  values = { account_id = "123456789012" }
}

variables {
  name                       = "orders"
  package                    = "../../tests/terraform/fixtures/empty.zip"
  processor                  = "orders.process:handle"
  on_failure_destination_arn = "arn:aws:sqs:us-east-1:123456789012:orders-stream-failures"
}

run "kinesis_policy_json" {
  command = plan

  variables {
    stream = {
      arn         = "arn:aws:kinesis:us-east-1:123456789012:stream/orders"
      kms_key_arn = "arn:aws:kms:us-east-1:123456789012:key/0000aaaa-12ab-34cd-56ef-1234567890ab"
    }
  }

  assert {
    condition = jsondecode(output.stream_policy_json) == {
      Version = "2012-10-17"
      Statement = [
        {
          Sid      = "ReadKinesisStream"
          Effect   = "Allow"
          Action   = ["kinesis:ListShards", "kinesis:GetShardIterator", "kinesis:GetRecords", "kinesis:DescribeStreamSummary", "kinesis:DescribeStream"]
          Resource = "arn:aws:kinesis:us-east-1:123456789012:stream/orders"
        },
        {
          Sid      = "DecryptStreamRecords"
          Effect   = "Allow"
          Action   = "kms:Decrypt"
          Resource = "arn:aws:kms:us-east-1:123456789012:key/0000aaaa-12ab-34cd-56ef-1234567890ab"
        },
        {
          Sid      = "SendDiscardedBatches"
          Effect   = "Allow"
          Action   = "sqs:SendMessage"
          Resource = "arn:aws:sqs:us-east-1:123456789012:orders-stream-failures"
        },
      ]
    }
    error_message = "The rendered Kinesis policy: ${output.stream_policy_json}"
  }
}

run "dynamodb_policy_json" {
  command = plan

  variables {
    stream = { arn = "arn:aws:dynamodb:us-east-1:123456789012:table/orders/stream/2026-12-01T00:00:00.000" }
  }

  assert {
    condition = jsondecode(output.stream_policy_json) == {
      Version = "2012-10-17"
      Statement = [
        {
          Sid      = "ReadDynamoDBStream"
          Effect   = "Allow"
          Action   = ["dynamodb:GetShardIterator", "dynamodb:GetRecords", "dynamodb:DescribeStream"]
          Resource = "arn:aws:dynamodb:us-east-1:123456789012:table/orders/stream/2026-12-01T00:00:00.000"
        },
        {
          Sid      = "ListDynamoDBStreams"
          Effect   = "Allow"
          Action   = "dynamodb:ListStreams"
          Resource = "*"
        },
        {
          Sid      = "SendDiscardedBatches"
          Effect   = "Allow"
          Action   = "sqs:SendMessage"
          Resource = "arn:aws:sqs:us-east-1:123456789012:orders-stream-failures"
        },
      ]
    }
    error_message = "The rendered DynamoDB policy: ${output.stream_policy_json}"
  }
}
