"""The retry policy: parse and validate it (docs/retry-policy.md), and classify a failure into a Decision.

Pure: the clock (``now``) and the randomness (``rand``) are arguments, so a decision is reproducible.
"""

# (No ``from __future__ import annotations``: class annotations stay real types, which a NamedTuple,
# TypedDict or dataclass reads at import far cheaper than strings typing compiles into ForwardRefs.)
import functools
import json
import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import TYPE_CHECKING, Any, Literal, NamedTuple, get_args

from serverless_retry.backoff import (
    MAX_ATTEMPTS_LIMIT,
    Backoff,
    fmt,
    json_kind,
    require_bool,
    require_choice,
    require_int,
    require_mapping,
    require_object,
)
from serverless_retry.errors import HttpError, NonRetryableError, PolicyError, RetryableError, RetryAfter
from serverless_retry.regex import RE2Pattern, compile_re2

if TYPE_CHECKING:
    from serverless_retry.backoff import Uniform

__all__ = [
    "MAX_ATTEMPTS_LIMIT",
    "SQS_MAX_DELAY_SECONDS",
    "TRANSPORTS",
    "UNMATCHED",
    "VISIBILITY_MAX_SECONDS",
    "Action",
    "Decision",
    "ResolvedTransport",
    "RetryPolicy",
    "Rule",
    "Transport",
    "Unmatched",
    "http_status_of",
    "retry_after_hint",
    "retry_after_seconds",
]

Transport = Literal["auto", "sqs-delay", "sqs-hops", "scheduler", "visibility"]
# sqs-hops: SQS delays of <= 900 s at a time, the copy carrying its due time (no Scheduler, any delay).
# Fair queues (a standard queue whose producers set MessageGroupId): sqs-delay, sqs-hops and the copy to
# the retry-exhausted queue keep the producer's group; a "scheduler" retry cannot (EventBridge Scheduler
# documents SqsParameters.MessageGroupId for FIFO targets only), so that copy and the retries after it
# go without it. Use "sqs-hops" to keep every retry in its tenant's group.
ResolvedTransport = Literal["sqs-delay", "sqs-hops", "scheduler", "visibility"]
Action = Literal["retry", "exhausted", "non-retryable"]
Unmatched = Literal["retry", "dead-letter"]
TRANSPORTS: tuple[Transport, ...] = get_args(Transport)
UNMATCHED: tuple[Unmatched, ...] = get_args(Unmatched)

SQS_MAX_DELAY_SECONDS = 900
VISIBILITY_MAX_SECONDS = 43200

_RULE_FIELDS = (
    "errors",
    "http_status",
    "message_regex",
    "retry",
    "max_attempts",
    "backoff",
    "honor_retry_after",
)
_POLICY_FIELDS = (
    "max_attempts",
    "max_age_seconds",
    "backoff",
    "rules",
    "unmatched",
    "transport",
    "honor_retry_after",
)


def _given(fields: Mapping[str, object]) -> dict[str, object]:
    """Absent and null mean the same: "not set". Terraform's jsonencode writes unset optional
    attributes of a typed object as null, so null must inherit the default, not fail."""
    return {k: v for k, v in fields.items() if v is not None}


def _require_list(value: object, path: str) -> list[object] | tuple[object, ...]:
    if not isinstance(value, list | tuple):
        raise PolicyError(path, f"must be an array, got {json_kind(value)}")
    return value


def _check_error_name(value: object, path: str) -> str:
    if not isinstance(value, str) or not value or not all(p.isidentifier() for p in value.split(".")):
        raise PolicyError(path, f"must be an exception class name such as 'TimeoutError', got {value!r}")
    return value


def _check_status(value: object, path: str) -> int:
    return require_int(value, path, minimum=100, maximum=599)


