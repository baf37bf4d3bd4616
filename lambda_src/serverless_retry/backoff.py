"""Delay curves and jitter. Pure: randomness is passed in, so every delay is reproducible in tests.

Also holds the small field validators that ``policy.py`` shares, so both report a bad field the same
way: ``PolicyError(<dotted path>, <problem>)``.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Literal, Protocol, TypeVar, cast, get_args

from serverless_retry.errors import PolicyError

Strategy = Literal["fixed", "linear", "exponential"]
Jitter = Literal["none", "full", "equal", "decorrelated"]
STRATEGIES: tuple[Strategy, ...] = get_args(Strategy)
JITTERS: tuple[Jitter, ...] = get_args(Jitter)

# No delay or cap may exceed a year: a longer wait is a configuration mistake, and unbounded values
# would overflow the datetime arithmetic that turns a delay into a Scheduler at().
MAX_DELAY_SECONDS = 365 * 24 * 3600
# No policy budget may exceed this and the envelope refuses an attempt above it (re-exported by
# policy as MAX_ATTEMPTS_LIMIT and by envelope as MAX_ATTEMPT); here, so the envelope's readers
# need not import the policy.
MAX_ATTEMPTS_LIMIT = 10_000

__all__ = [
    "JITTERS",
    "MAX_ATTEMPTS_LIMIT",
    "MAX_DELAY_SECONDS",
    "STRATEGIES",
    "Backoff",
    "Jitter",
    "Strategy",
]

_T = TypeVar("_T", bound=str)


# --- field validators shared with policy.py -------------------------------------------------------


def json_kind(value: object) -> str:
    """A JSON-ish name for a value's type, for error messages."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, Mapping):
        return "object"
    if isinstance(value, list | tuple):
        return "array"
    return type(value).__name__


def fmt(value: float) -> str:
    """A number as a person writes it: 3600, not 3600.0 or 3.6e+03."""
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e15:
        return str(int(value))
    return repr(value) if isinstance(value, float) else str(value)


