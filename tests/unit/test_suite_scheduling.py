"""tests/scheduling.py's spread: the suite's tiers interleaved, each in its own order."""

from __future__ import annotations

from tests.scheduling import spread


def test_each_tier_spreads_evenly_and_keeps_its_order() -> None:
    items = (
        [f"functional/{n}" for n in range(6)]
        + ["integration/a", "integration/b"]
        + [f"terraform/{n}" for n in range(4)]
    )
    out = spread(items, lambda item: item.split("/")[0])
    assert sorted(out) == sorted(items)
    for tier in ("functional", "integration", "terraform"):
        assert [i for i in out if i.startswith(tier)] == [i for i in items if i.startswith(tier)]
    # The two integration items sit in the first and the second half, not together at one end.
    positions = [out.index("integration/a"), out.index("integration/b")]
    assert positions[0] < len(out) / 2 <= positions[1]


def test_one_tier_stays_as_it_was() -> None:
    items = ["unit/b", "unit/a", "unit/c"]
    assert spread(items, lambda item: "unit") == items