@dataclass(frozen=True)
class Rule:
    """Which errors a rule covers and how they are retried. It matches when ANY of its criteria do."""

    errors: tuple[str, ...] = ()  # class names, matched anywhere in type(exc).__mro__ (or module.Qualname)
    http_status: tuple[int, ...] = ()  # HttpError.status, or .status / .status_code / .response.status_code
    # RE2 syntax, searched for in the first 1,024 characters of str(exc) (regex.MATCH_LIMIT_CHARS), so a
    # decision takes milliseconds whatever the size of the error; text beyond them is never seen.
    message_regex: str | None = None
    retry: bool = True
    max_attempts: int | None = None  # overrides the policy's for errors this rule matches
    backoff: Backoff | None = None  # merged over the policy's by from_dict
    honor_retry_after: bool = False
    _pattern: RE2Pattern | None = field(default=None, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "errors", tuple(self.errors))
        object.__setattr__(self, "http_status", tuple(self.http_status))
        for i, name in enumerate(self.errors):
            _check_error_name(name, f"errors[{i}]")
        for i, status in enumerate(self.http_status):
            _check_status(status, f"http_status[{i}]")
        if self.message_regex is not None:
            object.__setattr__(self, "_pattern", compile_re2(self.message_regex, "message_regex"))
        if not (self.errors or self.http_status or self.message_regex is not None):
            raise PolicyError("rule", "needs at least one of errors, http_status, message_regex")
        require_bool(self.retry, "retry")
        require_bool(self.honor_retry_after, "honor_retry_after")
        if self.max_attempts is not None:
            require_int(self.max_attempts, "max_attempts", minimum=1, maximum=MAX_ATTEMPTS_LIMIT)

    @classmethod
    def from_dict(
        cls, data: Mapping[str, object], *, path: str = "rule", defaults: Backoff | None = None
    ) -> "Rule":
        """Parse one JSON rule; its backoff inherits every field it does not set from ``defaults``."""
        given = _given(require_mapping(data, path, _RULE_FIELDS))
        errors = tuple(
            _check_error_name(v, f"{path}.errors[{i}]")
            for i, v in enumerate(_require_list(given.get("errors", []), f"{path}.errors"))
        )
        statuses = tuple(
            _check_status(v, f"{path}.http_status[{i}]")
            for i, v in enumerate(_require_list(given.get("http_status", []), f"{path}.http_status"))
        )
        regex = given.get("message_regex")
        if regex is not None:
            compile_re2(regex, f"{path}.message_regex")
        if not (errors or statuses or regex is not None):
            raise PolicyError(path, "needs at least one of errors, http_status, message_regex")
        max_attempts = given.get("max_attempts")
        backoff = given.get("backoff")
        return cls(
            errors=errors,
            http_status=statuses,
            message_regex=regex if isinstance(regex, str) else None,
            retry=require_bool(given.get("retry", True), f"{path}.retry"),
            max_attempts=(
                None
                if max_attempts is None
                else require_int(max_attempts, f"{path}.max_attempts", minimum=1, maximum=MAX_ATTEMPTS_LIMIT)
            ),
            backoff=(
                None
                if backoff is None
                else Backoff.from_dict(
                    require_object(backoff, f"{path}.backoff"), path=f"{path}.backoff", defaults=defaults
                )
            ),
            honor_retry_after=require_bool(
                given.get("honor_retry_after", False), f"{path}.honor_retry_after"
            ),
        )

    def to_dict(self) -> dict[str, object]:
        out: dict[str, object] = {
            "errors": list(self.errors),
            "http_status": list(self.http_status),
            "retry": self.retry,
            "honor_retry_after": self.honor_retry_after,
        }
        if self.message_regex is not None:
            out["message_regex"] = self.message_regex
        if self.max_attempts is not None:
            out["max_attempts"] = self.max_attempts
        if self.backoff is not None:
            out["backoff"] = self.backoff.to_dict()
        return out

    def matches(self, error: BaseException) -> bool:
        if self.errors and not _class_names(error).isdisjoint(self.errors):
            return True
        if self.http_status:
            status = http_status_of(error)
            if status is not None and status in self.http_status:
                return True
        if self._pattern is not None:
            return self._pattern.search(_safe_str(error))
        return False

    def describe(self) -> str:
        parts = []
        if self.errors:
            parts.append("errors " + ", ".join(self.errors))
        if self.http_status:
            parts.append("http_status " + ", ".join(map(str, self.http_status)))
        if self.message_regex is not None:
            parts.append(f"message_regex {self.message_regex!r}")
        return "; ".join(parts)


