"""serverless_retry_tools.local.moto_speedups: moto answers the same, for less CPU."""

from __future__ import annotations

import boto3
from hypothesis import given
from hypothesis import strategies as st
from moto import mock_aws
from moto.core import utils
from moto.sqs import models
from serverless_retry_tools.local.moto_speedups import memoize_name_conversion


def test_every_moto_module_uses_the_remembered_conversion_once_installed() -> None:
    memoize_name_conversion()
    memoize_name_conversion()  # idempotent: no cache around the cache
    remembered = utils.camelcase_to_underscores
    assert remembered.cache_info().maxsize is not None  # bounded: names can come from requests
    assert not hasattr(remembered.__wrapped__, "cache_info")
    assert models.camelcase_to_underscores is remembered  # imported by name before the install


@given(st.text(max_size=40))
def test_the_remembered_conversion_answers_as_moto_does(name: str) -> None:
    memoize_name_conversion()
    remembered = utils.camelcase_to_underscores
    assert remembered(name) == remembered.__wrapped__(name)
    assert remembered(name) == remembered(name)


def test_a_queue_reads_back_its_attributes() -> None:
    memoize_name_conversion()
    with mock_aws():
        sqs = boto3.client("sqs", region_name="us-east-1")
        url = sqs.create_queue(QueueName="orders", Attributes={"VisibilityTimeout": "45"})["QueueUrl"]
        attributes = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["All"])["Attributes"]
    assert attributes["VisibilityTimeout"] == "45"
    assert attributes["QueueArn"] == "arn:aws:sqs:us-east-1:123456789012:orders"
    assert utils.camelcase_to_underscores.cache_info().hits > 0
