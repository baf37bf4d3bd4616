"""EventBridge event patterns: validation and matching, as AWS documents them (pure).

One matcher for the emulator: PutEvents routes with it and TestEventPattern answers with it (see
:mod:`serverless_retry_tools.local.emulator.events_patches`), so a rule proven exhaustive through
TestEventPattern routes the same way. moto's own matcher misses several of AWS's rules (a rule with a
schedule expression matches every event, numbers never equal floats written differently, anything-but
on a missing field, exists on a non-leaf field), so ours follows AWS's documentation and its matching
library, Event Ruler (github.com/aws/event-ruler, README "Ruler by Example" and "JSON Array Matching"):

- a pattern is a JSON object; a leaf is a non-empty array of allowed values; a field matches if any
  of its values matches; all fields must match (``$or``: an array of two or more objects, any of
  which may match);
- literal values match by JSON type: ``"5"`` never matches ``5``, ``300`` matches ``3.0e2``, ``true``
  only ``true``, ``null`` only ``null``;
- an array in the event matches if any element matches (arrays nest and flatten); objects inside an
  array are matched element by element ("array-consistent": two fields of one sub-pattern must come
  from the same element);
- a missing field matches nothing but ``{"exists": false}``; ``exists`` only sees leaves, so a field
  holding an object (or an empty array) counts as absent;
- ``prefix``, ``suffix``, ``equals-ignore-case``, ``wildcard``, ``cidr`` match strings only;
  ``numeric`` matches JSON numbers only (-5e9 ... 5e9);
- ``anything-but`` matches any *present* value that its argument does not match (a value of another
  type included), never a missing field.

Patterns are limited to 2,048 characters (EventBridge quotas: "Event pattern size").
"""

from __future__ import annotations

import ipaddress
import json
import math
import re
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

__all__ = [
    "MAX_PATTERN_CHARS",
    "InvalidEventPattern",
    "matches",
    "parse_pattern",
    "validate_pattern",
]

MAX_PATTERN_CHARS = 2048
_NUMERIC_LIMIT = 5.0e9
_OR = "$or"
_STRING_OPERATORS = ("prefix", "suffix", "equals-ignore-case", "wildcard")
_OPERATORS = (*_STRING_OPERATORS, "anything-but", "numeric", "exists", "cidr")
_LOWER = (">", ">=")
_UPPER = ("<", "<=")


class _Missing:
    def __repr__(self) -> str:
        return "MISSING"


MISSING: Any = _Missing()


class InvalidEventPattern(ValueError):
    """What EventBridge answers with InvalidEventPatternException (the message is AWS's form)."""

    def __init__(self, reason: str) -> None:
        super().__init__(f"Event pattern is not valid. Reason: {reason}")
        self.reason = reason


# --- validation -----------------------------------------------------------------------------------


def parse_pattern(text: str | None) -> dict[str, Any]:
    """The pattern in ``text``, validated; raises InvalidEventPattern."""
    if text is None or not text.strip():
        raise InvalidEventPattern("the pattern is empty")
    if len(text) > MAX_PATTERN_CHARS:
        raise InvalidEventPattern(
            f"the pattern is {len(text)} characters; an event pattern may have at most {MAX_PATTERN_CHARS}"
        )
    try:
        pattern = json.loads(text)
    except ValueError as exc:
        raise InvalidEventPattern(f"Filter is not valid JSON: {exc}") from None
    validate_pattern(pattern)
    assert isinstance(pattern, dict)
    return pattern


def validate_pattern(pattern: object, where: str = "") -> None:
    if not isinstance(pattern, Mapping):
        raise InvalidEventPattern(f"{where or 'the pattern'} must be an object")
    if not pattern and where:
        raise InvalidEventPattern(f"{where} is an empty object")
    for key, value in pattern.items():
        path = f"{where}.{key}" if where else key
        if key == _OR and _is_or(value):
            for n, alternative in enumerate(value):
                validate_pattern(alternative, f"{path}[{n}]")
        elif isinstance(value, Mapping):
            validate_pattern(value, path)
        elif isinstance(value, list):
            if not value:
                raise InvalidEventPattern(f"Empty arrays are not allowed ({path})")
            for item in value:
                _validate_value(item, path)
        else:
            raise InvalidEventPattern(f"'{path}' must be an object or an array")


