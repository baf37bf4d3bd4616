"""The import paths users rely on keep working when modules move: the consumer's names through the
``serverless_retry.consumer`` package (one module until 0.2), 0.2's ``serverless_retry.queue_redrive``,
and every ``from serverless_retry... import ...`` the README, the docs and the examples show."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest
import serverless_retry.consumer as consumer_package
import serverless_retry.queue_redrive as queue_redrive_0_2
from serverless_retry.consumer import retrying_consumer
from serverless_retry.redrive import queue

ROOT = Path(__file__).resolve().parents[2]
SHOWN = re.compile(r"^\s*from (serverless_retry[\w.]*) import ([\w, ]+)$", re.MULTILINE)


def _shown_imports() -> list[tuple[str, str, str]]:
    pages = [
        ROOT / "README.md",
        *sorted((ROOT / "docs").rglob("*.md")),
        *sorted((ROOT / "examples").rglob("*.py")),
    ]
    found: set[tuple[str, str, str]] = set()
    for page in pages:
        text = page.read_text(encoding="utf-8")
        for module, names in SHOWN.findall(text):
            for name in names.split(","):
                if name.strip():
                    found.add((str(page.relative_to(ROOT)), module, name.strip()))
    return sorted(found)


@pytest.mark.parametrize("name", consumer_package.__all__)
def test_the_consumer_package_names_what_the_consumer_module_did(name: str) -> None:
    assert getattr(consumer_package, name) is getattr(retrying_consumer, name)


def test_the_consumer_package_lists_every_name_of_the_consumer_module() -> None:
    # The list is written twice (the package names them lazily, without importing the loop): kept equal.
    assert sorted(consumer_package.__all__) == sorted(retrying_consumer.__all__)


def test_the_consumer_package_refuses_a_name_it_does_not_have() -> None:
    with pytest.raises(AttributeError, match="no attribute 'nothing_here'"):
        _ = consumer_package.nothing_here


@pytest.mark.parametrize("name", queue.__all__)
def test_queue_redrive_of_0_2_names_the_redrive_objects(name: str) -> None:
    assert getattr(queue_redrive_0_2, name) is getattr(queue, name)


def test_the_pages_show_imports() -> None:
    assert len(_shown_imports()) >= 10  # the scan below reads what the pages hold


@pytest.mark.parametrize(("page", "module", "name"), _shown_imports())
def test_every_import_a_page_shows_works(page: str, module: str, name: str) -> None:
    imported = importlib.import_module(module)
    if not hasattr(imported, name):
        importlib.import_module(
            f"{module}.{name}"
        )  # a submodule, as in `from serverless_retry import testing`
    else:
        assert getattr(imported, name) is not None, f"{page}: from {module} import {name}"
