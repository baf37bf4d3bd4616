"""Retry policy: parsing with field-path errors, and decide() for every way an error can be classified."""

from __future__ import annotations

import json
import random
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from pathlib import Path
from typing import Any

import pytest
from serverless_retry.backoff import Backoff
from serverless_retry.errors import HttpError, NonRetryableError, PolicyError, RetryableError
from serverless_retry.policy import (
    SQS_MAX_DELAY_SECONDS,
    VISIBILITY_MAX_SECONDS,
    Decision,
    RetryPolicy,
    Rule,
    http_status_of,
    retry_after_hint,
    retry_after_seconds,
)

NOW = datetime(2026, 11, 30, 10, 0, 0, tzinfo=UTC)

# The example policy of docs/retry-policy.md, shared with the benchmarks.
EXAMPLE_POLICY: dict[str, Any] = json.loads(
    (Path(__file__).resolve().parents[1] / "events" / "policy-design.json").read_text()
)


# --- parsing --------------------------------------------------------------------------------------


def test_design_example_parses_and_rule_backoffs_inherit_the_policy_backoff() -> None:
    policy = RetryPolicy.from_json(json.dumps(EXAMPLE_POLICY))
    assert policy.max_attempts == 5
    assert policy.max_age_seconds == 86400
    assert policy.backoff == Backoff("exponential", 10, 2, 3600, "full")
    throttling, timeouts, validation = policy.rules
    assert throttling.errors == ("ThrottlingError",)
    assert throttling.http_status == (429, 503)
    assert throttling.honor_retry_after is True
    # fixed/300 set by the rule; multiplier, cap and jitter inherited from the policy
    assert throttling.backoff == Backoff("fixed", 300, 2, 3600, "full")
    assert timeouts.max_attempts == 8
    assert timeouts.backoff == Backoff("fixed", 30, 2, 3600, "full")
    assert validation.retry is False
    assert validation.backoff is None


def test_empty_object_gives_the_defaults() -> None:
    assert RetryPolicy.from_dict({}) == RetryPolicy()
    assert RetryPolicy() == RetryPolicy(5, None, Backoff(), (), "retry", "auto", True)


def test_to_dict_round_trips() -> None:
    policy = RetryPolicy.from_dict(EXAMPLE_POLICY)
    assert RetryPolicy.from_dict(policy.to_dict()) == policy
    assert RetryPolicy.from_json(json.dumps(policy.to_dict())) == policy
    with_regex = RetryPolicy(rules=(Rule(message_regex="x+", max_attempts=3),), max_age_seconds=60)
    assert RetryPolicy.from_dict(with_regex.to_dict()) == with_regex


def test_terraform_nulls_mean_not_set() -> None:
    # Terraform's jsonencode writes every unset optional attribute of a typed object as null.
    policy = RetryPolicy.from_dict(
        {
            "max_attempts": 3,
            "max_age_seconds": None,
            "backoff": {
                "strategy": "linear",
                "base_seconds": None,
                "multiplier": None,
                "max_seconds": None,
                "jitter": None,
            },
            "rules": [
                {
                    "errors": None,
                    "http_status": [429],
                    "message_regex": None,
                    "retry": None,
                    "max_attempts": None,
                    "backoff": None,
                    "honor_retry_after": None,
                }
            ],
            "unmatched": None,
            "transport": None,
            "honor_retry_after": None,
        }
    )
    assert policy == RetryPolicy(
        max_attempts=3, backoff=Backoff(strategy="linear"), rules=(Rule(http_status=(429,)),)
    )


def test_integral_floats_are_integers() -> None:
    policy = RetryPolicy.from_dict({"max_attempts": 4.0, "rules": [{"http_status": [429.0]}]})
    assert policy.max_attempts == 4
    assert policy.rules[0].http_status == (429,)