def _is_or(value: object) -> bool:
    # Event Ruler reads "$or" as Or only for an array of two or more objects; else it is a field name.
    return isinstance(value, list) and len(value) >= 2 and all(isinstance(v, Mapping) for v in value)


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _validate_value(item: object, path: str) -> None:
    if item is None or isinstance(item, str | bool) or _is_number(item):
        if _is_number(item) and not math.isfinite(float(item)):  # type: ignore[arg-type]
            raise InvalidEventPattern(f"{path}: numbers must be finite")
        return
    if not isinstance(item, Mapping):
        raise InvalidEventPattern(
            f"{path}: a value must be a string, number, boolean, null or a match object"
        )
    if len(item) != 1:
        raise InvalidEventPattern(f"{path}: a match object has exactly one key, got {sorted(item)}")
    (operator, argument), *_ = item.items()
    if operator not in _OPERATORS:
        raise InvalidEventPattern(f"Unrecognized match type {operator} ({path})")
    where = f"{path}: {operator}"
    if operator in ("prefix", "suffix"):
        _validate_affix(argument, where)
    elif operator == "equals-ignore-case":
        if not isinstance(argument, str):
            raise InvalidEventPattern(f"{where} must be a string")
    elif operator == "wildcard":
        _validate_wildcard(argument, where)
    elif operator == "exists":
        if not isinstance(argument, bool):
            raise InvalidEventPattern(f"{where} match pattern must be either true or false.")
    elif operator == "cidr":
        try:
            ipaddress.ip_network(str(argument), strict=False)
        except ValueError:
            raise InvalidEventPattern(f"{where}: nonstandard IP address: {argument!r}") from None
        if not isinstance(argument, str):
            raise InvalidEventPattern(f"{where} must be a string")
    elif operator == "numeric":
        _validate_numeric(argument, where)
    else:
        _validate_anything_but(argument, where)


def _validate_affix(argument: object, where: str) -> None:
    if isinstance(argument, Mapping) and list(argument) == ["equals-ignore-case"]:
        argument = argument["equals-ignore-case"]
    if not isinstance(argument, str):
        raise InvalidEventPattern(f"{where} match pattern must be a string literal")


def _validate_wildcard(argument: object, where: str) -> None:
    values = argument if isinstance(argument, list) else [argument]
    for value in values:
        if not isinstance(value, str):
            raise InvalidEventPattern(f"{where} match pattern must be a string literal")
        if "**" in value:
            raise InvalidEventPattern(f"{where}: consecutive wildcard characters are not allowed")
        if re.search(r"\\(?![*\\])", value.replace("\\\\", "")):
            raise InvalidEventPattern(f"{where}: a backslash may only escape '*' or '\\'")


def _validate_numeric(argument: object, where: str) -> None:
    if not isinstance(argument, list) or len(argument) not in (2, 4):
        raise InvalidEventPattern(f"{where} must be a list: [op, value] or [op, value, op, value]")
    pairs = list(zip(argument[::2], argument[1::2], strict=True))
    for op, value in pairs:
        if op not in ("=", *_LOWER, *_UPPER):
            raise InvalidEventPattern(f"{where}: unrecognized numeric range operator {op!r}")
        if not _is_number(value) or not -_NUMERIC_LIMIT <= float(value) <= _NUMERIC_LIMIT:
            raise InvalidEventPattern(f"{where}: {value!r} is not a number from -5.0e9 to 5.0e9")
    if len(pairs) == 2:
        (low_op, low), (high_op, high) = pairs
        if low_op not in _LOWER or high_op not in _UPPER:
            raise InvalidEventPattern(f'{where}: a range is [">" or ">=", low, "<" or "<=", high]')
        if not float(low) < float(high):
            raise InvalidEventPattern(f"{where}: bottom must be less than top")


def _validate_anything_but(argument: object, where: str) -> None:
    if isinstance(argument, str) or _is_number(argument):
        return
    if isinstance(argument, list):
        if not argument:
            raise InvalidEventPattern(f"{where}: Empty arrays are not allowed")
        if not (all(isinstance(a, str) for a in argument) or all(_is_number(a) for a in argument)):
            raise InvalidEventPattern(f"{where}: inside anything-but list, mixed types are not allowed")
        return
    if isinstance(argument, Mapping) and len(argument) == 1:
        (operator, inner), *_ = argument.items()
        if operator in ("prefix", "suffix", "equals-ignore-case"):
            values = inner if isinstance(inner, list) and operator == "equals-ignore-case" else [inner]
            if values and all(isinstance(v, str) for v in values):
                return
        elif operator == "wildcard":
            _validate_wildcard(inner, f"{where}.wildcard")
            return
    raise InvalidEventPattern(
        f"{where}: takes a string, a number, a list of either, or one of prefix / suffix / "
        "equals-ignore-case / wildcard"
    )


# --- matching -------------------------------------------------------------------------------------