def require_number(value: object, path: str, *, minimum: float = 0.0, maximum: float = math.inf) -> float:
    """A finite int or float (bools are not numbers here) within [minimum, maximum]."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise PolicyError(path, f"must be a number, got {json_kind(value)}")
    if isinstance(value, float) and not math.isfinite(value):  # (a huge int would overflow isfinite)
        raise PolicyError(path, f"must be a finite number, got {value}")
    if value < minimum:
        raise PolicyError(path, f"must be >= {fmt(minimum)}, got {fmt(value)}")
    if value > maximum:
        raise PolicyError(path, f"must be <= {fmt(maximum)}, got {fmt(value)}")
    return value


def require_int(value: object, path: str, *, minimum: int, maximum: int | None = None) -> int:
    """An integer (an integral float such as 5.0 is accepted; bools are not integers)."""
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise PolicyError(path, f"must be an integer, got {json_kind(value)} {value!r}")
    if value < minimum:
        raise PolicyError(path, f"must be >= {minimum}, got {value}")
    if maximum is not None and value > maximum:
        raise PolicyError(path, f"must be <= {maximum}, got {value}")
    return value


def require_bool(value: object, path: str) -> bool:
    if not isinstance(value, bool):
        raise PolicyError(path, f"must be true or false, got {json_kind(value)} {value!r}")
    return value


def require_choice(value: object, path: str, choices: Sequence[_T]) -> _T:
    if not isinstance(value, str) or value not in choices:
        raise PolicyError(path, f"must be one of {', '.join(choices)}, got {value!r}")
    return cast(_T, value)


def require_object(value: object, path: str) -> Mapping[str, object]:
    if not isinstance(value, Mapping):
        raise PolicyError(path, f"must be an object, got {json_kind(value)}")
    return cast(Mapping[str, object], value)


def require_mapping(value: object, path: str, known: Sequence[str]) -> Mapping[str, object]:
    """A JSON object whose keys are all known: a typo must not pass silently."""
    value = require_object(value, path)
    for key in value:
        if key not in known:
            where = f"{path}.{key}" if path != "$" else str(key)
            raise PolicyError(where, f"unknown field (known fields: {', '.join(known)})")
    return value


def join_path(path: str, key: str) -> str:
    return key if path in ("", "$") else f"{path}.{key}"


# --- the backoff itself ---------------------------------------------------------------------------

_BACKOFF_FIELDS = ("strategy", "base_seconds", "multiplier", "max_seconds", "jitter")


@dataclass(frozen=True)
class Backoff:
    """A delay curve (fixed, linear, exponential) with its cap and jitter."""

    strategy: Strategy = "exponential"
    base_seconds: float = 10
    multiplier: float = 2  # exponential: base * multiplier**(n-1); linear: base * n (multiplier unused)
    max_seconds: float = 3600  # the cap, applied always (also after jitter)
    jitter: Jitter = "none"

    def __post_init__(self) -> None:
        # Direct construction is validated too; field names are relative here (from_dict adds the path).
        _check(self, "")

    @classmethod
    def from_dict(
        cls, data: Mapping[str, object], *, path: str = "backoff", defaults: Backoff | None = None
    ) -> Backoff:
        """Parse a JSON backoff. Fields it does not set (absent or null) come from ``defaults``."""
        fields = require_mapping(data, path, _BACKOFF_FIELDS)
        base = defaults if defaults is not None else cls()
        given = {k: v for k, v in fields.items() if v is not None}
        values = {name: given.get(name, getattr(base, name)) for name in _BACKOFF_FIELDS}
        strategy = require_choice(values["strategy"], join_path(path, "strategy"), STRATEGIES)
        base_seconds = require_number(
            values["base_seconds"], join_path(path, "base_seconds"), maximum=MAX_DELAY_SECONDS
        )
        multiplier = require_number(values["multiplier"], join_path(path, "multiplier"), minimum=1)
        max_seconds = require_number(
            values["max_seconds"], join_path(path, "max_seconds"), maximum=MAX_DELAY_SECONDS
        )
        jitter = require_choice(values["jitter"], join_path(path, "jitter"), JITTERS)
        if max_seconds < base_seconds:
            # Blame the field this object set; if it set both (or neither), the cap.
            if "base_seconds" in given and "max_seconds" not in given:
                raise PolicyError(
                    join_path(path, "base_seconds"),
                    f"must be <= max_seconds ({fmt(max_seconds)}, inherited), got {fmt(base_seconds)}",
                )
            raise PolicyError(
                join_path(path, "max_seconds"),
                f"must be >= base_seconds ({fmt(base_seconds)}), got {fmt(max_seconds)}",
            )
        return cls(strategy, base_seconds, multiplier, max_seconds, jitter)

    def to_dict(self) -> dict[str, object]:
        return {name: getattr(self, name) for name in _BACKOFF_FIELDS}

    @cached_property
    def _curve(self) -> dict[int, float]:
        return {}

    @cached_property
    def described(self) -> str:
        """How its delays are drawn, as a decision's reason says it."""
        return f"{self.strategy} backoff, jitter {self.jitter}"

    def base_delay(self, retry_number: int) -> float:
        """The un-jittered delay before retry ``retry_number`` (1 = the first retry), capped."""
        if retry_number < 1:
            raise ValueError(f"retry_number must be >= 1, got {retry_number}")
        base, cap = float(self.base_seconds), float(self.max_seconds)
        if base == 0:
            return 0.0
        if self.strategy == "fixed":
            raw = base
        elif self.strategy == "linear":
            raw = base * retry_number
        else:
            try:
                raw = base * float(self.multiplier) ** (retry_number - 1)
            except OverflowError:  # multiplier**n beyond float range: the cap wins anyway
                raw = math.inf
        return min(raw, cap)

    def delay(self, retry_number: int, rand: Uniform, previous_delay: float | None = None) -> float:
        """The jittered delay, always within [0, max_seconds].

        full: U(0, d); equal: d/2 + U(0, d/2); decorrelated (AWS Architecture Blog, "Exponential
        Backoff And Jitter"): U(base, 3 * previous), where the previous sleep starts at base, so the
        first retry draws from U(base, 3 * base). Decorrelated ignores the strategy's curve.
        """
        cap = float(self.max_seconds)
        if self.jitter == "decorrelated":
            if retry_number < 1:
                raise ValueError(f"retry_number must be >= 1, got {retry_number}")
            base = float(self.base_seconds)
            previous = base
            if previous_delay is not None and math.isfinite(previous_delay) and previous_delay > 0:
                previous = float(previous_delay)
            value = rand.uniform(base, max(base, 3 * previous))
        else:
            curve = self._curve
            d = curve.get(retry_number)
            if d is None:  # a policy's retries draw from a few points of its curve: remembered
                if len(curve) >= 1024:
                    curve.clear()
                d = curve[retry_number] = self.base_delay(retry_number)
            if self.jitter == "full":
                value = rand.uniform(0, d)
            elif self.jitter == "equal":
                value = d / 2 + rand.uniform(0, d / 2)
            else:
                value = d
        # min(max(value, 0.0), cap), spelt as comparisons: the builtins cost every failed record more
        value = 0.0 if value < 0.0 else value
        return cap if value > cap else value


