"""Every interleaving of the claims protocol's events, for 2 messages, 3 attempts and 2 faults (plus
one redrive), driving the real consumer against the in-memory AWS world: tests/support/protocol_check.py
(its docstring states the model, the events, and the at-least-once cases the invariants allow).

One test per defect class of issue #28; each searches its scenario to the end (no budget cut) and
prints its figures (``-s`` shows them): distinct states, interleavings, pruned paths, depth, seconds.
Five more put back, one at a time, what fixed issue #28's defects 1-5 and require the check to find
the defect again, so that a green run means the search reaches the interleavings that matter.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime
from typing import Any

import pytest
import serverless_retry.consumer.claims as claims_module
import serverless_retry.consumer.record_gate as record_gate_module
from serverless_retry.planning import latest_due

from tests.support.protocol_check import SCENARIOS, Config, Report, explore

SMALL = Config(messages=2, attempts=3, faults=2, operations=1)
# Per scenario, CPU seconds of the search (wall time at most 4x that): a safety net well above the
# largest scenario (17-55 s of CPU, depending on the host).
BUDGET_SECONDS = 150.0
DEFECT_CLASSES = [name for name in SCENARIOS if name != "all"]


def check(scenario: str) -> Report:
    report = explore(
        replace(SMALL, events=SCENARIOS[scenario]), scenario=scenario, budget_seconds=BUDGET_SECONDS
    )
    print(report.text())
    return report


@pytest.mark.parametrize("scenario", DEFECT_CLASSES)
def test_every_interleaving_keeps_the_guarantees(scenario: str) -> None:
    report = check(scenario)
    assert report.complete, f"the search did not finish within {BUDGET_SECONDS} s of CPU"
    assert not report.counterexamples, report.text()
    # Not a vacuous search: every scenario reaches hundreds of interleavings and states.
    assert report.interleavings >= 150
    assert report.states >= 700
    assert report.max_depth >= 15


def test_a_copy_that_hops_without_naming_itself_is_found(monkeypatch: pytest.MonkeyPatch) -> None:
    """Defect 5's class put back: a waiting or early copy carried on without its own id in claimants
    (its claim, past its lease, then proves it finished: acknowledged as a duplicate, lost)."""
    monkeypatch.setattr(record_gate_module, "waiting_copy", lambda body, **_: body)
    report = check("early-rehop")
    assert any("lost" in problem for problem in report.counterexamples), report.text()


def test_an_unchecked_signature_is_found(monkeypatch: pytest.MonkeyPatch) -> None:
    """Defect 3's class put back: any envelope accepted as the chain it names."""
    from serverless_retry.signing import EnvelopeSigner  # (here: 45e79c8 has no signatures)

    monkeypatch.setattr(EnvelopeSigner, "verify", lambda self, document: True)
    report = check("forged-envelope")
    assert any(problem.startswith("(c)") for problem, *_ in report.counterexamples.values()), report.text()


def _problems(report: Report) -> list[str]:
    return [problem for problem, *_ in report.counterexamples.values()]


def test_a_redrive_without_a_new_generation_is_found(monkeypatch: pytest.MonkeyPatch) -> None:
    """Defect 1's class put back: a redriven final copy claims within its chain's old generation, so
    the claim its final step ended makes it a duplicate (acknowledged unrun, after the redrive deleted
    it from the retry-exhausted queue)."""
    claim = claims_module.DynamoDBClaims.claim

    def same_generation(self: Any, *args: Any, **kwargs: Any) -> Any:
        return claim(self, *args, **{**kwargs, "generation": 0})

    monkeypatch.setattr(claims_module.DynamoDBClaims, "claim", same_generation)
    report = check("exhausted-redrive")
    assert any("lost" in problem for problem in _problems(report)), report.text()


def test_a_due_time_bound_without_the_claims_wait_is_found(monkeypatch: pytest.MonkeyPatch) -> None:
    """Defect 2's class put back: the due-time check knows only what the policy could plan, so a copy
    that waits out a live claim (lease plus takeover grace) comes back "too far out" and its own
    consumer judges it invalid."""

    def policy_only(self: Any, now: datetime) -> datetime:
        return latest_due(self.policy, now)

    monkeypatch.setattr(record_gate_module.RecordGate, "_latest_due", policy_only)
    report = check("waiting-copy-due")
    assert any(problem.startswith("(d)") for problem in _problems(report)), report.text()


def test_claims_that_expire_before_the_dlq_does_are_found(monkeypatch: pytest.MonkeyPatch) -> None:
    """Defect 4's class put back: a claim lives the source's retention plus a day, so a copy redriven
    late from the DLQ (14 days) finds no claim and runs an attempt its chain already finished."""
    init = claims_module.DynamoDBClaims.__init__

    def short_ttl(self: Any, *args: Any, **kwargs: Any) -> None:
        init(self, *args, **kwargs)
        self.ttl_seconds = kwargs.get("retention_seconds", 345_600) + 86_400

    monkeypatch.setattr(claims_module.DynamoDBClaims, "__init__", short_ttl)
    report = check("claims-ttl")
    assert any(problem.startswith("(b)") for problem in _problems(report)), report.text()
