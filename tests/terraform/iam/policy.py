"""An evaluator of IAM policy documents, for the requests our code and AWS's services make.

It implements what the modules' documents use and fails loudly on anything else (an unknown condition
operator, a policy element it does not know), so a policy it cannot judge is never judged "allowed":

- ``Effect`` Allow / Deny; an explicit Deny wins, no Allow means an implicit deny;
- ``Action`` / ``NotAction``: case-insensitive, with ``*`` and ``?`` wildcards;
- ``Resource`` / ``NotResource``: case-sensitive ARN patterns with ``*`` and ``?``;
- ``Principal`` (resource-based policies): ``"*"``, ``{"AWS": ...}``, ``{"Service": ...}``;
- ``Condition``: String(Not)Equals, String(Not)Like, ArnEquals/ArnLike (and Not), Bool, with
  ``IfExists``; a key missing from the request context fails a positive operator (and satisfies a
  negated one), as IAM's policy evaluation logic documents.
"""

from __future__ import annotations

import fnmatch
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

__all__ = ["Request", "Statement", "Verdict", "evaluate", "statements"]

Decision = Literal["allow", "deny", "implicit-deny"]
_KNOWN = {"Sid", "Effect", "Action", "NotAction", "Resource", "NotResource", "Principal", "Condition"}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def _glob(pattern: str, *, case: bool) -> re.Pattern[str]:
    # fnmatch's [] classes do not exist in IAM: escape them, keep * and ?.
    text = fnmatch.translate(pattern.replace("[", "\0").replace("]", "\1"))
    text = text.replace("\0", r"\[").replace("\1", r"\]")
    return re.compile(text, 0 if case else re.IGNORECASE)


def _matches(patterns: Iterable[str], value: str, *, case: bool) -> bool:
    return any(_glob(p, case=case).match(value) for p in patterns)


@dataclass(frozen=True)
class Request:
    """One authorisation question: may ``principal`` do ``action`` on ``resource``?"""

    action: str  # service:Action, e.g. sqs:SendMessage
    resource: str  # the exact ARN
    context: Mapping[str, str] = field(default_factory=dict)  # condition keys, e.g. iam:PassedToService
    principal: Mapping[str, str] | None = None  # for resource policies: {"Service": "events.amazonaws.com"}


@dataclass(frozen=True)
class Statement:
    document: str  # which document it came from (a role policy's name, a queue policy, ...)
    index: int
    raw: Mapping[str, Any]

    @property
    def sid(self) -> str:
        return str(self.raw.get("Sid") or f"#{self.index}")

    @property
    def effect(self) -> str:
        return str(self.raw["Effect"])

    def actions(self) -> list[str]:
        return [str(a) for a in _list(self.raw.get("Action", []))]

    def resources(self) -> list[str]:
        return [str(r) for r in _list(self.raw.get("Resource", []))]

    def applies(self, request: Request) -> bool:
        raw = self.raw
        unknown = set(raw) - _KNOWN
        if unknown:
            raise ValueError(
                f"{self.document} {self.sid}: policy elements this evaluator does not know: {unknown}"
            )
        if "Action" in raw:
            if not _matches(self.actions(), request.action, case=False):
                return False
        elif _matches([str(a) for a in _list(raw["NotAction"])], request.action, case=False):
            return False
        if "Resource" in raw:
            if not _matches(self.resources(), request.resource, case=True):
                return False
        elif "NotResource" in raw and _matches(
            [str(r) for r in _list(raw["NotResource"])], request.resource, case=True
        ):
            return False
        if "Principal" in raw and not _principal_matches(raw["Principal"], request.principal):
            return False
        return all(
            _condition(operator, key, _list(values), request.context)
            for operator, block in raw.get("Condition", {}).items()
            for key, values in block.items()
        )


def _principal_matches(principal: Any, requester: Mapping[str, str] | None) -> bool:
    if principal == "*":
        return True
    if requester is None:
        return False
    for kind, values in principal.items():
        if kind not in ("AWS", "Service"):
            raise ValueError(f"principal type this evaluator does not know: {kind}")
        if kind in requester and (_list(values) == ["*"] or requester[kind] in _list(values)):
            return True
    return False


_OPERATORS = {
    "StringEquals": (lambda a, v: a == v, False),
    "StringNotEquals": (lambda a, v: a == v, True),
    "StringLike": (lambda a, v: _glob(v, case=True).match(a) is not None, False),
    "StringNotLike": (lambda a, v: _glob(v, case=True).match(a) is not None, True),
    "ArnEquals": (lambda a, v: a == v, False),
    "ArnNotEquals": (lambda a, v: a == v, True),
    "ArnLike": (lambda a, v: _glob(v, case=True).match(a) is not None, False),
    "ArnNotLike": (lambda a, v: _glob(v, case=True).match(a) is not None, True),
    "Bool": (lambda a, v: a.lower() == str(v).lower(), False),
}


def _condition(operator: str, key: str, values: Sequence[Any], context: Mapping[str, str]) -> bool:
    if_exists = operator.endswith("IfExists")
    name = operator.removesuffix("IfExists")
    if name not in _OPERATORS:
        raise ValueError(f"condition operator this evaluator does not know: {operator}")
    test, negated = _OPERATORS[name]
    # Condition keys are case-insensitive.
    actual = next((v for k, v in context.items() if k.lower() == key.lower()), None)
    if actual is None:
        return if_exists or negated
    hit = any(test(actual, str(v)) for v in values)
    return not hit if negated else hit


def statements(name: str, document: str | Mapping[str, Any]) -> list[Statement]:
    doc = json.loads(document) if isinstance(document, str) else document
    return [Statement(name, i, s) for i, s in enumerate(_list(doc.get("Statement", [])))]


@dataclass(frozen=True)
class Verdict:
    decision: Decision
    allowed_by: tuple[Statement, ...] = ()
    denied_by: tuple[Statement, ...] = ()

    @property
    def allowed(self) -> bool:
        return self.decision == "allow"


def evaluate(policy: Iterable[Statement], request: Request) -> Verdict:
    """IAM's verdict for one principal's policies (identity-based, or a resource's)."""
    allows: list[Statement] = []
    denies: list[Statement] = []
    for statement in policy:
        if statement.applies(request):
            (denies if statement.effect == "Deny" else allows).append(statement)
    if denies:
        return Verdict("deny", tuple(allows), tuple(denies))
    return Verdict("allow" if allows else "implicit-deny", tuple(allows))
