"""DynamoDB JSON (the typed attribute values of stream images and keys) to plain Python. Pure: no boto3.

S -> str, N -> Decimal (exact, as boto3's TypeDeserializer gives it), B -> bytes (base64 in the event),
BOOL -> bool, NULL -> None, M -> dict, L -> list, SS/NS/BS -> set of str/Decimal/bytes.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping
from decimal import Decimal, InvalidOperation
from typing import Any

__all__ = ["DynamoDBJsonError", "deserialise", "deserialise_item"]

# Nesting deeper than DynamoDB allows (32 levels) is not a real image: refused, never a RecursionError.
_MAX_DEPTH = 32


class DynamoDBJsonError(ValueError):
    """A value that is not DynamoDB JSON."""


def _number(text: object) -> Decimal:
    if not isinstance(text, str):
        raise DynamoDBJsonError(f"a number must be a string, got {type(text).__name__}")
    try:
        return Decimal(text)
    except InvalidOperation:
        raise DynamoDBJsonError(f"not a number: {text[:40]!r}") from None


def _binary(text: object) -> bytes:
    if not isinstance(text, str):
        raise DynamoDBJsonError(f"binary must be base64 text, got {type(text).__name__}")
    try:
        return base64.b64decode(text, validate=True)
    except binascii.Error:
        raise DynamoDBJsonError("binary is not valid base64") from None


def _list(value: object, name: str) -> list[Any]:
    if not isinstance(value, list):
        raise DynamoDBJsonError(f"{name} must be a list, got {type(value).__name__}")
    return value


def deserialise(value: object, _depth: int = 0) -> Any:
    """One attribute value, e.g. ``{"N": "1.5"}`` -> ``Decimal("1.5")``."""
    if _depth > _MAX_DEPTH:
        raise DynamoDBJsonError(f"nested deeper than {_MAX_DEPTH} levels")
    if not isinstance(value, Mapping) or len(value) != 1:
        raise DynamoDBJsonError("an attribute value is an object with exactly one type key")
    ((kind, inner),) = value.items()
    if kind == "S":
        if not isinstance(inner, str):
            raise DynamoDBJsonError("S must be a string")
        return inner
    if kind == "N":
        return _number(inner)
    if kind == "B":
        return _binary(inner)
    if kind == "BOOL":
        if not isinstance(inner, bool):
            raise DynamoDBJsonError("BOOL must be true or false")
        return inner
    if kind == "NULL":
        if inner is not True:
            raise DynamoDBJsonError("NULL must be true")
        return None
    if kind == "M":
        return deserialise_item(inner, _depth + 1)
    if kind == "L":
        return [deserialise(v, _depth + 1) for v in _list(inner, "L")]
    if kind == "SS":
        items = _list(inner, "SS")
        if not all(isinstance(s, str) for s in items):
            raise DynamoDBJsonError("SS must hold strings")
        return set(items)
    if kind == "NS":
        return {_number(n) for n in _list(inner, "NS")}
    if kind == "BS":
        return {_binary(b) for b in _list(inner, "BS")}
    raise DynamoDBJsonError(f"unknown attribute type {str(kind)[:20]!r}")


def deserialise_item(item: object, _depth: int = 0) -> dict[str, Any]:
    """A map of attribute values (an image, the keys, an M) -> a plain dict."""
    if not isinstance(item, Mapping):
        raise DynamoDBJsonError(f"an item must be an object, got {type(item).__name__}")
    return {str(name): deserialise(v, _depth) for name, v in item.items()}
