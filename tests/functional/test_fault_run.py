"""The large randomized fault run (tests/support/faultrun.py) inside the suite, on the deployment the
modules give a user by default (the default policy, queue sizes, retention, visibility timeout and
maxReceiveCount, the claims table on): >= 30 % API faults, crashes after successful calls, calls that
took effect but timed out, lost responses, failed deletes, duplicate deliveries, Scheduler and
claims-table outages, invocations dying after their claims, and an operator redriving both the DLQ
(SQS's own move) and the retry-exhausted queue (queue_redrive.redrive) three times over two weeks
while the consumer runs, claims items expiring by TTL. Every message must end in exactly one kind of
final place, no own envelope may be judged invalid, and with the claims table no attempt may run in
two copies (one chain per message).

The default deployment runs on three seeds: 10,000 messages on the first, 5,000 on the other two (the
file stays well under 4 minutes on two busy cores; each run prints its figures)."""

from __future__ import annotations

import dataclasses
import random
import re
from datetime import timedelta

import pytest
from serverless_retry.clock import FrozenClock
from serverless_retry.config import ConsumerSettings
from serverless_retry.policy import RetryPolicy

from tests.support.fakeaws import FakeDynamoDBClient, World
from tests.support.faultrun import (
    DEFAULTS,
    EXHAUSTED_SIZE_FORMULA,
    MAX_RECEIVE_COUNT_FORMULA,
    MODULES,
    VARIANTS,
    VISIBILITY_FORMULA,
    Deployment,
    Report,
    identify,
    number_of,
    run,
)


def _run(name: str, *, seed: int = 20261130, **changes: object) -> Report:
    variant = dataclasses.replace(VARIANTS[name], **changes)  # type: ignore[arg-type]
    report = run(variant, seed=seed, budget_seconds=150)
    print("\n" + report.text())
    return report


def _squash(text: str) -> str:
    return re.sub(r"\s+", " ", text)


def test_the_run_deploys_what_the_modules_give_by_default() -> None:
    # Read from modules/*/variables.tf; what scheduled-retry computes from them is written in Python
    # in faultrun.py, so its main.tf must still say so.
    scheduled = _squash((MODULES / "scheduled-retry" / "main.tf").read_text())
    queue = _squash((MODULES / "queue" / "main.tf").read_text())
    assert VISIBILITY_FORMULA in scheduled
    assert MAX_RECEIVE_COUNT_FORMULA in scheduled
    assert EXHAUSTED_SIZE_FORMULA in queue
    # scheduled-retry leaves the DLQ's and the exhausted queue's retention at modules/queue's defaults.
    assert "dlq_message_retention_seconds" not in scheduled
    assert "exhausted_message_retention_seconds" not in scheduled
    # The policy is the module's default ({}), i.e. the package's own defaults: no rules, no tuned cap.
    assert DEFAULTS.policy == {}
    assert RetryPolicy.from_dict(DEFAULTS.policy) == RetryPolicy()
    assert DEFAULTS.claims is True
    assert DEFAULTS.visibility_timeout == 6 * DEFAULTS.timeout
    assert DEFAULTS.exhausted_max_message_size >= DEFAULTS.max_message_size + 2048
    assert DEFAULTS.retention_seconds < DEFAULTS.dlq_retention_seconds == DEFAULTS.exhausted_retention_seconds
    assert DEFAULTS.max_receive_count == 5  # standard source, transport auto
    assert Deployment.defaults(fifo=True).max_receive_count == 2 * RetryPolicy().max_attempts + 1
    # The consumer reads them as its handler would, from the environment modules/consumer wires.
    world = World(FrozenClock(), random.Random(0))
    queues = [world.queue(name) for name in ("q", "q-exhausted", "q-schedule-dlq")]
    settings = ConsumerSettings.from_env(DEFAULTS.environment(*queues), processor_required=False)
    assert settings.policy == RetryPolicy()
    assert settings.targets.max_message_bytes == DEFAULTS.max_message_size
    assert settings.targets.exhausted_max_message_bytes == DEFAULTS.exhausted_max_message_size
    assert settings.targets.retention_seconds == DEFAULTS.retention_seconds
    assert settings.targets.visibility_timeout_seconds == DEFAULTS.visibility_timeout
    assert settings.claims_table is not None


