"""One policy language: modules/retry-policy and RetryPolicy.from_dict judge every policy alike.

The corpus (tests/events/policy-corpus.json) holds valid policies and invalid ones with the one field
at fault. Each goes through the Terraform module (one `terraform test` process plans them all) and
through Python; they must accept and refuse the same policies, blame the same field, and the JSON the
module renders must parse to the very RetryPolicy Python builds from the input. The module's facts
are checked against Python too: needs_scheduler against config.needs_scheduler, and the wait bounds
against chains of decisions made by RetryPolicy.decide itself.
"""

from __future__ import annotations

import importlib.util
import inspect
import json
import random
import re
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from serverless_retry import HttpError, RetryableError
from serverless_retry import backoff as py_backoff
from serverless_retry import config as py_config
from serverless_retry import policy as py_policy
from serverless_retry.errors import PolicyError
from serverless_retry.policy import RetryPolicy

from tests.terraform.conftest import ROOT, Workspace
from tests.terraform.tftest_runs import RunResult, plan_cases

MODULE = "modules/retry-policy"
CORPUS: list[dict[str, Any]] = json.loads((ROOT / "tests" / "events" / "policy-corpus.json").read_text())[
    "policies"
]
BY_NAME = {case["name"]: case for case in CORPUS}
VALID = [c["name"] for c in CORPUS if c["field"] is None]
INVALID = [c["name"] for c in CORPUS if c["field"] is not None]
# Where a FIFO queue changes the Scheduler decision: the transports and the caps around 900 s.
FIFO_CASES = [
    n for n in VALID if n.startswith(("transport-", "caps-", "rule-cap", "non-retrying")) or n == "empty"
]
# A message line names its field: "retry_policy.rules[1].backoff.jitter: ..." or, for an unknown
# field, its parent and the key: 'retry_policy.rules[1]: unknown field "retyr"'.
_LINE = re.compile(r"^retry_policy(?:\.(?P<path>\S+?))?: (?P<problem>.*)$")
_UNKNOWN = re.compile(r'^unknown field "(?P<key>[^"]+)"')
T0 = datetime(2026, 11, 30, 10, 0, 0, tzinfo=UTC)


@pytest.fixture(scope="module")
def terraform_verdicts(workspace: Workspace) -> dict[str, RunResult]:
    """Every corpus policy planned through the module, on a standard queue; the valid ones also on a
    FIFO queue, unordered (the Scheduler path Python's needs_scheduler(fifo=True) describes). The
    invalid ones are expected to fail policy_json's preconditions; their `problems` output holds the
    lines of those preconditions' messages."""
    cases: dict[str, dict[str, object]] = {c["name"]: {"retry_policy": c["policy"]} for c in CORPUS}
    for name in FIFO_CASES:
        cases[f"{name}--fifo"] = {
            "retry_policy": BY_NAME[name]["policy"],
            "fifo": True,
            "fifo_order": "unordered",
        }
    return plan_cases(
        workspace, MODULE, cases, expect_failures={name: ["output.policy_json"] for name in INVALID}
    )


def _blamed(errors: list[str]) -> set[str]:
    fields = set()
    for error in errors:
        for line in error.splitlines():
            match = _LINE.match(line.strip())
            if not match:
                continue
            path, problem = match["path"], match["problem"]
            unknown = _UNKNOWN.match(problem)
            if unknown:
                fields.add(f"{path}.{unknown['key']}" if path else unknown["key"])
            else:
                fields.add(path or "$")
    return fields


def _python_verdict(policy: object) -> RetryPolicy | PolicyError:
    try:
        return RetryPolicy.from_dict(policy)  # type: ignore[arg-type]  # anything may come in
    except PolicyError as exc:
        return exc


def _skip_if_pending(case: dict[str, Any]) -> None:
    """A case that needs a Python change another task delivers (the corpus says which)."""
    pending = case.get("pending")
    if pending == "sqs-hops" and "sqs-hops" not in py_policy.TRANSPORTS:
        pytest.xfail("Python does not know transport sqs-hops yet (issue 9 item 13)")
    if pending == "re2" and importlib.util.find_spec("re2") is None:
        pytest.xfail("Python still compiles message_regex with re, not RE2 (issue 9 item 9)")


@pytest.mark.parametrize("name", [c["name"] for c in CORPUS])
def test_terraform_and_python_agree_on_accepting(terraform_verdicts: dict[str, RunResult], name: str) -> None:
    case = BY_NAME[name]
    tf = terraform_verdicts[name]
    assert tf.status != "skip", "not planned: an earlier run of its file failed"
    if case["field"] is None:
        assert tf.passed, "Terraform refuses a valid policy:\n" + "\n".join(tf.errors)
        assert tf.outputs["problems"] == []
    else:
        # Passed = policy_json's preconditions failed, as expected; `problems` says why.
        assert tf.passed, "Terraform accepts an invalid policy:\n" + "\n".join(tf.errors)
        assert _blamed(tf.outputs["problems"]) == {case["field"]}, tf.outputs["problems"]

    _skip_if_pending(case)
    python = _python_verdict(case["policy"])
    if case["field"] is None:
        assert isinstance(python, RetryPolicy), f"Python refuses a valid policy: {python}"
    else:
        assert isinstance(python, PolicyError), "Python accepts an invalid policy"
        assert python.field == case["field"], f"Python blames {python.field!r}: {python}"