BAD: list[tuple[Any, str, str]] = [
    ({"max_attempts": 0}, "max_attempts", "must be >= 1"),
    ({"max_attempts": True}, "max_attempts", "must be an integer, got boolean"),
    ({"max_attempts": 2.5}, "max_attempts", "must be an integer"),
    ({"max_attempts": "5"}, "max_attempts", "must be an integer, got string"),
    ({"max_attempts": 10_001}, "max_attempts", "must be <= 10000"),
    ({"max_age_seconds": 0}, "max_age_seconds", "must be >= 1"),
    ({"max_age_seconds": -60}, "max_age_seconds", "must be >= 1"),
    ({"max_age_seconds": False}, "max_age_seconds", "got boolean"),
    ({"unmatched": "drop"}, "unmatched", "must be one of retry, dead-letter"),
    ({"transport": "pigeon"}, "transport", "must be one of auto, sqs-delay, sqs-hops, scheduler, visibility"),
    ({"honor_retry_after": "yes"}, "honor_retry_after", "must be true or false"),
    ({"honor_retry_after": 1}, "honor_retry_after", "must be true or false"),
    ({"max_attempt": 3}, "max_attempt", "unknown field"),
    ({"backoff": 10}, "backoff", "must be an object"),
    ({"backoff": {"jiter": "full"}}, "backoff.jiter", "unknown field"),
    ({"backoff": {"base_seconds": -1}}, "backoff.base_seconds", "must be >= 0"),
    ({"backoff": {"max_seconds": 10**400}}, "backoff.max_seconds", "must be <= 31536000"),
    (
        {"backoff": {"base_seconds": 20, "max_seconds": 10}},
        "backoff.max_seconds",
        "must be >= base_seconds (20)",
    ),
    ({"rules": {}}, "rules", "must be an array"),
    ({"rules": "TimeoutError"}, "rules", "must be an array"),
    ({"rules": ["TimeoutError"]}, "rules[0]", "must be an object"),
    (
        {"rules": [{"errors": ["A"]}, {}]},
        "rules[1]",
        "needs at least one of errors, http_status, message_regex",
    ),
    ({"rules": [{"errors": [], "http_status": []}]}, "rules[0]", "needs at least one"),
    ({"rules": [{"error": ["A"]}]}, "rules[0].error", "unknown field"),
    ({"rules": [{"errors": "TimeoutError"}]}, "rules[0].errors", "must be an array"),
    ({"rules": [{"errors": ["A", ""]}]}, "rules[0].errors[1]", "exception class name"),
    ({"rules": [{"errors": ["not a name"]}]}, "rules[0].errors[0]", "exception class name"),
    ({"rules": [{"errors": [5]}]}, "rules[0].errors[0]", "exception class name"),
    ({"rules": [{"http_status": 429}]}, "rules[0].http_status", "must be an array"),
    ({"rules": [{"http_status": [99]}]}, "rules[0].http_status[0]", "must be >= 100"),
    ({"rules": [{"http_status": [429, 600]}]}, "rules[0].http_status[1]", "must be <= 599"),
    ({"rules": [{"http_status": [True]}]}, "rules[0].http_status[0]", "got boolean"),
    ({"rules": [{"http_status": ["429"]}]}, "rules[0].http_status[0]", "must be an integer"),
    (
        {"rules": [{"errors": ["A"]}, {"message_regex": "(unclosed"}]},
        "rules[1].message_regex",
        "not a valid RE2 regular expression: missing ): (unclosed",
    ),
    ({"rules": [{"message_regex": 5}]}, "rules[0].message_regex", "must be a string"),
    ({"rules": [{"errors": ["A"], "retry": "no"}]}, "rules[0].retry", "must be true or false"),
    ({"rules": [{"errors": ["A"], "max_attempts": 0}]}, "rules[0].max_attempts", "must be >= 1"),
    ({"rules": [{"errors": ["A"], "max_attempts": False}]}, "rules[0].max_attempts", "got boolean"),
    (
        {"rules": [{"errors": ["A"], "honor_retry_after": "true"}]},
        "rules[0].honor_retry_after",
        "true or false",
    ),
    ({"rules": [{"errors": ["A"], "backoff": []}]}, "rules[0].backoff", "must be an object"),
    (
        {"rules": [{"errors": ["A"]}, {"errors": ["B"], "backoff": {"strategy": "cubic"}}]},
        "rules[1].backoff.strategy",
        "must be one of fixed, linear, exponential",
    ),
    (
        {"rules": [{"errors": ["A"]}, {"errors": ["B"], "backoff": {"jitter": "lots"}}]},
        "rules[1].backoff.jitter",
        "must be one of none, full, equal, decorrelated",
    ),
    (
        {"rules": [{"errors": ["A"], "backoff": {"base_seconds": 7200}}]},
        "rules[0].backoff.base_seconds",
        "must be <= max_seconds (3600, inherited)",
    ),
    (
        {"rules": [{"errors": ["A"], "backoff": {"max_seconds": 5}}]},
        "rules[0].backoff.max_seconds",
        "must be >= base_seconds (10)",
    ),
    ({"rules": [{"errors": ["A"], "backoff": {"cap": 5}}]}, "rules[0].backoff.cap", "unknown field"),
]


