"""Backoff curves and jitter, with exact numbers from a seeded random.Random."""

from __future__ import annotations

import random

import pytest
from serverless_retry.backoff import MAX_DELAY_SECONDS, Backoff
from serverless_retry.errors import PolicyError

# random.Random(7).random() yields these, in order; every jittered expectation below is built from them.
R = (0.32383276483316237, 0.15084917392450192, 0.6509344730398537, 0.07243628666754276)


def test_seed_sequence_is_what_the_table_assumes() -> None:
    rand = random.Random(7)
    assert tuple(rand.random() for _ in R) == R


# base 10, multiplier 3, cap 200; retries 1..4. Un-jittered curves:
#   fixed: 10 10 10 10 | linear: 10 20 30 40 | exponential: 10 30 90 270→200 (capped)
CURVES = {
    "fixed": (10.0, 10.0, 10.0, 10.0),
    "linear": (10.0, 20.0, 30.0, 40.0),
    "exponential": (10.0, 30.0, 90.0, 200.0),
}
# decorrelated, no previous delay: U(base, 3*base) = 10 + 20*r, whatever the strategy
DECORRELATED = tuple(10 + 20 * r for r in R)

TABLE = [
    (strategy, jitter, expected)
    for strategy, curve in CURVES.items()
    for jitter, expected in (
        ("none", curve),
        ("full", tuple(d * r for d, r in zip(curve, R, strict=True))),
        ("equal", tuple(d / 2 + d / 2 * r for d, r in zip(curve, R, strict=True))),
        ("decorrelated", DECORRELATED),
    )
]

LITERALS = {
    # a few spelled out, so the derivation above cannot hide a shared mistake
    ("exponential", "full"): (3.238327648331624, 4.525475217735058, 58.58410257358684, 14.487257333508552),
    ("linear", "equal"): (6.6191638241658115, 11.50849173924502, 24.764017095597808, 21.448725733350855),
    ("fixed", "decorrelated"): (
        16.476655296663246,
        13.016983478490038,
        23.018689460797077,
        11.448725733350855,
    ),
}


@pytest.mark.parametrize(("strategy", "jitter", "expected"), TABLE, ids=[f"{s}-{j}" for s, j, _ in TABLE])
def test_every_strategy_and_jitter_gives_exact_delays(
    strategy: str, jitter: str, expected: tuple[float, ...]
) -> None:
    backoff = Backoff.from_dict(
        {"strategy": strategy, "base_seconds": 10, "multiplier": 3, "max_seconds": 200, "jitter": jitter}
    )
    rand = random.Random(7)
    got = tuple(backoff.delay(n, rand) for n in (1, 2, 3, 4))
    assert got == pytest.approx(expected, rel=1e-12)
    if (strategy, jitter) in LITERALS:
        assert got == pytest.approx(LITERALS[(strategy, jitter)], rel=1e-12)


@pytest.mark.parametrize(("strategy", "curve"), CURVES.items())
def test_base_delay_is_the_unjittered_capped_curve(strategy: str, curve: tuple[float, ...]) -> None:
    backoff = Backoff(strategy=strategy, base_seconds=10, multiplier=3, max_seconds=200)  # type: ignore[arg-type]
    assert tuple(backoff.base_delay(n) for n in (1, 2, 3, 4)) == curve


@pytest.mark.parametrize(
    ("previous", "expected"),
    [
        (None, 10 + 20 * R[0]),  # U(10, 30): the previous sleep starts at base
        (30, 10 + 80 * R[0]),  # U(10, 90)
        (2, 10.0),  # 3 * 2 < base: U(10, max(10, 6)) = exactly base
        (1000, 200.0),  # U(10, 3000) = 980.4 → capped at 200
    ],
)
def test_decorrelated_grows_from_the_previous_delay(previous: float | None, expected: float) -> None:
    backoff = Backoff(base_seconds=10, max_seconds=200, jitter="decorrelated")
    assert backoff.delay(3, random.Random(7), previous) == pytest.approx(expected, rel=1e-12)


def test_exponential_overflow_is_capped_not_an_error() -> None:
    backoff = Backoff(strategy="exponential", base_seconds=1, multiplier=10, max_seconds=3600)
    assert backoff.base_delay(10_000) == 3600
    assert backoff.delay(10_000, random.Random(1)) == 3600


def test_zero_base_gives_immediate_retries() -> None:
    backoff = Backoff(strategy="exponential", base_seconds=0, max_seconds=0, jitter="full")
    assert backoff.base_delay(50) == 0
    assert backoff.delay(50, random.Random(1)) == 0