@pytest.mark.parametrize("name", VALID)
def test_rendered_json_is_the_same_policy(terraform_verdicts: dict[str, RunResult], name: str) -> None:
    _skip_if_pending(BY_NAME[name])
    rendered = terraform_verdicts[name].outputs["policy_json"]
    assert RetryPolicy.from_json(rendered) == RetryPolicy.from_dict(BY_NAME[name]["policy"])
    assert "null" not in rendered, "unset fields are left out, not rendered as null"


@pytest.mark.parametrize(
    ("name", "fifo"), [(n, False) for n in VALID] + [(n, True) for n in FIFO_CASES], ids=str
)
def test_needs_scheduler_agrees(terraform_verdicts: dict[str, RunResult], name: str, fifo: bool) -> None:
    case = BY_NAME[name]
    _skip_if_pending(case)
    policy = RetryPolicy.from_dict(case["policy"])
    kwargs: dict[str, object] = {"fifo": fifo}
    if fifo and "fifo_order" in inspect.signature(py_config.needs_scheduler).parameters:
        kwargs["fifo_order"] = "unordered"
    tf = terraform_verdicts[f"{name}--fifo" if fifo else name]
    assert tf.outputs["needs_scheduler"] is py_config.needs_scheduler(policy, **kwargs)  # type: ignore[arg-type]


def test_fifo_ordered_needs_no_scheduler_in_python_either(terraform_verdicts: dict[str, RunResult]) -> None:
    """FIFO ordered retries in place (COMMON contract); checked against Python once it knows the mode."""
    if "fifo_order" not in inspect.signature(py_config.needs_scheduler).parameters:
        pytest.xfail("config.needs_scheduler has no fifo_order yet (issue 9 item 2)")
    for name in VALID:
        if BY_NAME[name].get("pending"):
            continue
        policy = RetryPolicy.from_dict(BY_NAME[name]["policy"])
        assert py_config.needs_scheduler(policy, fifo=True, fifo_order="ordered") is False  # type: ignore[call-arg]


def test_the_field_table_is_pythons(workspace: Workspace) -> None:
    """schema.tf lists exactly the fields and choices Python knows."""
    schema = workspace.terraform.console(workspace.dir(MODULE), "local.field_specs")
    assert isinstance(schema, dict)
    assert set(schema["policy"]) == set(py_policy._POLICY_FIELDS)
    assert set(schema["rule"]) == set(py_policy._RULE_FIELDS)
    assert set(schema["backoff"]) == set(py_backoff._BACKOFF_FIELDS)
    assert schema["backoff"]["strategy"]["choices"] == list(py_backoff.STRATEGIES)
    assert schema["backoff"]["jitter"]["choices"] == list(py_backoff.JITTERS)
    assert schema["policy"]["unmatched"]["choices"] == list(py_policy.UNMATCHED)
    assert set(py_policy.TRANSPORTS) <= set(schema["policy"]["transport"]["choices"])
    assert schema["policy"]["max_attempts"]["max"] == py_policy.MAX_ATTEMPTS_LIMIT
    assert schema["backoff"]["max_seconds"]["max"] == py_backoff.MAX_DELAY_SECONDS


# --- the wait bounds hold for chains of real decisions -----------------------------------------------


def _errors_for(policy: RetryPolicy, rand: random.Random) -> list[BaseException]:
    """Errors that reach each path of the policy (its rules and the default), with Retry-After hints
    from none to far beyond any cap."""
    hint = rand.choice([None, 0, 3, 10**9, rand.uniform(0, 5000)])
    errors: list[BaseException] = [RetryableError("unmatched", retry_after=hint)]
    for rule in policy.rules:
        for name in rule.errors:
            module, _, qualname = name.rpartition(".")
            namespace = {"__module__": module or "builtins", "__qualname__": qualname, "retry_after": hint}
            errors.append(type(qualname, (Exception,), namespace)("matched by name"))
        errors.extend(HttpError(status, retry_after=hint) for status in rule.http_status)
    return errors


@pytest.mark.parametrize("name", VALID)
def test_wait_bounds_hold_for_sampled_chains(terraform_verdicts: dict[str, RunResult], name: str) -> None:
    case = BY_NAME[name]
    _skip_if_pending(case)
    policy = RetryPolicy.from_dict(case["policy"])
    outputs = terraform_verdicts[name].outputs
    max_delay, max_total = outputs["max_delay_seconds"], outputs["max_total_wait_seconds"]
    longest = 0
    for seed in range(12):
        rand = random.Random(seed)
        attempt, waited, previous = 1, 0, None
        while attempt <= outputs["max_attempts"]:
            error = rand.choice(_errors_for(policy, rand))
            now = T0 + timedelta(seconds=waited)
            decision = policy.decide(
                error, attempt=attempt, first_failed_at=T0, now=now, rand=rand, previous_delay=previous
            )
            if decision.action != "retry":
                break
            assert decision.delay_seconds <= max_delay, decision
            waited += decision.delay_seconds
            previous = decision.delay_seconds
            attempt += 1
        else:
            pytest.fail(
                f"attempt {attempt} was retried: max_attempts {outputs['max_attempts']} is not the largest budget"
            )
        longest = max(longest, waited)
    assert longest <= max_total, f"a chain waited {longest} s, the bound is {max_total} s"