@pytest.mark.parametrize(("data", "field", "problem"), BAD, ids=[f"{f}:{p[:24]}" for _, f, p in BAD])
def test_each_bad_field_is_named(data: dict[str, Any], field: str, problem: str) -> None:
    with pytest.raises(PolicyError) as info:
        RetryPolicy.from_dict(data)
    assert info.value.field == field
    assert problem in info.value.problem
    assert f"'{field}'" in str(info.value)
    # the JSON path gives the same answer
    with pytest.raises(PolicyError) as again:
        RetryPolicy.from_json(json.dumps(data))
    assert (again.value.field, again.value.problem) == (info.value.field, info.value.problem)


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("[]", "must be a JSON object, got array"),
        ('"policy"', "must be a JSON object, got string"),
        ("5", "must be a JSON object, got number"),
        ("null", "must be a JSON object, got null"),
        ("true", "must be a JSON object, got boolean"),
        ("{", "not valid JSON"),
        ("", "not valid JSON"),
        ('{"backoff": {"base_seconds": NaN}}', "NaN is not a JSON number"),
        ('{"max_attempts": Infinity}', "Infinity is not a JSON number"),
        ('{"max_attempts": 3, "max_attempts": 4}', "duplicate key 'max_attempts'"),
        ("[" * 100_000, "not valid JSON"),
    ],
)
def test_from_json_rejects_non_objects_and_bad_json(text: str, problem: str) -> None:
    with pytest.raises(PolicyError) as info:
        RetryPolicy.from_json(text)
    assert info.value.field == "$"
    assert problem in info.value.problem


def test_regex_is_compiled_at_parse_time() -> None:
    rule = RetryPolicy.from_dict({"rules": [{"message_regex": "^db (locked|busy)"}]}).rules[0]
    assert rule.matches(RuntimeError("db busy"))
    assert not rule.matches(RuntimeError("the db busy"))


def test_direct_construction_is_validated() -> None:
    with pytest.raises(PolicyError, match="needs at least one"):
        Rule()
    with pytest.raises(PolicyError, match="message_regex"):
        Rule(message_regex="(")
    with pytest.raises(PolicyError, match="max_attempts"):
        RetryPolicy(max_attempts=0)
    with pytest.raises(PolicyError, match="transport"):
        RetryPolicy(transport="carrier")  # type: ignore[arg-type]


# --- decide ---------------------------------------------------------------------------------------


class ThrottlingError(Exception):
    """A user-defined class the rules name."""


class ServiceThrottledError(ThrottlingError):
    """A subclass of a named class: matches through the MRO."""


class ValidationError(ValueError):
    """Named in a retry: false rule."""


class ApiError(Exception):
    def __init__(self, status_code: int) -> None:
        super().__init__(f"api said {status_code}")
        self.status_code = status_code


class _Response:
    def __init__(self, status_code: int, headers: dict[str, str] | None = None) -> None:
        self.status_code = status_code
        self.headers = headers or {}


class RequestsLikeError(Exception):
    """Like requests.HTTPError: the status and headers live on .response."""

    def __init__(self, status_code: int, headers: dict[str, str] | None = None) -> None:
        super().__init__("request failed")
        self.response = _Response(status_code, headers)


class BotocoreLikeError(Exception):
    """Like botocore's ClientError: .response is a dict with ResponseMetadata."""

    def __init__(self, status: int, headers: dict[str, str] | None = None) -> None:
        super().__init__("client error")
        self.response = {"ResponseMetadata": {"HTTPStatusCode": status, "HTTPHeaders": headers or {}}}


POLICY = RetryPolicy.from_dict(
    {
        "max_attempts": 5,
        "max_age_seconds": 86400,
        "backoff": {"strategy": "exponential", "base_seconds": 10, "multiplier": 2, "max_seconds": 3600},
        "rules": [
            {
                "errors": ["ThrottlingError"],
                "http_status": [429, 503],
                "honor_retry_after": True,
                "backoff": {"strategy": "fixed", "base_seconds": 300},
            },
            {
                "errors": ["TimeoutError", "ConnectionError"],
                "max_attempts": 8,
                "backoff": {"strategy": "fixed", "base_seconds": 30},
            },
            {"errors": ["ValidationError", "KeyError"], "retry": False},
            {
                "message_regex": "temporar(il)?y unavailable",
                "backoff": {"strategy": "fixed", "base_seconds": 45},
            },
        ],
    }
)


