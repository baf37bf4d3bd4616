"""Every interleaving of the claims protocol's events, for 2 messages, 3 attempts and 2 faults (plus
one redrive), driving the real consumer against the in-memory AWS world: tests/support/protocol_check.py
(its docstring states the model, the events, and the at-least-once cases the invariants allow).

One test per defect class of issue #28; each searches its scenario to the end (no budget cut) and
prints its figures (``-s`` shows them): distinct states, interleavings, pruned paths, depth, seconds.
Two more break the protocol on purpose and require the check to notice, so that a green run means
the search reaches the interleavings that matter.
"""

from __future__ import annotations

from dataclasses import replace

import pytest
import serverless_retry.consumer as consumer_module

from tests.support.protocol_check import SCENARIOS, Config, Report, explore

SMALL = Config(messages=2, attempts=3, faults=2, operations=1)
BUDGET_SECONDS = 90.0  # per scenario: a safety net far above what each takes (a few seconds)
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
    assert report.complete, f"the search did not finish within {BUDGET_SECONDS} s"
    assert not report.counterexamples, report.text()
    # Not a vacuous search: every scenario reaches hundreds of interleavings and states.
    assert report.interleavings >= 150
    assert report.states >= 700
    assert report.max_depth >= 15


def test_a_copy_that_hops_without_naming_itself_is_found(monkeypatch: pytest.MonkeyPatch) -> None:
    """Defect 5's class put back: a waiting or early copy carried on without its own id in claimants
    (its claim, past its lease, then proves it finished: acknowledged as a duplicate, lost)."""
    monkeypatch.setattr(consumer_module, "waiting_copy", lambda body, **_: body)
    report = check("early-rehop")
    assert any("lost" in problem for problem in report.counterexamples), report.text()


def test_an_unchecked_signature_is_found(monkeypatch: pytest.MonkeyPatch) -> None:
    """Defect 3's class put back: any envelope accepted as the chain it names."""
    from serverless_retry.signing import EnvelopeSigner  # (here: 45e79c8 has no signatures)

    monkeypatch.setattr(EnvelopeSigner, "verify", lambda self, document: True)
    report = check("forged-envelope")
    assert any(problem.startswith("(c)") for problem, *_ in report.counterexamples.values()), report.text()
