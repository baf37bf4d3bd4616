"""message_regex: RE2 syntax, matched in linear time, refused clearly when invalid or when the engine is
missing, and (on the syntax both share) matching exactly as Python's re would."""

from __future__ import annotations

import json
import random
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from serverless_retry import regex
from serverless_retry.config import ConsumerSettings
from serverless_retry.errors import ConfigError, PolicyError
from serverless_retry.policy import RetryPolicy, Rule
from serverless_retry.regex import MATCH_LIMIT_CHARS, compile_re2

ROOT = Path(__file__).resolve().parents[2]

# Patterns a backtracking engine takes exponential time on, each with a text that almost matches.
PATHOLOGICAL = [
    ("(a+)+$", "a" * 100_000 + "!"),
    ("(a|aa)+$", "a" * 100_000 + "!"),
    ("(a*)*b", "a" * 100_000),
    ("^(\\w+\\s?)*$", "word " * 20_000 + "!"),
    ("(x+x+)+y", "x" * 100_000),
]


def test_pathological_patterns_finish_in_linear_time() -> None:
    """Run in a subprocess with a generous timeout: a regression to a backtracking engine fails the test
    (each of these would run for longer than the age of the universe) instead of hanging the suite."""
    script = """
import json, sys, time
from serverless_retry.policy import RetryPolicy
cases = json.load(sys.stdin)
out = []
for pattern, text in cases:
    policy = RetryPolicy.from_dict({"rules": [{"message_regex": pattern, "retry": False}]})
    start = time.monotonic()
    matched = policy.match(RuntimeError(text)) is not None
    out.append([matched, time.monotonic() - start])
print(json.dumps(out))
"""
    result = subprocess.run(
        [sys.executable, "-c", script],
        input=json.dumps(PATHOLOGICAL),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        cwd=ROOT,
    )
    assert result.returncode == 0, result.stderr
    outcomes = json.loads(result.stdout)
    assert [matched for matched, _ in outcomes] == [False] * len(PATHOLOGICAL)
    # Generous: each is a few milliseconds even on a loaded machine.
    assert max(seconds for _, seconds in outcomes) < 10


@pytest.mark.parametrize(
    ("pattern", "problem"),
    [
        ("(unclosed", "missing ): (unclosed"),
        ("a(?=b)", "invalid perl operator: (?="),  # look-ahead: not RE2
        ("(?<!a)b", "invalid perl operator: (?<"),  # look-behind: not RE2
        ("(a)\\1", "invalid escape sequence: \\1"),  # backreference: not RE2
        ("\\Z", "invalid escape sequence: \\Z"),  # Python's end of text; RE2 spells it \\z
        ("a{1001}", "invalid repetition size: {1001}"),  # RE2 caps counted repetition at 1000
        ("(?P<n>a)(?P=n)", "invalid perl operator: (?P"),  # named backreference
    ],
)
def test_patterns_outside_re2_are_policy_errors_naming_the_field(pattern: str, problem: str) -> None:
    with pytest.raises(PolicyError) as info:
        RetryPolicy.from_dict({"rules": [{"errors": ["A"]}, {"message_regex": pattern}]})
    assert info.value.field == "rules[1].message_regex"
    assert info.value.problem.startswith(f"not a valid RE2 regular expression: {problem}")
    assert "backreferences or look-around" in info.value.problem


def test_re2_only_syntax_is_accepted() -> None:
    cases = {
        "timeout\\z": ("read timeout", "timeout!"),
        "\\pL+ \\d+": ("état 503", "503"),
        "\\Qa.b\\E": ("x a.b", "aXb"),
        "(?i)THROTTL": ("throttled", "thread"),
        "(?U)a+": ("aaa", "bbb"),
    }
    for pattern, (hit, miss) in cases.items():
        rule = Rule(message_regex=pattern)
        assert rule.matches(RuntimeError(hit)), pattern
        assert not rule.matches(RuntimeError(miss)), pattern


def test_a_decision_against_a_1_mb_message_takes_milliseconds() -> None:
    """RE2 cannot build a DFA for this pattern (2^100 states) and simulates ~1,000 states per character:
    ~10-30 µs a character here, 11-27 s for the whole 1 MB message. Only MATCH_LIMIT_CHARS (1,024) are
    searched, ~10-30 ms; 0.5 s leaves more than 15x for a machine loaded by other jobs."""
    policy = RetryPolicy.from_dict({"rules": [{"message_regex": "[ab]{1,900}a[ab]{100}c", "retry": False}]})
    rng = random.Random(17)
    error = RuntimeError("".join(rng.choice("ab") for _ in range(1_000_000)))
    now = datetime(2026, 11, 30, tzinfo=UTC)
    start = time.perf_counter()
    decision = policy.decide(error, attempt=1, first_failed_at=now, now=now, rand=random.Random(1))
    elapsed = time.perf_counter() - start
    assert decision.action == "retry"  # no "c" anywhere: the rule (retry: false) does not match
    assert elapsed < 0.5, f"one decision took {elapsed:.2f} s"


def test_a_match_beyond_the_limit_is_not_seen() -> None:
    rule = Rule(message_regex="quota exceeded")
    tail = "quota exceeded"
    assert rule.matches(RuntimeError("x" * (MATCH_LIMIT_CHARS - len(tail)) + tail))
    assert not rule.matches(RuntimeError("x" * (MATCH_LIMIT_CHARS - len(tail) + 1) + tail))
    # The cut is not the end of the text: $ does not match there, \b sees the next character.
    assert not Rule(message_regex="busy$").matches(
        RuntimeError("x" * (MATCH_LIMIT_CHARS - 4) + "busy, retry")
    )
    assert Rule(message_regex="busy$").matches(RuntimeError("x" * (MATCH_LIMIT_CHARS - 4) + "busy"))
    assert not Rule(message_regex=r"busy\b").matches(RuntimeError("x" * (MATCH_LIMIT_CHARS - 4) + "busyness"))
    # Characters, not bytes: a message of multi-byte characters is cut at the same place.
    assert rule.matches(RuntimeError("é" * (MATCH_LIMIT_CHARS - len(tail)) + tail))
    assert not rule.matches(RuntimeError("é" * (MATCH_LIMIT_CHARS - len(tail) + 1) + tail))