@pytest.mark.parametrize(("seed", "messages"), [(20261130, 10_000), (7, 5_000), (424242, 5_000)])
def test_the_default_deployment_on_three_seeds(seed: int, messages: int) -> None:
    report = _run("default", seed=seed, messages=messages)
    assert report.deployment == DEFAULTS
    assert report.api_faults / report.api_calls >= 0.30
    # The figures the guarantees are stated in, on every seed.
    assert report.lost == []
    assert report.two_places == {}
    assert report.own_invalid == []
    # It exercised what it claims: duplicates ended, refusals turned into hops, both outages and both
    # dying stretches, both redrives with the consumer running, two weeks of logical time.
    assert report.duplicates_dropped > messages // 100
    assert report.scheduler_fallbacks > 10
    assert report.fault_kinds["crash-after-effect"] > 10
    assert report.fault_kinds["timeout-after-effect"] > 100
    assert report.fault_kinds["scheduler-outage"] > 10
    assert report.fault_kinds["claims-outage"] > 100
    assert report.fault_kinds["dying"] > 10
    assert report.redriven_dlq > messages // 50
    assert report.redriven_exhausted > messages // 10
    assert report.days >= 13
    assert {"exhausted", "non-retryable", "too-large-to-retry"} <= set(report.outcomes)
    assert report.second_chains == 0, report.second_chain_ids
    # The stated exception (docs/claims-protocol.md): a plain copy renamed by SQS's DLQ move after its
    # chain moved on. Rare by construction (a crash after the send, on the last receive, then a move).
    assert len(report.renamed_reruns) <= messages // 2_000
    assert report.failures() == []


def test_claims_and_processor_idempotency_with_both_redrives() -> None:
    report = _run("standard-table", messages=5_000)
    assert report.api_faults / report.api_calls >= 0.20
    assert report.redriven_exhausted > 0
    assert report.failures() == []
    assert report.second_chains == 0


def test_without_the_table_nothing_is_lost_and_duplicates_stay_within_the_bound() -> None:
    report = _run("standard", messages=5_000)
    assert report.api_faults / report.api_calls >= 0.30
    assert report.lost == []
    # Without the table a duplicate copy is a chain of its own (docs/concepts.md states the bound); the
    # only way to two kinds of final place is such a second chain ending elsewhere (e.g. in the DLQ).
    assert report.second_chains > 0
    assert report.failures() == []
    # At-least-once without state: a few messages can be in two places (see docs/concepts.md), not more.
    assert len(report.two_places) <= report.messages // 500
    assert report.max_chains <= 5**4  # maxReceiveCount ** (max_attempts - 1)


@pytest.mark.parametrize("name", ["fifo-ordered-table", "fifo-unordered-table", "hops-table"])
def test_fifo_and_hops_variants(name: str) -> None:
    report = _run(name, messages=1_500)
    assert report.api_faults / report.api_calls >= 0.25
    assert report.failures() == []
    assert report.second_chains == 0
    if name == "fifo-ordered-table":
        assert report.order_violations == 0
        assert report.scheduler_fallbacks == 0  # in place: the Scheduler is never asked


def test_a_scheduler_refusing_every_call_sends_nothing_to_the_dlq() -> None:
    report = _run("scheduler-outage", messages=1_500)
    assert report.fault_kinds == {"scheduler-outage": report.api_faults}
    assert report.scheduler_fallbacks > 50
    assert report.dlq == 0
    assert report.failures() == []


def test_the_fake_table_deletes_expired_items_some_time_after_their_expiration() -> None:
    clock = FrozenClock()
    table = FakeDynamoDBClient(clock, random.Random(1), ttl_lag_seconds=3600)
    expiration = int(clock.now().timestamp()) + 600
    for n in range(50):
        table.batch_write_item(
            RequestItems={
                "t": [{"PutRequest": {"Item": {"id": {"S": f"k{n}"}, "expiration": {"N": str(expiration)}}}}]
            }
        )
    table.update_item(  # an item without a TTL attribute stays
        Key={"id": {"S": "key"}},
        UpdateExpression="SET #v = :v",
        ExpressionAttributeNames={"#v": "v"},
        ExpressionAttributeValues={":v": {"S": "x"}},
    )
    clock.current += timedelta(seconds=599)
    assert table.expire() == 0  # not yet expired
    clock.current += timedelta(seconds=1 + 1800)
    halfway = table.expire()
    assert 0 < halfway < 50  # expired items go at random moments after their expiration
    clock.current += timedelta(seconds=1800)
    assert table.expire() == 50 - halfway
    assert set(table.items) == {"key"}
    assert table.ttl_deleted == 50


def test_identify_finds_the_message_in_every_form_it_ends_in() -> None:
    inner = '{"i": 17, "plan": []}'
    envelope = '{"serverless_retry": {"v": 1, "attempt": 3}, "body": "{\\"i\\": 17, \\"plan\\": []}"}'
    assert number_of(inner) == 17
    assert number_of(envelope) == 17
    # A retry copy moved to a DLQ, a producer's body, and an own envelope judged invalid (framed, its
    # raw body the envelope): the KeyError of issue 28 defect 2.
    assert identify(envelope, {})[0] == 17
    assert identify(inner, {})[0] == 17
    framed = '{"serverless_retry": {"v": 1, "outcome": "invalid-envelope", "reason": "x"}}\n' + envelope
    assert identify(framed, {}) == (17, "invalid-envelope")
    with pytest.raises(AssertionError, match="no known number"):
        identify('{"nothing": 1}', {})