def matches(pattern: Mapping[str, Any], event: Any) -> bool:
    """Whether ``event`` (parsed JSON) matches ``pattern`` (a validated pattern object)."""
    return _match_object(pattern, event)


def _flatten(values: Sequence[Any]) -> Iterator[Any]:
    for value in values:
        if isinstance(value, list):
            yield from _flatten(value)
        else:
            yield value


def _match_object(pattern: Mapping[str, Any], node: Any) -> bool:
    if isinstance(node, list):
        elements = [e for e in _flatten(node) if isinstance(e, Mapping)]
        if elements:
            return any(_match_object(pattern, element) for element in elements)
        node = MISSING  # an array of scalars has no named children
    for key, sub in pattern.items():
        if key == _OR and _is_or(sub):
            if not any(_match_object(alternative, node) for alternative in sub):
                return False
            continue
        child = node.get(key, MISSING) if isinstance(node, Mapping) else MISSING
        if isinstance(sub, Mapping):
            if not _match_object(sub, child):
                return False
        elif not _match_leaf(sub, child):
            return False
    return True


def _leaf_values(value: Any) -> list[Any]:
    if value is MISSING or isinstance(value, Mapping):
        return []  # absent, or not a leaf
    if isinstance(value, list):
        return [v for v in _flatten(value) if not isinstance(v, Mapping)]
    return [value]


def _match_leaf(filters: Sequence[Any], value: Any) -> bool:
    values = _leaf_values(value)
    for wanted in filters:
        if isinstance(wanted, Mapping) and "exists" in wanted:
            if bool(wanted["exists"]) == bool(values):
                return True
        elif any(_match_value(wanted, v) for v in values):
            return True
    return False


def _equal(wanted: Any, value: Any) -> bool:
    """Literal equality by JSON type (numbers by value)."""
    if wanted is None or value is None:
        return wanted is None and value is None
    if isinstance(wanted, bool) or isinstance(value, bool):
        return isinstance(wanted, bool) and isinstance(value, bool) and wanted is value
    if _is_number(wanted):
        return _is_number(value) and float(wanted) == float(value)
    return isinstance(value, str) and value == wanted


def _match_value(wanted: Any, value: Any) -> bool:
    if not isinstance(wanted, Mapping):
        return _equal(wanted, value)
    (operator, argument), *_ = wanted.items()
    if operator == "numeric":
        return _is_number(value) and _numeric(argument, float(value))
    if operator == "anything-but":
        return not _anything_but_excludes(argument, value)
    if operator == "cidr":
        return isinstance(value, str) and _in_network(value, argument)
    return isinstance(value, str) and _string_match(operator, argument, value)


def _string_match(operator: str, argument: Any, value: str) -> bool:
    if operator in ("prefix", "suffix"):
        ignore_case = isinstance(argument, Mapping)
        affix: str = argument["equals-ignore-case"] if ignore_case else argument
        subject, affix = (value.lower(), affix.lower()) if ignore_case else (value, affix)
        return subject.startswith(affix) if operator == "prefix" else subject.endswith(affix)
    if operator == "equals-ignore-case":
        options = argument if isinstance(argument, list) else [argument]
        return any(value.lower() == str(o).lower() for o in options)
    if operator == "wildcard":
        options = argument if isinstance(argument, list) else [argument]
        return any(_wildcard(str(o)).fullmatch(value) is not None for o in options)
    return False


def _wildcard(pattern: str) -> re.Pattern[str]:
    parts: list[str] = []
    i = 0
    while i < len(pattern):
        char = pattern[i]
        if char == "\\" and i + 1 < len(pattern):
            parts.append(re.escape(pattern[i + 1]))
            i += 2
            continue
        parts.append(".*" if char == "*" else re.escape(char))
        i += 1
    return re.compile("".join(parts), re.DOTALL)


def _numeric(argument: Sequence[Any], value: float) -> bool:
    checks = {
        "=": value.__eq__,
        ">": value.__gt__,
        ">=": value.__ge__,
        "<": value.__lt__,
        "<=": value.__le__,
    }
    return all(checks[op](float(bound)) for op, bound in zip(argument[::2], argument[1::2], strict=True))


def _anything_but_excludes(argument: Any, value: Any) -> bool:
    """Whether anything-but's argument names ``value`` (a present leaf value)."""
    if isinstance(argument, list):
        return any(_equal(a, value) for a in argument)
    if isinstance(argument, Mapping):
        (operator, inner), *_ = argument.items()
        return isinstance(value, str) and _string_match(operator, inner, value)
    return _equal(argument, value)


def _in_network(value: str, network: str) -> bool:
    try:
        return ipaddress.ip_address(value) in ipaddress.ip_network(network, strict=False)
    except ValueError:
        return False
