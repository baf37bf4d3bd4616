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


@pytest.hookimpl(trylast=True)  # after -k/-m deselection: only what will run
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Start the applies the selected tests need, and run those tests last (in their order), so
    every other tier overlaps the ~90 s applies instead of waiting for them."""
    stack_fixtures = {spec.fixture for spec in STACKS}
    wanted: set[str] = set()
    late: list[pytest.Item] = []
    for item in items:
        names = set(getattr(item, "fixturenames", ()))
        wanted.update(names)
        if names & stack_fixtures:
            late.append(item)
    if not config.option.collectonly:
        REGISTRY.start_wanted(wanted)
    moved = set(late)
    items[:] = [item for item in items if item not in moved] + late


def pytest_sessionfinish() -> None:
    REGISTRY.close()