def _check(backoff: Backoff, path: str) -> None:
    require_choice(backoff.strategy, join_path(path, "strategy"), STRATEGIES)
    base = require_number(backoff.base_seconds, join_path(path, "base_seconds"), maximum=MAX_DELAY_SECONDS)
    require_number(backoff.multiplier, join_path(path, "multiplier"), minimum=1)
    cap = require_number(backoff.max_seconds, join_path(path, "max_seconds"), maximum=MAX_DELAY_SECONDS)
    require_choice(backoff.jitter, join_path(path, "jitter"), JITTERS)
    if cap < base:
        raise PolicyError(
            join_path(path, "max_seconds"), f"must be >= base_seconds ({fmt(base)}), got {fmt(cap)}"
        )


if TYPE_CHECKING:  # (a Protocol class costs every cold start a little; only type checkers need it)

    class Uniform(Protocol):
        """What a backoff draws its jitter from: ``random.Random`` or a ``KeyedUniform``."""

        def uniform(self, a: float, b: float) -> float: ...


class KeyedUniform:
    """Deterministic jitter for one key: ``uniform`` draws from BLAKE2b of the key and a counter.

    A decision must be the same every time its record is seen (per retry id and attempt), so the
    jitter is keyed; seeding a Mersenne Twister per record for one draw cost about 5 us a record (more
    than the rest of a hand-written re-enqueue), a keyed hash well under 1 us. Not a random.Random
    subclass: making one of those seeds a generator even when it is never used (2 us a record)."""

    __slots__ = ("_draws", "_key")

    def __init__(self, key: str) -> None:
        self._key = key.encode()
        self._draws = 0

    def uniform(self, a: float, b: float) -> float:
        draws = self._draws
        if draws < len(_HASHES):  # the same hash as below, from a hasher salted once: no argument parsing
            hasher = _HASHES[draws].copy()
            hasher.update(self._key)
        else:
            hasher = hashlib.blake2b(self._key, digest_size=7, salt=draws.to_bytes(16, "big"))
        self._draws = draws + 1
        return a + (b - a) * (_from_bytes(hasher.digest(), "big") / _UNIT)


_HASHES = tuple(
    hashlib.blake2b(digest_size=7, salt=n.to_bytes(16, "big")) for n in range(4)
)  # one draw a backoff
_UNIT = float(1 << 56)
_from_bytes = int.from_bytes  # (bound once: reading it from int makes a bound method every draw)