# What decides a failure before its attempt and time (RetryPolicy._prefix): the matching rule's index
# and the rule, a refusal (why no attempt can succeed) or None, the attempt budget, the backoff, and
# whether a Retry-After hint sets the delay. A plain tuple: one class fewer to build at cold start.
_Prefix = tuple["int | None", "Rule | None", "str | None", int, Backoff, bool]


_UNKNOWN: Any = object()


class Decision(NamedTuple):
    """What to do with a failure. A NamedTuple, not a frozen dataclass: one is made per failed record,
    and a frozen dataclass sets each of its fields through object.__setattr__."""

    action: Action
    delay_seconds: int  # logical seconds until the next attempt (0 unless action == "retry")
    transport: ResolvedTransport | None  # None unless retry
    attempt: int  # the attempt that just failed (1 = first delivery)
    rule_index: int | None  # which rule matched (None = no rule)
    reason: str  # human text, e.g. "attempt 5 >= max_attempts 5"
    error_type: str  # type(exc).__name__


_tuple_new = tuple.__new__


@dataclass(frozen=True)
class RetryPolicy:
    """A retry policy (docs/retry-policy.md): the budget, the backoff, the rules, where retries go."""

    max_attempts: int = 5
    max_age_seconds: int | None = None
    backoff: Backoff = field(default_factory=Backoff)
    rules: tuple[Rule, ...] = ()
    unmatched: Unmatched = "retry"
    transport: Transport = "auto"
    honor_retry_after: bool = True  # for errors no rule matched (e.g. a bare RetryableError(retry_after=))
    # error class → the rules its errors may match (_candidates): every failed record is matched
    _by_class: dict[type, tuple[tuple[int, Rule, bool], ...]] = field(
        default_factory=dict, init=False, repr=False, compare=False, hash=False
    )
    # error class → its _prefix, for errors that carry nothing else (None: its text may decide)
    _by_class_prefix: dict[type, _Prefix | None] = field(
        default_factory=dict, init=False, repr=False, compare=False, hash=False
    )

    def __post_init__(self) -> None:
        object.__setattr__(self, "rules", tuple(self.rules))
        require_int(self.max_attempts, "max_attempts", minimum=1, maximum=MAX_ATTEMPTS_LIMIT)
        if self.max_age_seconds is not None:
            require_int(self.max_age_seconds, "max_age_seconds", minimum=1)
        require_choice(self.unmatched, "unmatched", UNMATCHED)
        require_choice(self.transport, "transport", TRANSPORTS)
        require_bool(self.honor_retry_after, "honor_retry_after")

    @classmethod
    def from_dict(cls, data: Mapping[str, object]) -> "RetryPolicy":
        """Validate a JSON policy; a PolicyError names the bad field, e.g. ``rules[2].backoff.jitter``."""
        given = _given(require_mapping(data, "$", _POLICY_FIELDS))
        max_attempts = require_int(
            given.get("max_attempts", 5), "max_attempts", minimum=1, maximum=MAX_ATTEMPTS_LIMIT
        )
        max_age = given.get("max_age_seconds")
        backoff = Backoff.from_dict(require_object(given.get("backoff", {}), "backoff"), path="backoff")
        rules = tuple(
            Rule.from_dict(require_object(rule, f"rules[{i}]"), path=f"rules[{i}]", defaults=backoff)
            for i, rule in enumerate(_require_list(given.get("rules", []), "rules"))
        )
        return cls(
            max_attempts=max_attempts,
            max_age_seconds=None if max_age is None else require_int(max_age, "max_age_seconds", minimum=1),
            backoff=backoff,
            rules=rules,
            unmatched=require_choice(given.get("unmatched", "retry"), "unmatched", UNMATCHED),
            transport=require_choice(given.get("transport", "auto"), "transport", TRANSPORTS),
            honor_retry_after=require_bool(given.get("honor_retry_after", True), "honor_retry_after"),
        )

    @classmethod
    def from_json(cls, text: str) -> "RetryPolicy":
        def no_constants(name: str) -> object:
            raise PolicyError("$", f"not valid JSON: {name} is not a JSON number")

        def no_duplicates(pairs: list[tuple[str, object]]) -> dict[str, object]:
            out: dict[str, object] = {}
            for key, value in pairs:
                if key in out:
                    raise PolicyError("$", f"duplicate key {key!r}: one of them would be silently ignored")
                out[key] = value
            return out

        try:
            data = json.loads(text, parse_constant=no_constants, object_pairs_hook=no_duplicates)
        except (ValueError, TypeError, RecursionError) as exc:
            if isinstance(exc, PolicyError):
                raise
            raise PolicyError("$", f"not valid JSON: {exc}") from None
        if not isinstance(data, dict):
            raise PolicyError("$", f"must be a JSON object, got {json_kind(data)}")
        return cls.from_dict(data)

    def to_dict(self) -> dict[str, object]:
        out: dict[str, object] = {
            "max_attempts": self.max_attempts,
            "backoff": self.backoff.to_dict(),
            "rules": [rule.to_dict() for rule in self.rules],
            "unmatched": self.unmatched,
            "transport": self.transport,
            "honor_retry_after": self.honor_retry_after,
        }
        if self.max_age_seconds is not None:
            out["max_age_seconds"] = self.max_age_seconds
        return out

    @property
    def max_delay_seconds(self) -> int:
        """The longest delay this policy can give a retry: the largest cap among its backoffs (a
        Retry-After hint is capped by them too), in whole seconds as decisions round up."""
        caps = [
            self.backoff.max_seconds,
            *(r.backoff.max_seconds for r in self.rules if r.backoff is not None),
        ]
        return math.ceil(max(caps))

    def match(self, error: BaseException) -> tuple[int, Rule] | None:
        """The first rule that matches ``error``, with its index."""
        # Rule.matches for each rule in turn, in two steps: which rules can match an error of this
        # class (its names decide, or its status or text might), worked out once per class; then
        # those, reading the error's status and text only when one of them asks.
        status: int | bool | None = False  # False: not read yet
        text: str | None = None
        for index, rule, by_class in self._candidates(error):
            if by_class:
                return index, rule
            if rule.http_status:
                if status is False:
                    status = http_status_of(error)
                if status is not None and status in rule.http_status:
                    return index, rule
            if rule._pattern is not None:
                if text is None:
                    text = _safe_str(error)
                if rule._pattern.search(text):
                    return index, rule
        return None

    def _prefix(self, error: BaseException) -> _Prefix:
        """What decides a failure before its attempt and time: the matching rule, a refusal (the
        non-retryable reason), the attempt budget, the backoff, whether a Retry-After is honoured."""
        error_type = type(error).__name__
        if isinstance(error, NonRetryableError):
            refusal = f"{error_type}: the processor says no attempt can succeed"
            return (None, None, refusal, self.max_attempts, self.backoff, False)
        matched = self.match(error)
        if matched is None:
            if self.unmatched == "dead-letter" and not isinstance(error, RetryableError | HttpError):
                refusal = f"no rule matches {error_type} and unmatched is dead-letter"
                return (None, None, refusal, self.max_attempts, self.backoff, False)
            return (None, None, None, self.max_attempts, self.backoff, self.honor_retry_after)
        index, rule = matched
        if not rule.retry:
            refusal = f"rules[{index}] ({rule.describe()}) says retry: false"
            return (index, rule, refusal, self.max_attempts, self.backoff, False)
        return (
            index,
            rule,
            None,
            self.max_attempts if rule.max_attempts is None else rule.max_attempts,
            self.backoff if rule.backoff is None else rule.backoff,
            rule.honor_retry_after,
        )

    def _class_prefix(self, error: BaseException) -> _Prefix | None:
        """``_prefix`` for an error that carries nothing but its class (and text, when no rule that
        could match it reads the text): the same for every such error of the class. None otherwise."""
        if not _carries_nothing(error):
            return None
        kind = type(error)
        prefix: _Prefix | None = self._by_class_prefix.get(kind, _UNKNOWN)
        if prefix is _UNKNOWN:
            by_text = any(
                rule._pattern is not None for _, rule, by_class in self._candidates(error) if not by_class
            )
            prefix = None if by_text else self._prefix(error)
            if len(self._by_class_prefix) < _TYPE_NAMES_KEPT:
                self._by_class_prefix[kind] = prefix
        return prefix

    def _candidates(self, error: BaseException) -> tuple[tuple[int, Rule, bool], ...]:
        """The rules an error of this class may match, in order, up to the first its class matches
        (True: matched by class); the others match by status or text, if at all."""
        kind = type(error)
        try:
            found = self._by_class.get(kind)
        except TypeError:  # a class whose metaclass makes it unhashable
            found = None
        if found is None:
            names = _class_names(error)
            listed: list[tuple[int, Rule, bool]] = []
            for index, rule in enumerate(self.rules):
                if rule.errors and not names.isdisjoint(rule.errors):
                    listed.append((index, rule, True))
                    break
                if rule.http_status or rule._pattern is not None:
                    listed.append((index, rule, False))
            found = tuple(listed)
            try:
                if len(self._by_class) < _TYPE_NAMES_KEPT:
                    self._by_class[kind] = found
            except TypeError:
                pass
        return found

    def decide(
        self,
        error: BaseException,
        *,
        attempt: int,
        first_failed_at: datetime,
        now: datetime,
        rand: "Uniform",
        previous_delay: float | None = None,
    ) -> Decision:
        """Classify the failure of attempt ``attempt`` (1 = first delivery): retry (when, how),
        exhausted (budget spent) or non-retryable."""
        if attempt < 1:
            raise ValueError(f"attempt must be >= 1, got {attempt}")
        error_type = type(error).__name__
        # What the error's class and contents decide (which rule, whether it may retry, the budget and
        # the backoff): remembered per class for errors that carry nothing else the rules read.
        prefix = self._class_prefix(error)
        hinted_by = error if prefix is None else None  # a Retry-After hint needs a carried attribute
        if prefix is None:
            prefix = self._prefix(error)
        index, rule, refusal, max_attempts, backoff, honour = prefix
        if refusal is not None:
            return Decision("non-retryable", 0, None, attempt, index, refusal, error_type)

        if attempt >= max_attempts:
            where = f" (rules[{index}])" if rule is not None and rule.max_attempts is not None else ""
            reason = f"attempt {attempt} >= max_attempts {max_attempts}{where}"
            return Decision("exhausted", 0, None, attempt, index, reason, error_type)
        if self.max_age_seconds is not None:
            age = (now - first_failed_at).total_seconds()
            if age > self.max_age_seconds:
                reason = f"first failure {age:.0f} s ago > max_age_seconds {self.max_age_seconds}"
                return Decision("exhausted", 0, None, attempt, index, reason, error_type)

        delay = backoff.delay(attempt, rand, previous_delay)
        hint = retry_after_hint(hinted_by) if honour and hinted_by is not None else None
        hinted = None if hint is None else retry_after_seconds(hint, now)
        if hinted is None:
            why = backoff.described
        else:
            delay = min(max(hinted, 0.0), float(backoff.max_seconds))
            why = f"Retry-After {fmt(hinted)} s, capped at {fmt(backoff.max_seconds)} s"
        seconds = math.ceil(delay)
        transport: ResolvedTransport
        chosen = self.transport
        if chosen == "auto":
            transport = "sqs-delay" if seconds <= SQS_MAX_DELAY_SECONDS else "scheduler"
        elif chosen == "sqs-delay":
            transport, seconds = "sqs-delay", min(seconds, SQS_MAX_DELAY_SECONDS)
        elif chosen == "visibility":
            transport, seconds = "visibility", min(seconds, VISIBILITY_MAX_SECONDS)
        elif chosen == "sqs-hops":
            transport = "sqs-hops"
        else:
            transport = "scheduler"
        matched_text = "no rule matched" if index is None else f"rules[{index}]"
        reason = f"retry {attempt + 1} in {seconds} s via {transport} ({matched_text}; {why})"
        # (made through tuple.__new__, as every retried record makes one: the NamedTuple's own __new__
        # adds a Python call that costs more than the tuple)
        return _tuple_new(Decision, ("retry", seconds, transport, attempt, index, reason, error_type))


