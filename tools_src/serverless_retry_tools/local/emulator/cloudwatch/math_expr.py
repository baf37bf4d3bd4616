"""CloudWatch metric math, the part our alarms use, over aligned series of one alarm's periods.

A series is one value per period (None: no datapoint in that period); a scalar is a number. Per
CloudWatch's "Using math expressions with CloudWatch metrics" page: arithmetic and comparisons work
datapoint by datapoint (a comparison gives 1 or 0), a datapoint missing on either side stays missing,
``FILL(series, value)`` puts ``value`` where a datapoint is missing, and ``IF(condition, a[, b])``
takes ``a`` where the condition is non-zero, else ``b`` (missing without ``b``). ``AND``, ``OR``
and ``NOT`` combine conditions. Division by zero gives a missing datapoint (our reading). Anything
else (other functions, ``METRICS()``, search expressions) raises :class:`Unsupported`.
"""

from __future__ import annotations

import operator
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

__all__ = ["Series", "Unsupported", "Value", "evaluate"]

Series = list[float | None]
Value = float | Series


class Unsupported(ValueError):
    """An expression the emulator does not evaluate (the alarm goes to INSUFFICIENT_DATA)."""


_TOKEN = re.compile(r"\s*(?:(\d+(?:\.\d*)?|\.\d+)|([A-Za-z_][A-Za-z0-9_]*)|(>=|<=|==|!=|[-+*/^(),<>]))")


@dataclass(frozen=True)
class _Token:
    kind: str  # "num", "name", "op", "end"
    text: str


def _tokens(text: str) -> list[_Token]:
    out: list[_Token] = []
    pos = 0
    text = text.rstrip()
    while pos < len(text):
        match = _TOKEN.match(text, pos)
        if match is None:
            raise Unsupported(f"cannot read {text[pos:]!r} in {text!r}")
        number, name, op = match.groups()
        out.append(_Token("num", number) if number else _Token("name", name) if name else _Token("op", op))
        pos = match.end()
    out.append(_Token("end", ""))
    return out


def _lift(fn: Callable[[float, float], float | None]) -> Callable[[Value, Value], Value]:
    """``fn`` datapoint by datapoint, a scalar against every datapoint; missing stays missing."""

    def apply(a: Value, b: Value) -> Value:
        if isinstance(a, list) or isinstance(b, list):
            size = len(a) if isinstance(a, list) else len(b)  # type: ignore[arg-type]
            left = a if isinstance(a, list) else [a] * size
            right = b if isinstance(b, list) else [b] * size
            return [None if x is None or y is None else fn(x, y) for x, y in zip(left, right, strict=True)]
        return fn(a, b)  # type: ignore[return-value]

    return apply


def _divide(a: float, b: float) -> float | None:
    return None if b == 0 else a / b


def _truth(fn: Callable[[float, float], bool]) -> Callable[[float, float], float]:
    return lambda a, b: 1.0 if fn(a, b) else 0.0


_BINARY: dict[str, Callable[[Value, Value], Value]] = {
    "+": _lift(operator.add),
    "-": _lift(operator.sub),
    "*": _lift(operator.mul),
    "/": _lift(_divide),
    "^": _lift(lambda a, b: float(a**b)),
    ">": _lift(_truth(operator.gt)),
    ">=": _lift(_truth(operator.ge)),
    "<": _lift(_truth(operator.lt)),
    "<=": _lift(_truth(operator.le)),
    "==": _lift(_truth(operator.eq)),
    "!=": _lift(_truth(operator.ne)),
    "AND": _lift(_truth(lambda a, b: bool(a) and bool(b))),
    "OR": _lift(_truth(lambda a, b: bool(a) or bool(b))),
}
# Loosest first: each level's operators, parsed left to right.
_LEVELS: tuple[tuple[str, ...], ...] = (
    ("OR",),
    ("AND",),
    (">", ">=", "<", "<=", "==", "!="),
    ("+", "-"),
    ("*", "/"),
    ("^",),
)
_NOT_LEVEL = 2  # NOT binds looser than comparisons, tighter than AND


