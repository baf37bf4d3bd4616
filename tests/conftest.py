"""Cross-tier sharing: each example stack is applied once per test run (see tests/terraform/stack.py).

The applies start as soon as collection is done, in background threads, so they overlap the unit
and functional tiers; the terraform and integration tiers then use the same applied stacks.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable

import pytest

from tests.terraform.stack import REGISTRY, STACKS, Applied, StackSpec


def _stack_fixture(spec: StackSpec) -> Callable[[], Applied]:
    @pytest.fixture(scope="session", name=spec.fixture)
    def applied() -> Applied:
        if shutil.which("terraform") is None:
            pytest.skip("terraform is not on PATH")
        return REGISTRY.get(spec).result()

    return applied


for _spec in STACKS:
    globals()[f"_{_spec.fixture}"] = _stack_fixture(_spec)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    wanted: set[str] = set()
    for item in items:
        wanted.update(getattr(item, "fixturenames", ()))
    REGISTRY.start_wanted(wanted)


def pytest_sessionfinish() -> None:
    REGISTRY.close()