def decide(
    error: BaseException,
    attempt: int = 1,
    *,
    policy: RetryPolicy = POLICY,
    age: float = 0,
    previous_delay: float | None = None,
) -> Decision:
    return policy.decide(
        error,
        attempt=attempt,
        first_failed_at=NOW - timedelta(seconds=age),
        now=NOW,
        rand=random.Random(7),
        previous_delay=previous_delay,
    )


@pytest.mark.parametrize(
    ("error", "rule_index", "delay"),
    [
        (ThrottlingError("slow down"), 0, 300),
        (ServiceThrottledError("slow down"), 0, 300),  # subclass of a named class
        (HttpError(503), 0, 300),  # HttpError.status
        (HttpError(429, "too many"), 0, 300),
        (ApiError(429), 0, 300),  # .status_code
        (RequestsLikeError(503), 0, 300),  # .response.status_code
        (BotocoreLikeError(429), 0, 300),  # .response["ResponseMetadata"]["HTTPStatusCode"]
        (TimeoutError("read timed out"), 1, 30),
        (ConnectionResetError("reset"), 1, 30),  # builtin subclass of ConnectionError
        (RuntimeError("service temporarily unavailable"), 3, 45),  # message regex
        (RuntimeError("temporary unavailable"), 3, 45),
        (ThrottlingError("temporarily unavailable"), 0, 300),  # matches 0 and 3: first wins
    ],
)
def test_matching_rule_decides_the_backoff(error: BaseException, rule_index: int, delay: int) -> None:
    decision = decide(error)
    assert decision == Decision(
        action="retry",
        delay_seconds=delay,
        transport="sqs-delay",
        attempt=1,
        rule_index=rule_index,
        reason=decision.reason,
        error_type=type(error).__name__,
    )
    assert f"rules[{rule_index}]" in decision.reason


@pytest.mark.parametrize(
    "error", [ValidationError("bad field"), KeyError("order_id")], ids=["user-class", "builtin"]
)
def test_retry_false_rule_is_non_retryable(error: BaseException) -> None:
    decision = decide(error)
    assert (decision.action, decision.delay_seconds, decision.transport, decision.rule_index) == (
        "non-retryable",
        0,
        None,
        2,
    )
    assert "retry: false" in decision.reason


def test_rule_can_name_a_class_by_its_qualified_name() -> None:
    qualified = f"{ThrottlingError.__module__}.{ThrottlingError.__qualname__}"
    policy = RetryPolicy(rules=(Rule(errors=(qualified,), retry=False),))
    assert decide(ServiceThrottledError(), policy=policy).action == "non-retryable"
    assert decide(ValueError(), policy=policy).action == "retry"


def test_status_not_in_any_rule_falls_through() -> None:
    assert decide(ApiError(404)).rule_index is None
    assert decide(RequestsLikeError(500)).rule_index is None


def test_unmatched_errors_retry_on_the_policy_backoff() -> None:
    # exponential 10 * 2**(n-1), no jitter
    assert [decide(ValueError("x"), n).delay_seconds for n in (1, 2, 3, 4)] == [10, 20, 40, 80]
    decision = decide(ValueError("x"))
    assert decision.rule_index is None
    assert "no rule matched" in decision.reason


def test_unmatched_dead_letter_is_non_retryable_but_explicit_retries_still_retry() -> None:
    policy = RetryPolicy(unmatched="dead-letter")
    decision = decide(ValueError("x"), policy=policy)
    assert (decision.action, decision.rule_index) == ("non-retryable", None)
    assert decision.reason == "no rule matches ValueError and unmatched is dead-letter"
    assert decide(RetryableError("again"), policy=policy).action == "retry"
    assert decide(HttpError(500), policy=policy).action == "retry"


def test_non_retryable_error_always_wins() -> None:
    class PermanentError(NonRetryableError):
        pass

    # even a rule that names it and says retry
    policy = RetryPolicy(
        rules=(Rule(errors=("NonRetryableError", "Exception"), retry=True, max_attempts=50),)
    )
    for error in (NonRetryableError("no"), PermanentError("never")):
        decision = decide(error, policy=policy)
        assert (decision.action, decision.delay_seconds, decision.transport) == ("non-retryable", 0, None)
        assert decision.rule_index is None
        assert decision.error_type == type(error).__name__