def _fill(args: Sequence[Value]) -> Value:
    if len(args) != 2 or isinstance(args[1], list):
        raise Unsupported("FILL(series, value) with a number is the form emulated")
    series, value = args[0], float(args[1])
    if not isinstance(series, list):
        return series
    return [value if x is None else x for x in series]


def _if(args: Sequence[Value]) -> Value:
    if len(args) not in (2, 3):
        raise Unsupported("IF takes a condition, a value and optionally an else value")
    cond, then = args[0], args[1]
    other: Value | None = args[2] if len(args) == 3 else None
    lists = [a for a in (cond, then, other) if isinstance(a, list)]
    if not lists:
        return float(then if cond else (other if other is not None else 0.0))  # type: ignore[arg-type]
    size = len(lists[0])

    def at(value: Value | None, i: int) -> float | None:
        if value is None:
            return None
        return value[i] if isinstance(value, list) else value

    out: Series = []
    for i in range(size):
        c = at(cond, i)
        out.append(None if c is None else at(then, i) if c else at(other, i))
    return out


_FUNCTIONS: dict[str, Callable[[Sequence[Value]], Value]] = {"FILL": _fill, "IF": _if}


class _Parser:
    def __init__(self, text: str, lookup: Callable[[str], Value]) -> None:
        self._tokens = _tokens(text)
        self._pos = 0
        self._lookup = lookup
        self._text = text

    def _peek(self) -> _Token:
        return self._tokens[self._pos]

    def _take(self) -> _Token:
        token = self._tokens[self._pos]
        self._pos += 1
        return token

    def _expect(self, text: str) -> None:
        token = self._take()
        if token.text != text:
            raise Unsupported(f"expected {text!r} in {self._text!r}, found {token.text!r}")

    def parse(self) -> Value:
        value = self._level(0)
        if self._peek().kind != "end":
            raise Unsupported(f"unexpected {self._peek().text!r} in {self._text!r}")
        return value

    def _level(self, depth: int) -> Value:
        if depth == len(_LEVELS):
            return self._unary()
        if depth == _NOT_LEVEL and self._peek().text == "NOT":  # NOT a > 2 is NOT (a > 2)
            self._take()
            return _BINARY["=="](self._level(depth), 0.0)
        value = self._level(depth + 1)
        while self._peek().text in _LEVELS[depth]:
            op = self._take().text
            value = _BINARY[op](value, self._level(depth + 1))
        return value

    def _unary(self) -> Value:
        token = self._peek()
        if token.text == "-":
            self._take()
            return _BINARY["*"](-1.0, self._unary())
        return self._primary()

    def _primary(self) -> Value:
        token = self._take()
        if token.kind == "num":
            return float(token.text)
        if token.text == "(":
            value = self._level(0)
            self._expect(")")
            return value
        if token.kind == "name":
            if self._peek().text == "(":
                function = _FUNCTIONS.get(token.text.upper())
                if function is None:
                    raise Unsupported(f"the function {token.text} is not emulated")
                self._take()
                args: list[Value] = []
                if self._peek().text != ")":
                    args.append(self._level(0))
                    while self._peek().text == ",":
                        self._take()
                        args.append(self._level(0))
                self._expect(")")
                return function(args)
            return self._lookup(token.text)
        raise Unsupported(f"unexpected {token.text!r} in {self._text!r}")


def evaluate(expression: str, values: Mapping[str, Value] | Callable[[str], Value]) -> Value:
    """The value of ``expression`` with its ids looked up in ``values`` (a mapping, or a function
    that raises KeyError for an unknown id)."""
    lookup = values if callable(values) else values.__getitem__

    def find(name: str) -> Value:
        try:
            return lookup(name)
        except KeyError:
            raise Unsupported(f"{name!r} names no metric or expression of this alarm") from None

    return _Parser(expression, find).parse()
