"""docs/self-healing-contract.md and selfheal/types.py describe one contract: every constant value and
every wire field named in types.py must appear in the document (the Terraform module and the local
runtime are built from the document)."""

from __future__ import annotations

import typing
from pathlib import Path

import pytest
from serverless_retry.selfheal import types

DOC = (Path(__file__).resolve().parents[2] / "docs" / "self-healing-contract.md").read_text()


def _constants() -> list[tuple[str, str]]:
    out = []
    for name in types.__all__:
        value = getattr(types, name)
        if isinstance(value, str):
            out.append((name, value))
        elif isinstance(value, tuple):
            out.extend((name, item) for item in value)
    return out


@pytest.mark.parametrize(("name", "value"), _constants())
def test_every_constant_value_is_in_the_document(name: str, value: str) -> None:
    assert value in DOC, f"{name} = {value!r} is not in docs/self-healing-contract.md"


@pytest.mark.parametrize(
    "typed_dict", [types.FailureMeta, types.RetryState, types.ExhaustedRecord, types.SourceConfig]
)
def test_every_field_is_in_the_document(typed_dict: type) -> None:
    missing = [
        field
        for field in typing.get_type_hints(typed_dict)
        if f"`{field}`" not in DOC and f'"{field}"' not in DOC
    ]
    assert missing == []


@pytest.mark.parametrize("literal", [types.SourceType, types.RedriveTo, types.ExhaustedOutcome])
def test_every_literal_value_is_in_the_document(literal: object) -> None:
    missing = [value for value in typing.get_args(literal) if f"`{value}`" not in DOC]
    assert missing == []
