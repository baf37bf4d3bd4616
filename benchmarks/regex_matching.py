"""message_regex matching: RE2 (what the consumer uses) against Python's re (the baseline), side by side.

1. A typical rule on a typical error message: µs per match, and the ratio RE2 / re.
2. A pattern that backtracks, ``(a+)+$``, on ``"a" * n + "!"``: re doubles its time with every extra
   character (it is stopped once one match takes over --re-budget seconds); RE2 stays linear, shown up
   to 100,000 characters.

    .venv/bin/python benchmarks/regex_matching.py       # about 10 s on 2 cores
"""

from __future__ import annotations

import argparse
import re
import statistics
import time
from collections.abc import Callable

from serverless_retry.regex import compile_re2

TYPICAL_PATTERN = r"temporar(il)?y unavailable|(?i:throttl)"
TYPICAL_TEXTS = [
    "service temporarily unavailable (request 7f3a-19c2), retry later",
    "ThrottlingException: Rate exceeded for operation PutItem",
    "ValidationError: field 'sku' is required in line 3 of order o-1234",
]
BACKTRACKING = "(a+)+$"


def per_call_us(fn: Callable[[], object], seconds: float) -> float:
    """Median µs per call over a few samples of about ``seconds`` each."""
    calls = 1
    while True:  # calibrate: enough calls for one sample to take ~seconds
        start = time.perf_counter()
        for _ in range(calls):
            fn()
        took = time.perf_counter() - start
        if took >= seconds or calls >= 1 << 22:
            break
        calls *= 2
    samples = []
    for _ in range(5):
        start = time.perf_counter()
        for _ in range(calls):
            fn()
        samples.append((time.perf_counter() - start) / calls * 1e6)
    return statistics.median(samples)


def typical(rounds: int, seconds: float) -> None:
    ours = compile_re2(TYPICAL_PATTERN, "message_regex")
    baseline = re.compile(TYPICAL_PATTERN)
    texts = TYPICAL_TEXTS

    def run_ours() -> object:
        return [ours.search(t) for t in texts]

    def run_re() -> object:
        return [baseline.search(t) is not None for t in texts]

    assert run_ours() == run_re()
    ratios, ours_us, re_us = [], [], []
    for r in range(rounds):  # A then B, then B then A: drift and noise hit both sides alike
        pair = (run_ours, run_re) if r % 2 == 0 else (run_re, run_ours)
        timed = {f: per_call_us(f, seconds) / len(texts) for f in pair}
        ours_us.append(timed[run_ours])
        re_us.append(timed[run_re])
        ratios.append(timed[run_ours] / timed[run_re])
    q = statistics.quantiles(ratios, n=4)
    print("1. a typical rule on typical messages (µs per match, median of rounds)")
    print(f"   RE2 {statistics.median(ours_us):.2f}   re {statistics.median(re_us):.2f}   ", end="")
    print(f"ratio {statistics.median(ratios):.2f}x (25-75%: {q[0]:.2f}-{q[2]:.2f})")


def backtracking(re_budget: float) -> None:
    ours = compile_re2(BACKTRACKING, "message_regex")
    baseline = re.compile(BACKTRACKING)
    print(f"2. {BACKTRACKING} on 'a' * n + '!' (seconds per match)")
    print(f"   {'n':>7}  {'re':>10}  {'RE2':>10}")
    re_stopped = False
    for n in (16, 18, 20, 22, 24, 26, 28, 1_000, 10_000, 100_000):
        text = "a" * n + "!"
        start = time.perf_counter()
        assert not ours.search(text)
        ours_s = time.perf_counter() - start
        re_cell = "(stopped)"
        if not re_stopped and n < 1_000:
            start = time.perf_counter()
            assert baseline.search(text) is None
            re_s = time.perf_counter() - start
            re_cell = f"{re_s:.4f}"
            re_stopped = re_s > re_budget  # each 2 more characters take about 4 times as long
        print(f"   {n:>7}  {re_cell:>10}  {ours_s:>10.6f}")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--sample-seconds", type=float, default=0.05)
    parser.add_argument("--re-budget", type=float, default=1.0, help="stop timing re after a match this slow")
    args = parser.parse_args()
    typical(args.rounds, args.sample_seconds)
    backtracking(args.re_budget)


if __name__ == "__main__":
    main()
