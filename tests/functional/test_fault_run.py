"""The large randomized fault run (tests/support/faultrun.py) inside the suite: >= 10,000 messages with
>= 30 % API faults, crashes after successful calls, calls that took effect but timed out, lost
responses, failed deletes, duplicate deliveries and a stretch in which the Scheduler refuses every
call. Every message must end in exactly one kind of final place; with the claims table (the
modules' default), no attempt may ever run in two copies (one chain per message)."""

from __future__ import annotations

import pytest

from tests.support.faultrun import VARIANTS, Report, Variant, run


def _run(name: str, **changes: object) -> Report:
    variant = Variant(**{**VARIANTS[name].__dict__, **changes})
    report = run(variant, budget_seconds=90)
    print("\n" + report.text())
    return report


def test_ten_thousand_messages_on_the_default_configuration() -> None:
    # What the modules deploy by default (the claims table, no processor idempotency), with a claims
    # table outage, a Scheduler outage, a stretch in which invocations die after claiming, and a DLQ
    # redrive of what that stretch left there.
    report = _run("default")
    assert report.messages >= 10_000
    assert report.api_faults / report.api_calls >= 0.30
    assert report.failures() == []
    assert report.lost == []
    assert report.two_places == {}
    assert report.second_chains == 0
    # It exercised what it claims: duplicate copies ended, refusals turned into hops, the table down,
    # copies that died holding their claims redriven and processed.
    assert report.duplicates_dropped > 100
    assert report.scheduler_fallbacks > 10
    assert report.fault_kinds["crash-after-effect"] > 10
    assert report.fault_kinds["timeout-after-effect"] > 100
    assert report.fault_kinds["scheduler-outage"] > 10
    assert report.fault_kinds["claims-outage"] > 100
    assert report.fault_kinds["dying"] > 10
    assert report.redriven > 20
    assert report.dlq == 0  # the outage sent nothing there; the redriven copies all ended elsewhere
    assert {"exhausted", "non-retryable", "invalid-envelope", "too-large-to-retry"} <= set(report.outcomes)


def test_ten_thousand_messages_with_claims_and_processor_idempotency() -> None:
    report = _run("standard-table")
    assert report.messages >= 10_000
    assert report.api_faults / report.api_calls >= 0.30
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
