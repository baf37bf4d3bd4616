"""docs/python-api.md runs as written: every ``python title="..."`` block is extracted, loaded as a
module and exercised on moto with the environment the consumer module sets, so a user who copies one
gets what the page says (the Powertools block included, run by Powertools itself)."""

from __future__ import annotations

import json
import logging
import re
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from serverless_retry.clock import FrozenClock
from serverless_retry.testing import lambda_context, sqs_event

from .conftest import Stack, failure_ids
from .test_python_api import RETRY_ONCE, _wire_environment

PAGE = Path(__file__).resolve().parents[2] / "docs" / "python-api.md"
BLOCK = re.compile(
    r'^(?P<indent>[ ]*)```python title="(?P<name>[^"]+)"\n(?P<code>.*?)^(?P=indent)```[ ]*$',
    re.MULTILINE | re.DOTALL,
)
ORDERS = [{"order_id": "o-1", "amount": 20}, {"order_id": "o-2", "amount": 500}, {"order_id": "o-3"}]


def blocks() -> dict[str, str]:
    found: dict[str, str] = {}
    for match in BLOCK.finditer(PAGE.read_text(encoding="utf-8")):
        indent = len(match["indent"])
        found[match["name"]] = "".join(line[indent:] for line in match["code"].splitlines(keepends=True))
    return found


def load(name: str) -> ModuleType:
    """The block named ``name`` as a module (importable under its name while it loads)."""
    module = ModuleType(name.removesuffix(".py"))
    module.__file__ = f"{PAGE}#{name}"
    sys.modules[module.__name__] = module
    try:
        exec(compile(blocks()[name], module.__file__, "exec"), module.__dict__)
    finally:
        del sys.modules[module.__name__]
    return module


@pytest.fixture
def wired(stack: Stack, monkeypatch: pytest.MonkeyPatch) -> Stack:
    _wire_environment(monkeypatch, stack, RETRY_ONCE)
    return stack


def orders_event(stack: Stack) -> tuple[dict[str, Any], dict[str, str]]:
    event = sqs_event(ORDERS, queue_arn=stack.queue_arn)
    ids = {json.loads(r["body"])["order_id"]: r["messageId"] for r in event["Records"]}
    return event, ids


def check_powertools(stack: Stack, clock: FrozenClock, caplog: pytest.LogCaptureFixture) -> None:
    event, ids = orders_event(stack)
    response = load("powertools_batch.py").lambda_handler(event, lambda_context())
    assert failure_ids(response) == [ids["o-2"], ids["o-3"]]  # both back to the queue, as they are


def _retried_and_exhausted(stack: Stack, clock: FrozenClock, response: Any) -> None:
    assert response == {"batchItemFailures": []}
    [final] = stack.receive(stack.exhausted_url)
    envelope = json.loads(final["Body"])
    assert json.loads(envelope["body"])["order_id"] == "o-3"
    assert envelope["serverless_retry"]["outcome"] == "non-retryable"
    clock.advance(31)
    [copy] = stack.receive(stack.queue_url)
    retry = json.loads(copy["Body"])
    assert json.loads(retry["body"])["order_id"] == "o-2"
    assert retry["serverless_retry"]["attempt"] == 2


def check_function(stack: Stack, clock: FrozenClock, caplog: pytest.LogCaptureFixture) -> None:
    event, _ = orders_event(stack)
    response = load("orders_function.py").lambda_handler(event, lambda_context())
    _retried_and_exhausted(stack, clock, response)


def check_decorator(stack: Stack, clock: FrozenClock, caplog: pytest.LogCaptureFixture) -> None:
    event, _ = orders_event(stack)
    module = load("orders_decorator.py")
    with caplog.at_level(logging.ERROR, logger="orders_decorator"):
        response = module.lambda_handler(event, lambda_context())
    _retried_and_exhausted(stack, clock, response)
    [line] = [r.getMessage() for r in caplog.records if r.name == "orders_decorator"]
    assert line.startswith("order o-3 gave up on attempt 1: non-retryable (")


def check_self_healing(stack: Stack, clock: FrozenClock, caplog: pytest.LogCaptureFixture) -> None:
    context = lambda_context()
    result = load("charge_self_healing.py").lambda_handler({"order_id": "o-1"}, context)
    assert result == {"charged": "o-1", "attempt": 1, "key": context.aws_request_id}


def check_test_module(
    stack: Stack, clock: FrozenClock, caplog: pytest.LogCaptureFixture, name: str = "test_orders.py"
) -> None:
    module = load(name)
    tests = [value for name, value in vars(module).items() if name.startswith("test_")]
    assert tests
    for test in tests:
        test()


CHECKS: dict[str, Callable[[Stack, FrozenClock, pytest.LogCaptureFixture], None]] = {
    "powertools_batch.py": check_powertools,
    "orders_function.py": check_function,
    "orders_decorator.py": check_decorator,
    "charge_self_healing.py": check_self_healing,
    "test_orders.py": check_test_module,
    "test_orders_retries.py": lambda stack, clock, caplog: check_test_module(
        stack, clock, caplog, "test_orders_retries.py"
    ),
}


def test_every_block_of_the_page_is_checked() -> None:
    assert set(blocks()) == set(CHECKS)


@pytest.mark.parametrize("name", sorted(CHECKS))
def test_the_page_s_example_does_what_the_page_says(
    name: str, wired: Stack, clock: FrozenClock, caplog: pytest.LogCaptureFixture
) -> None:
    CHECKS[name](wired, clock, caplog)