def test_rule_max_attempts_overrides_the_policy_budget() -> None:
    assert decide(TimeoutError(), 5).action == "retry"  # rule allows 8
    assert decide(TimeoutError(), 7).action == "retry"
    exhausted = decide(TimeoutError(), 8)
    assert (exhausted.action, exhausted.rule_index, exhausted.delay_seconds) == ("exhausted", 1, 0)
    assert exhausted.reason == "attempt 8 >= max_attempts 8 (rules[1])"
    assert decide(ValueError(), 4).action == "retry"
    assert decide(ValueError(), 5).reason == "attempt 5 >= max_attempts 5"
    assert decide(ValueError(), 5).action == "exhausted"
    # a rule without max_attempts uses the policy's
    assert decide(ThrottlingError(), 5).action == "exhausted"


def test_max_age_exhausts_only_when_strictly_older() -> None:
    assert decide(ValueError(), 2, age=86400).action == "retry"
    old = decide(ValueError(), 2, age=86401)
    assert old.action == "exhausted"
    assert old.reason == "first failure 86401 s ago > max_age_seconds 86400"
    assert decide(ValueError(), 2, policy=RetryPolicy(), age=10**8).action == "retry"  # no max_age


@pytest.mark.parametrize(
    ("retry_after", "delay"),
    [
        (120, 120),
        ("120", 120),
        (" 75 ", 75),
        ("1.2", 2),  # rounded up
        (0, 0),
        (7200, 3600),  # clamped to the rule's cap
        (-5, 0),
        (format_datetime(NOW + timedelta(seconds=90), usegmt=True), 90),
        (format_datetime(NOW + timedelta(days=1), usegmt=True), 3600),  # clamped
        (format_datetime(NOW - timedelta(minutes=5), usegmt=True), 0),  # in the past: now
        (NOW + timedelta(seconds=61), 61),
        ("soon", 300),  # unreadable: the rule's backoff
        ("", 300),
    ],
)
def test_retry_after_is_honoured_and_clamped(retry_after: Any, delay: int) -> None:
    decision = decide(HttpError(429, retry_after=retry_after))
    assert (decision.action, decision.rule_index, decision.delay_seconds) == ("retry", 0, delay)


def test_retry_after_from_response_headers_case_insensitive() -> None:
    assert decide(RequestsLikeError(429, {"retry-after": "42"})).delay_seconds == 42
    assert decide(RequestsLikeError(503, {"Retry-After": "43"})).delay_seconds == 43
    assert decide(BotocoreLikeError(429, {"retry-after": "44"})).delay_seconds == 44


def test_retry_after_ignored_where_not_honoured() -> None:
    # rule 1 does not honour Retry-After
    class SlowError(TimeoutError):
        retry_after = 999

    assert decide(SlowError()).delay_seconds == 30
    # no rule matched: the policy's honor_retry_after decides
    assert decide(RetryableError("later", retry_after=60)).delay_seconds == 60
    no_hints = RetryPolicy(honor_retry_after=False)
    assert decide(RetryableError("later", retry_after=60), policy=no_hints).delay_seconds == 10


@pytest.mark.parametrize(("base", "transport", "seconds"), [(900, "sqs-delay", 900), (901, "scheduler", 901)])
def test_auto_transport_switches_above_the_sqs_delay_limit(base: int, transport: str, seconds: int) -> None:
    policy = RetryPolicy(backoff=Backoff(strategy="fixed", base_seconds=base))
    decision = decide(ValueError(), policy=policy)
    assert (decision.transport, decision.delay_seconds) == (transport, seconds)
    assert SQS_MAX_DELAY_SECONDS == 900


def test_fractional_delay_at_the_threshold_rounds_up_before_choosing() -> None:
    policy = RetryPolicy(backoff=Backoff(strategy="fixed", base_seconds=900.5))
    assert (
        decide(ValueError(), policy=policy).transport,
        decide(ValueError(), policy=policy).delay_seconds,
    ) == (
        "scheduler",
        901,
    )


