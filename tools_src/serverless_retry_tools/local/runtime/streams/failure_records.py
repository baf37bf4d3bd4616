"""The record Lambda sends to a stream mapping's on-failure destination when it discards a batch
(https://docs.aws.amazon.com/lambda/latest/dg/kinesis-on-failure-destination.html,
https://docs.aws.amazon.com/lambda/latest/dg/services-dynamodb-errors.html): a JSON document about
the failed invocation, NOT the records: requestContext (requestId, functionArn, condition
RetryAttemptsExhausted or RecordAgeExceeded, approximateInvokeCount), responseContext of the last
invocation, version, timestamp, and KinesisBatchInfo / DDBStreamBatchInfo (shardId,
startSequenceNumber, endSequenceNumber, approximateArrivalOfFirstRecord,
approximateArrivalOfLastRecord, batchSize, streamArn). An S3 destination also gets the invocation's
payload (the event), in an object keyed ``aws/lambda/<mapping UUID>/<shard id>/YYYY/MM/DD/<time>-<uuid>``.
An SNS destination takes at most 256 KB (OnFailure API reference): the record has no payload there.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, TypedDict

from serverless_retry_tools.local.runtime.streams.events import StreamRecord, stream_event

__all__ = ["BatchInfo", "failure_record", "s3_key", "send_failure_record"]


class BatchInfo(TypedDict):
    shardId: str
    startSequenceNumber: str
    endSequenceNumber: str
    approximateArrivalOfFirstRecord: str
    approximateArrivalOfLastRecord: str
    batchSize: int
    streamArn: str


def _iso(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, tz=UTC).strftime("%Y-%m-%dT%H:%M:%S.") + (
        f"{int(seconds * 1000) % 1000:03d}Z"
    )


def failure_record(
    records: Sequence[StreamRecord],
    *,
    kind: str,
    shard_id: str,
    stream_arn: str,
    function_arn: str,
    condition: str,
    invoke_count: int,
    request_id: str,
    function_error: str | None,
    now: float,
) -> dict[str, Any]:
    """The invocation record for the discarded ``records`` (in shard order, at least one)."""
    info: BatchInfo = {
        "shardId": shard_id,
        "startSequenceNumber": records[0].sequence_number,
        "endSequenceNumber": records[-1].sequence_number,
        "approximateArrivalOfFirstRecord": _iso(records[0].arrival),
        "approximateArrivalOfLastRecord": _iso(records[-1].arrival),
        "batchSize": len(records),
        "streamArn": stream_arn,
    }
    document: dict[str, Any] = {
        "requestContext": {
            "requestId": request_id,
            "functionArn": function_arn,
            "condition": condition,
            "approximateInvokeCount": invoke_count,
        },
        "version": "1.0",
        "timestamp": _iso(now),
        "KinesisBatchInfo" if kind == "kinesis" else "DDBStreamBatchInfo": dict(info),
    }
    if invoke_count:
        response: dict[str, Any] = {"statusCode": 200, "executedVersion": "$LATEST"}
        if function_error:
            response["functionError"] = function_error
        document["responseContext"] = response
    return document


def s3_key(mapping_uuid: str, shard_id: str, now: float) -> str:
    moment = datetime.fromtimestamp(now, tz=UTC)
    return f"aws/lambda/{mapping_uuid}/{shard_id}/{moment:%Y/%m/%d}/{moment:%Y-%m-%dT%H.%M.%S}-{uuid.uuid4()}"


def send_failure_record(
    client: Any,
    destination: str,
    document: Mapping[str, Any],
    records: Sequence[StreamRecord],
    *,
    queue_url: Any,
    mapping_uuid: str,
    shard_id: str,
    now: float,
) -> None:
    """Deliver ``document`` to the SQS queue, SNS topic or S3 bucket ``destination``.
    ``client(service)`` gives a boto3 client; ``queue_url(sqs, arn)`` a queue's URL."""
    service = destination.split(":")[2]
    body = json.dumps(document)
    if service == "sqs":
        sqs = client("sqs")
        sqs.send_message(QueueUrl=queue_url(sqs, destination), MessageBody=body)
    elif service == "sns":
        client("sns").publish(TopicArn=destination, Message=body)
    elif service == "s3":
        bucket = destination.split(":")[5]
        payload = {**document, "payload": json.dumps(stream_event(records), default=str)}
        client("s3").put_object(
            Bucket=bucket, Key=s3_key(mapping_uuid, shard_id, now), Body=json.dumps(payload).encode()
        )
    else:
        raise NotImplementedError(
            f"on-failure destination {destination} is not an SQS queue, SNS topic or S3 bucket"
        )
