"""tests/support/botocore_cache.py: Sessions share botocore's parsed data, and clients still work."""

from __future__ import annotations

from pathlib import Path

import boto3
from botocore import loaders

from tests.support.botocore_cache import share_parsed_data


def test_two_sessions_get_the_same_parsed_endpoints_and_models() -> None:
    share_parsed_data()
    first, second = boto3.session.Session(), boto3.session.Session()
    loader_a = first._session.get_component("data_loader")
    loader_b = second._session.get_component("data_loader")
    assert loader_a is not loader_b
    assert loader_a.load_data_with_path("endpoints")[0] is loader_b.load_data_with_path("endpoints")[0]
    assert loader_a.load_service_model("sqs", "service-2") is loader_b.load_service_model("sqs", "service-2")
    sqs = first.client("sqs", region_name="eu-west-1", aws_access_key_id="x", aws_secret_access_key="y")
    assert sqs.meta.endpoint_url == "https://sqs.eu-west-1.amazonaws.com"
    assert "SendMessage" in sqs.meta.service_model.operation_names


def test_a_loader_with_other_search_paths_reads_its_own_data(tmp_path: Path) -> None:
    share_parsed_data()
    (tmp_path / "endpoints.json").write_text('{"partitions": [], "version": 3}', encoding="utf-8")
    mine = loaders.Loader(extra_search_paths=[str(tmp_path)])
    assert mine.load_data_with_path("endpoints")[0] == {"partitions": [], "version": 3}
    default = boto3.session.Session()._session.get_component("data_loader")
    assert default.load_data_with_path("endpoints")[0]["partitions"]