# --- reading errors defensively: a processor may raise anything, and deciding must not fail -------


def _safe_attr(obj: object, name: str) -> object:
    try:
        return getattr(obj, name, None)
    except Exception:  # a property that raises is "not there"
        return None


# The attributes decisions read from an error. An error whose class defines none of them (no class
# attribute, property or slot by these names, no __getattr__ / __getattribute__ of its own) holds
# them in its instance __dict__ or not at all: they are read from there, without getattr's lookups
# through the class and the exception a missing attribute costs (every failed record asks five times).
_ERROR_ATTRIBUTES = frozenset({"status", "status_code", "response", "retry_after"})
_PLAIN_CLASSES: dict[type, bool] = {}


def _plain_fields(error: BaseException) -> dict[str, object] | None:
    """The error's instance dict when its class is plain (above), else None."""
    kind = type(error)
    try:
        plain = _PLAIN_CLASSES.get(kind)
    except TypeError:  # a class whose metaclass makes it unhashable
        return None
    if plain is None:
        plain = (
            kind.__getattribute__ is BaseException.__getattribute__
            and not hasattr(kind, "__getattr__")
            and not any(_ERROR_ATTRIBUTES.intersection(vars(c)) for c in kind.__mro__)
        )
        if len(_PLAIN_CLASSES) < _TYPE_NAMES_KEPT:
            _PLAIN_CLASSES[kind] = plain
    fields = getattr(error, "__dict__", None) if plain else None
    return fields if type(fields) is dict else None


