"""The emulator's S3 write faults: off until configured, exactly the share asked of matching calls,
evenly spread, some of them after the write; other keys never touched."""

from __future__ import annotations

import pytest
from serverless_retry_tools.local.emulator.s3_faults import S3PutFaults


def test_off_until_configured_then_exactly_the_share_asked_of_matching_calls() -> None:
    faults = S3PutFaults()
    assert faults.decide("bucket/serverless-retry/dead/a") is None
    assert faults.configure({"fraction": 0.3, "key_contains": "/dead/", "written_fraction": 0.5}) == {
        "calls": 0,
        "failed": 0,
        "failed_after_write": 0,
    }
    got = [faults.decide(f"bucket/serverless-retry/dead/{n % 4}") for n in range(20)]
    assert [n for n, when in enumerate(got) if when] == [3, 6, 9, 13, 16, 19]
    assert [when for when in got if when] == ["before", "after", "before", "after", "before", "after"]
    assert faults.decide("bucket/serverless-retry/payloads/x") is None  # not a matching key
    assert faults.counts == {"calls": 20, "failed": 6, "failed_after_write": 3}
    faults.configure({"fraction": 0})
    assert all(faults.decide("bucket/serverless-retry/dead/a") is None for _ in range(10))


def test_a_share_outside_zero_to_one_is_refused() -> None:
    with pytest.raises(ValueError, match="from 0 to 1"):
        S3PutFaults().configure({"fraction": 1.5})