def test_dollar_is_the_end_of_the_text_only() -> None:
    """Python's $ also matches before a final newline; RE2's (without (?m)) does not."""
    rule = Rule(message_regex="busy$")
    assert rule.matches(RuntimeError("db busy"))
    assert not rule.matches(RuntimeError("db busy\n"))
    assert Rule(message_regex="(?m)busy$").matches(RuntimeError("db busy\nretry later"))


def test_text_with_lone_surrogates_still_matches() -> None:
    # str(exc) may hold a lone surrogate (from bytes decoded with surrogateescape); RE2 reads UTF-8.
    rule = Rule(message_regex="bad byte .* here")
    assert rule.matches(RuntimeError("bad byte \udcff here"))
    assert not rule.matches(RuntimeError("\udcff"))


def test_a_pattern_with_a_lone_surrogate_is_refused() -> None:
    with pytest.raises(PolicyError, match="lone surrogate"):
        compile_re2("a\ud800", "rules[0].message_regex")


def test_invalid_patterns_do_not_print_to_the_logs(capfd: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(PolicyError):
        compile_re2("(", "message_regex")
    captured = capfd.readouterr()
    assert captured.err == ""
    assert captured.out == ""


@pytest.fixture
def no_engine(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """As in a zip built without google-re2: ``import re2`` fails."""
    regex._engine.cache_clear()
    monkeypatch.setitem(sys.modules, "re2", None)
    yield
    monkeypatch.undo()
    regex._engine.cache_clear()


@pytest.mark.usefixtures("no_engine")
def test_without_the_engine_a_regex_policy_fails_the_cold_start_clearly() -> None:
    environ = {
        "SERVERLESS_RETRY_PROCESSOR": "tests.functional.processors:record",
        "SERVERLESS_RETRY_POLICY": json.dumps(
            {"rules": [{"message_regex": "busy"}], "transport": "sqs-delay"}
        ),
        "SERVERLESS_RETRY_QUEUE_URL": "https://sqs.us-east-1.amazonaws.com/123456789012/orders",
        "SERVERLESS_RETRY_QUEUE_ARN": "arn:aws:sqs:us-east-1:123456789012:orders",
        "SERVERLESS_RETRY_EXHAUSTED_QUEUE_URL": "https://sqs.us-east-1.amazonaws.com/123456789012/x",
        "SERVERLESS_RETRY_DLQ_ARN": "arn:aws:sqs:us-east-1:123456789012:orders-dlq",
    }
    with pytest.raises(ConfigError) as info:
        ConsumerSettings.from_env(environ)
    message = str(info.value)
    assert message.startswith("SERVERLESS_RETRY_POLICY: retry policy field 'rules[0].message_regex': ")
    assert "needs the RE2 engine (package google-re2, module re2)" in message
    # The command a pip user has (docs/packaging.md), not a script of a checkout.
    assert "serverless-retry package function SRC --with-serverless-retry --arch ARCH --python X.Y" in message
    assert "scripts/" not in message
    assert message.endswith("or add google-re2 to your own package")
    # A policy without a regex does not need the engine at all.
    environ["SERVERLESS_RETRY_POLICY"] = json.dumps(
        {"rules": [{"errors": ["TimeoutError"]}], "transport": "sqs-delay"}
    )
    assert ConsumerSettings.from_env(environ).policy.rules[0].errors == ("TimeoutError",)


# --- on the syntax both engines share, RE2 finds exactly what re finds ---------------------------

ALPHABET = "abc1 "


@st.composite
def patterns(draw: st.DrawFn, depth: int = 0) -> str:
    """Regexes from a subset re and RE2 read alike: literals, classes, ., groups, alternation, greedy
    and lazy quantifiers, bounded repetition, anchors (texts have no newline, where $ differs)."""
    atoms = ["a", "b", "c", "1", " ", ".", "[ab]", "[^a ]", "\\d", "\\w", "\\s", "\\b", "^", "$"]
    if depth >= 3:
        return draw(st.sampled_from(atoms))
    kind = draw(st.sampled_from(["atom", "atom", "concat", "alt", "group", "quant"]))
    if kind == "atom":
        return draw(st.sampled_from(atoms))
    if kind == "concat":
        return "".join(draw(st.lists(patterns(depth + 1), min_size=2, max_size=3)))
    if kind == "alt":
        return "|".join(draw(st.lists(patterns(depth + 1), min_size=2, max_size=3)))
    if kind == "group":
        return draw(st.sampled_from(["(", "(?:"])) + draw(patterns(depth + 1)) + ")"
    inner = draw(patterns(depth + 1))
    quantifier = draw(st.sampled_from(["*", "+", "?", "*?", "+?", "??", "{2}", "{1,3}", "{0,2}?"]))
    return f"(?:{inner}){quantifier}"


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(patterns(), st.text(alphabet=ALPHABET, max_size=12), st.booleans())
def test_re2_agrees_with_re_on_a_shared_subset(pattern: str, text: str, ignore_case: bool) -> None:
    if ignore_case:
        pattern, text = f"(?i){pattern}", text.upper()
    found = re.search(pattern, text) is not None
    assert compile_re2(pattern, "message_regex").search(text) is found, (pattern, text)