def _error_getter(error: BaseException) -> Callable[[str], object]:
    fields = _plain_fields(error)
    if fields is not None:
        return fields.get
    return lambda name: _safe_attr(error, name)


def _carries_nothing(error: BaseException) -> bool:
    """Whether the error carries none of the attributes decisions read (a plain class, and none of
    them set on the instance): then its class alone decides which rule matches and how."""
    fields = _plain_fields(error)
    if fields is None:
        return False
    get = fields.get  # (unrolled: a generator over _ERROR_ATTRIBUTES costs more than the four reads)
    return (
        get("status") is None
        and get("status_code") is None
        and get("response") is None
        and (get("retry_after") is None)
    )


def _safe_str(error: BaseException) -> str:
    try:
        return str(error)
    except Exception:
        return ""


def _class_names(error: BaseException) -> frozenset[str]:
    """Every class in the error's MRO, by plain name and by ``module.QualName``."""
    kind = type(error)
    try:
        names = _TYPE_NAMES.get(kind)
    except TypeError:  # a class whose metaclass makes it unhashable
        return _type_names(kind)
    if names is None:
        names = _type_names(kind)
        if len(_TYPE_NAMES) < _TYPE_NAMES_KEPT:
            _TYPE_NAMES[kind] = names
    return names


def _type_names(kind: type) -> frozenset[str]:
    names: set[str] = set()
    for cls in kind.__mro__:
        names.add(cls.__name__)
        names.add(f"{cls.__module__}.{cls.__qualname__}")
    return frozenset(names)


