"""What the emulator's CloudWatch reads: EMF lines and a queue's gauges (pure)."""

from __future__ import annotations

import json

from serverless_retry_tools.local.emulator.cloudwatch.emf import parse_emf
from serverless_retry_tools.local.emulator.cloudwatch.queue_gauges import MessageView, gauges


def test_emf_lines_give_one_datum_per_metric_dimension_set_and_value() -> None:
    line = json.dumps(
        {
            "_aws": {
                "Timestamp": 1_700_000_000_000,
                "CloudWatchMetrics": [
                    {
                        "Namespace": "ServerlessRetry",
                        "Dimensions": [["service"], ["service", "transport"]],
                        "Metrics": [{"Name": "RetryScheduled", "Unit": "Count"}, {"Name": "Missing"}],
                    }
                ],
            },
            "service": "orders",
            "transport": "sqs-delay",
            "RetryScheduled": [1, 2],
        }
    )
    data = parse_emf(line)
    assert {(d.name, d.dimensions, d.value) for d in data} == {
        ("RetryScheduled", (("service", "orders"),), 1.0),
        ("RetryScheduled", (("service", "orders"),), 2.0),
        ("RetryScheduled", (("service", "orders"), ("transport", "sqs-delay")), 1.0),
        ("RetryScheduled", (("service", "orders"), ("transport", "sqs-delay")), 2.0),
    }
    assert {d.namespace for d in data} == {"ServerlessRetry"}
    assert data[0].unit == "Count"


def test_other_lines_give_nothing() -> None:
    for line in ["START RequestId: x", '{"level": "INFO"}', "{not json CloudWatchMetrics", '{"_aws": 1}']:
        assert parse_emf(line) == []


def test_queue_gauges_and_the_age_without_poison_pills() -> None:
    now = 1_000_000.0
    messages = [
        MessageView(now - 50_000, 0, 0, 0),  # visible, 50 s old
        MessageView(now - 90_000, now + 10_000, 0, 1),  # in flight, 90 s old
        MessageView(now - 5_000, 0, now + 1_000, 0),  # delayed
        MessageView(now - 500_000, 0, 0, 3),  # received 3 times here: left out of the age
    ]
    standard = gauges(messages, now, fifo=False)
    assert standard == {
        "ApproximateNumberOfMessagesVisible": 2.0,
        "ApproximateNumberOfMessagesNotVisible": 1.0,
        "ApproximateNumberOfMessagesDelayed": 1.0,
        "ApproximateAgeOfOldestMessage": 90.0,
    }
    assert gauges(messages, now, fifo=True)["ApproximateAgeOfOldestMessage"] == 500.0
    assert gauges([], now, fifo=False)["ApproximateAgeOfOldestMessage"] == 0.0