@pytest.mark.parametrize(
    ("transport", "base", "expected"),
    [
        ("sqs-delay", 2000, ("sqs-delay", 900)),
        ("sqs-delay", 30, ("sqs-delay", 30)),
        ("visibility", 50_000, ("visibility", VISIBILITY_MAX_SECONDS)),
        ("visibility", 1200, ("visibility", 1200)),
        ("scheduler", 5, ("scheduler", 5)),
        ("scheduler", 80_000, ("scheduler", 80_000)),
    ],
)
def test_forced_transports_and_their_clamps(transport: Any, base: int, expected: tuple[str, int]) -> None:
    policy = RetryPolicy(
        transport=transport, backoff=Backoff(strategy="fixed", base_seconds=base, max_seconds=86400)
    )
    decision = decide(ValueError(), policy=policy)
    assert (decision.transport, decision.delay_seconds) == expected


def test_delay_is_rounded_up_and_jitter_uses_the_injected_random() -> None:
    policy = RetryPolicy(backoff=Backoff(strategy="fixed", base_seconds=2.2))
    assert decide(ValueError(), policy=policy).delay_seconds == 3
    jittered = RetryPolicy(backoff=Backoff(base_seconds=100, jitter="full"))
    # random.Random(7).random() = 0.3238... → 32.38 → 33
    assert decide(ValueError(), policy=jittered).delay_seconds == 33


def test_previous_delay_feeds_decorrelated_jitter() -> None:
    policy = RetryPolicy(backoff=Backoff(base_seconds=10, jitter="decorrelated"))
    # U(10, 3 * 100) with r = 0.3238... → 103.9 → 104
    assert decide(ValueError(), 2, policy=policy, previous_delay=100).delay_seconds == 104


def test_attempt_must_be_positive() -> None:
    with pytest.raises(ValueError, match="attempt"):
        decide(ValueError(), 0)


def test_hostile_exceptions_do_not_break_deciding() -> None:
    class Hostile(Exception):
        def __str__(self) -> str:
            raise RuntimeError("no str for you")

        @property
        def status(self) -> int:
            raise RuntimeError("no status either")

        @property
        def response(self) -> object:
            raise RuntimeError("nor a response")

    decision = decide(Hostile())
    assert (decision.action, decision.rule_index, decision.delay_seconds) == ("retry", None, 10)


# --- retry_after_seconds --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (None, None),
        (True, None),
        (float("nan"), None),
        (30, 30.0),
        (2.5, 2.5),
        (-1, 0.0),
        ("30", 30.0),
        (b"31", 31.0),
        ("Mon, 30 Nov 2026 10:02:00 GMT", 120.0),
        ("Monday, 30-Nov-26 10:02:00 GMT", 120.0),  # obsolete RFC 850 form
        ("not a date", None),
        ("inf", None),
        (datetime(2026, 11, 30, 10, 0, 30), 30.0),  # naive: UTC
        (datetime(2026, 11, 30, 11, 0, 30, tzinfo=UTC) - timedelta(hours=1), 30.0),
        (object(), None),
    ],
)
def test_retry_after_seconds(value: Any, expected: float | None) -> None:
    assert retry_after_seconds(value, NOW) == expected


class _Slotted(Exception):
    __slots__ = ("status",)

    def __init__(self) -> None:
        super().__init__("slotted")
        self.status = 502


class _ClassLevel(Exception):
    status_code = 503


class _Property(Exception):
    @property
    def retry_after(self) -> int:
        return 7


class _Raising(Exception):
    @property
    def status(self) -> int:
        raise RuntimeError("no status")


class _Dynamic(Exception):
    def __getattr__(self, name: str) -> object:
        return 418 if name == "status" else None


class _HeldResponse:
    status_code = 429
    headers = {"retry-after": "12"}


def _with_instance_attributes() -> Exception:
    error = Exception("plain")
    error.response = _HeldResponse()  # type: ignore[attr-defined]
    return error


@pytest.mark.parametrize(
    ("error", "status", "hint"),
    [
        (_Slotted(), 502, None),
        (_ClassLevel(), 503, None),
        (_Property(), None, 7),
        (_Raising(), None, None),
        (_Dynamic(), 418, None),
        (_with_instance_attributes(), 429, "12"),
        (HttpError(503, retry_after=30), 503, 30),
        (RetryableError("busy"), None, None),
        (ValueError("plain"), None, None),
    ],
)
def test_errors_are_read_as_getattr_reads_them(error: Exception, status: int | None, hint: object) -> None:
    """The decision reads an error's status and Retry-After from its instance dict when its class
    defines none of those names; classes that do (slots, class attributes, properties, __getattr__)
    are read through getattr, as before."""
    assert http_status_of(error) == status
    assert retry_after_hint(error) == hint