def test_retry_number_starts_at_one() -> None:
    with pytest.raises(ValueError, match="retry_number"):
        Backoff().base_delay(0)
    with pytest.raises(ValueError, match="retry_number"):
        Backoff(jitter="decorrelated").delay(0, random.Random(1))


def test_defaults_match_the_contract() -> None:
    assert Backoff().to_dict() == {
        "strategy": "exponential",
        "base_seconds": 10,
        "multiplier": 2,
        "max_seconds": 3600,
        "jitter": "none",
    }


def test_from_dict_inherits_unset_and_null_fields_from_defaults() -> None:
    parent = Backoff(strategy="linear", base_seconds=5, multiplier=4, max_seconds=100, jitter="equal")
    child = Backoff.from_dict({"base_seconds": 30, "jitter": None}, path="rules[0].backoff", defaults=parent)
    assert child == Backoff(strategy="linear", base_seconds=30, multiplier=4, max_seconds=100, jitter="equal")


def test_to_dict_round_trips() -> None:
    backoff = Backoff(strategy="fixed", base_seconds=2.5, multiplier=1.5, max_seconds=60, jitter="full")
    assert Backoff.from_dict(backoff.to_dict()) == backoff


BAD = [
    ({"strategy": "quadratic"}, "backoff.strategy", "must be one of fixed, linear, exponential"),
    ({"jitter": "some"}, "backoff.jitter", "must be one of none, full, equal, decorrelated"),
    ({"base_seconds": -1}, "backoff.base_seconds", "must be >= 0"),
    ({"base_seconds": True}, "backoff.base_seconds", "must be a number, got boolean"),
    ({"base_seconds": "10"}, "backoff.base_seconds", "must be a number, got string"),
    ({"base_seconds": float("nan")}, "backoff.base_seconds", "finite"),
    ({"max_seconds": -5, "base_seconds": 0}, "backoff.max_seconds", "must be >= 0"),
    ({"max_seconds": float("inf")}, "backoff.max_seconds", "finite"),
    ({"max_seconds": MAX_DELAY_SECONDS + 1}, "backoff.max_seconds", f"<= {MAX_DELAY_SECONDS}"),
    ({"multiplier": 0.5}, "backoff.multiplier", "must be >= 1"),
    ({"base_seconds": 60, "max_seconds": 30}, "backoff.max_seconds", "must be >= base_seconds (60)"),
    ({"base_seconds": 5000}, "backoff.base_seconds", "must be <= max_seconds (3600, inherited)"),
    ({"cap": 10}, "backoff.cap", "unknown field"),
]


@pytest.mark.parametrize(("data", "field", "problem"), BAD, ids=[b[1] + ":" + b[2][:20] for b in BAD])
def test_bad_fields_are_named(data: dict[str, object], field: str, problem: str) -> None:
    with pytest.raises(PolicyError) as info:
        Backoff.from_dict(data)
    assert info.value.field == field
    assert problem in info.value.problem


def test_non_object_is_rejected() -> None:
    with pytest.raises(PolicyError) as info:
        Backoff.from_dict([1, 2], path="rules[3].backoff")  # type: ignore[arg-type]
    assert (info.value.field, info.value.problem) == ("rules[3].backoff", "must be an object, got array")


def test_direct_construction_is_validated_too() -> None:
    with pytest.raises(PolicyError) as info:
        Backoff(base_seconds=100, max_seconds=10)
    assert info.value.field == "max_seconds"
    with pytest.raises(PolicyError):
        Backoff(jitter="loud")  # type: ignore[arg-type]


def test_keyed_uniform_draws_are_keyed_blake2b_and_the_same_every_time() -> None:
    """The jitter a record gets is a function of its key alone: draw n is BLAKE2b-56 of the key with
    the 16-byte big-endian n as salt, scaled into [a, b); the first draws use pre-salted hashers."""
    import hashlib

    from serverless_retry.backoff import KeyedUniform

    first, again = KeyedUniform("0:m-1:3"), KeyedUniform("0:m-1:3")
    for n in range(7):  # past the pre-salted draws
        digest = hashlib.blake2b(b"0:m-1:3", digest_size=7, salt=n.to_bytes(16, "big")).digest()
        expected = 10 + 20 * (int.from_bytes(digest, "big") / float(1 << 56))
        assert first.uniform(10, 30) == again.uniform(10, 30) == expected
        assert 10 <= expected < 30
    assert KeyedUniform("0:m-2:3").uniform(0, 1) != KeyedUniform("0:m-1:3").uniform(0, 1)
