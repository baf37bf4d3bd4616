"""The bus rules of docs/self-healing-contract.md §2 as data: a reference for the Terraform module's
rendered event patterns (its tests can compare against these) and for the exhaustiveness proof in
tests/unit/test_selfheal_rules.py.

Every event the enrichment emits matches exactly one rule: per source a retry rule and a budget
rule, plus one do-not-retry, one invalid-record and one unknown-source rule.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from serverless_retry.selfheal.types import (
    ALWAYS_EXHAUSTED_ERROR_TYPES,
    BUS_DETAIL_TYPE,
    BUS_SOURCE,
    ERROR_INVALID_RECORD,
    ExhaustedOutcome,
)

__all__ = ["EVENT_PATTERN_MAX_CHARS", "BusRule", "bus_rules"]

EVENT_PATTERN_MAX_CHARS = 2_048  # EventBridge's quota on one event pattern


@dataclass(frozen=True)
class BusRule:
    name: str  # a suffix for the module's rule name
    pattern: dict[str, Any]
    outcome: ExhaustedOutcome | None  # None: the target is the redrive function
    reason: str  # the fixed text of the exhausted rule's InputTransformer


def _pattern(meta: dict[str, Any]) -> dict[str, Any]:
    return {"source": [BUS_SOURCE], "detail-type": [BUS_DETAIL_TYPE], "detail": {"meta": meta}}


def bus_rules(limits: Mapping[str, int], do_not_retry: Iterable[str]) -> list[BusRule]:
    """``limits``: function name -> retry limit (``Source.max_retries``); ``do_not_retry``: the module's
    list (the sentinels are always added)."""
    names = sorted(limits)
    never = sorted({*do_not_retry, *ALWAYS_EXHAUSTED_ERROR_TYPES})
    rules: list[BusRule] = []
    for name in names:
        limit = limits[name]
        retryable = [{"anything-but": never}]
        rules.append(
            BusRule(
                f"retry-{name}",
                _pattern(
                    {
                        "function_name": [name],
                        "error_type": retryable,
                        "retry_count": [{"numeric": ["<", limit]}],
                    }
                ),
                None,
                "",
            )
        )
        rules.append(
            BusRule(
                f"budget-{name}",
                _pattern(
                    {
                        "function_name": [name],
                        "error_type": retryable,
                        "retry_count": [{"numeric": [">=", limit]}],
                    }
                ),
                "exhausted",
                f"retry budget of {name} ({limit} retries) spent",
            )
        )
    rules.append(
        BusRule(
            "do-not-retry",
            _pattern({"function_name": names, "error_type": [t for t in never if t != ERROR_INVALID_RECORD]}),
            "non-retryable",
            "the error type is in the do-not-retry list (or the record names no error type)",
        )
    )
    rules.append(
        BusRule(
            "invalid-record",
            _pattern({"error_type": [ERROR_INVALID_RECORD]}),
            "invalid-failure-record",
            "the failure queue held a record that is not a readable Lambda failure record",
        )
    )
    rules.append(
        BusRule(
            "unknown-source",
            _pattern(
                {
                    "function_name": [{"anything-but": names}],
                    "error_type": [{"anything-but": [ERROR_INVALID_RECORD]}],
                }
            ),
            "unknown-source",
            "the failed function is not a source of this module",
        )
    )
    return rules