# By class: every rule of every decision asks, and a processor raises a handful of types.
_TYPE_NAMES: dict[type, frozenset[str]] = {}
_TYPE_NAMES_KEPT = 256


def _as_status(value: object) -> int | None:
    if isinstance(value, int) and not isinstance(value, bool):
        return int(value)
    return None


def http_status_of(error: BaseException) -> int | None:
    """The HTTP status an error carries: HttpError.status, ``.status``, ``.status_code``,
    ``.response.status_code`` (requests/httpx), or botocore's ``response["ResponseMetadata"]``."""
    read = _error_getter(error)
    status = _as_status(read("status"))
    if status is None:
        status = _as_status(read("status_code"))
    if status is not None:
        return status
    response = read("response")
    if response is None:
        return None
    status = _as_status(_safe_attr(response, "status_code"))
    if status is None and isinstance(response, Mapping):
        metadata = response.get("ResponseMetadata")
        if isinstance(metadata, Mapping):
            status = _as_status(metadata.get("HTTPStatusCode"))
    return status


def _header(headers: object, name: str) -> object:
    """A header by case-insensitive name from any mapping-like object; None when absent."""
    if headers is None:
        return None
    try:
        if isinstance(headers, Mapping):
            for key, value in headers.items():
                if isinstance(key, str) and key.lower() == name.lower():
                    return value
            return None
        getter = getattr(headers, "get", None)
        if callable(getter):
            return getter(name)
    except Exception:
        return None
    return None


