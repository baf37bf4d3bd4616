"""A module that changes a shared stack restores it only when a later test of the run uses it."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from tests.terraform.stack import BY_FIXTURE, used_after

NATIVE = BY_FIXTURE["native_retry_stack"]


def _item(path: str, *fixtures: str) -> Any:
    return SimpleNamespace(fspath=path, fixturenames=list(fixtures))


def _request(module: str, items: list[Any]) -> Any:
    return SimpleNamespace(node=SimpleNamespace(fspath=module), session=SimpleNamespace(items=items))


def test_no_later_user_means_no_restore() -> None:
    items = [
        _item("tests/a.py", "native_retry_stack"),
        _item("tests/b.py", "native_retry_stack"),
        _item("tests/b.py", "native_retry_stack"),
        _item("tests/c.py", "scheduled_retry_stack"),
    ]
    assert not used_after(_request("tests/b.py", items), NATIVE)


def test_a_later_user_in_another_module_needs_the_restore() -> None:
    items = [
        _item("tests/b.py", "native_retry_stack"),
        _item("tests/c.py", "other"),
        _item("tests/d.py", "native_retry_stack"),
    ]
    assert used_after(_request("tests/b.py", items), NATIVE)
    # An earlier user has run already: it does not count.
    assert not used_after(_request("tests/d.py", items), NATIVE)