def retry_after_hint(error: BaseException) -> object:
    """The raw Retry-After an error carries: ``.retry_after``, else ``.response.headers["Retry-After"]``
    (or botocore's ``response["ResponseMetadata"]["HTTPHeaders"]``). None when it carries none."""
    read = _error_getter(error)
    value = read("retry_after")
    if value is not None:
        return value
    response = read("response")
    if response is None:
        return None
    headers = _safe_attr(response, "headers")
    if headers is None and isinstance(response, Mapping):
        metadata = response.get("ResponseMetadata")
        headers = metadata.get("HTTPHeaders") if isinstance(metadata, Mapping) else None
    return _header(headers, "Retry-After")


@functools.cache
def _delta_seconds() -> re.Pattern[str]:
    """Compiled on the first Retry-After string read, not at cold start."""
    return re.compile(r"\d+(\.\d+)?")


def retry_after_seconds(value: RetryAfter | object, now: datetime) -> float | None:
    """Seconds to wait from a Retry-After value: a number of seconds, a delta-seconds string, an
    HTTP-date string (RFC 9110), or a datetime (naive = UTC). A time in the past gives 0; anything
    unreadable gives None (the hint is ignored)."""
    raw: object = value
    if isinstance(raw, bytes):
        raw = raw.decode("latin-1")
    if raw is None or isinstance(raw, bool):
        return None
    if isinstance(raw, int | float):
        return None if math.isnan(raw) else max(0.0, float(raw))
    when: datetime
    if isinstance(raw, datetime):
        when = raw
    elif isinstance(raw, str):
        text = raw.strip()
        if _delta_seconds().fullmatch(text):
            return float(text)
        try:
            when = parsedate_to_datetime(text)
        except (TypeError, ValueError, IndexError):
            return None
    else:
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    reference = now if now.tzinfo is not None else now.replace(tzinfo=UTC)
    return max(0.0, (when - reference).total_seconds())
