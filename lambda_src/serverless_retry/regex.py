"""Message regexes: RE2 syntax, matched in linear time by Google's RE2 engine (package google-re2).

Why RE2: a rule's ``message_regex`` runs inside the consumer on the text of every failure. Python's
``re`` backtracks, so a pattern like ``(a+)+$`` takes exponential time on a short message that almost
matches; RE2 never backtracks and takes time linear in the text, whatever the pattern. RE2 is also the
dialect of Terraform's ``regex()``, so the pattern Terraform checks at plan time is the one matched here.

No fallback: when the engine cannot be imported (say, a zip built without it), a policy that has a
``message_regex`` is refused with a PolicyError naming the field, which fails the cold start with a
ConfigError. Matching it with ``re`` instead would bring the backtracking back silently.

Bounded text: a pattern is matched against the first MATCH_LIMIT_CHARS (1,024) characters of the text
only. Linear is in the text's length times the pattern's size: RE2 runs ``[ab]{1,900}a[ab]{100}c``
(its DFA would need 2^100 states, so it falls back to a simulation of about a thousand states) at
roughly 10 µs a character, 11-27 s against a 1 MB error message. Cut to 1,024 characters, one decision
stays within tens of milliseconds for such a pattern and a few microseconds for a usual one, whatever
the size of the error. The cut is seen as the text going on, not ending there: ``$`` and ``\b`` do not
match at it, so ``busy$`` never matches a long message merely because it was cut after "busy".
"""

from __future__ import annotations

import functools
import re
from typing import Any

from serverless_retry.errors import PolicyError

__all__ = ["MATCH_LIMIT_CHARS", "LazyPattern", "RE2Pattern", "compile_re2"]


class LazyPattern:
    """A Python ``re`` pattern of our own (never a user's: those are RE2), compiled on first use.
    Compiling costs 0.1-0.3 ms a pattern in a cold interpreter; the envelope's checks of copies and
    attributes are never needed by a batch that only succeeds, so its cold start does not pay them."""

    __slots__ = ("_flags", "_pattern", "_text")

    def __init__(self, text: str, flags: int = 0) -> None:
        self._text, self._flags = text, flags
        self._pattern: re.Pattern[str] | None = None

    @property
    def compiled(self) -> re.Pattern[str]:
        if self._pattern is None:
            self._pattern = re.compile(self._text, self._flags)
        return self._pattern

    def fullmatch(self, text: str) -> re.Match[str] | None:
        return self.compiled.fullmatch(text)

    def match(self, text: str) -> re.Match[str] | None:
        return self.compiled.match(text)

    def search(self, text: str) -> re.Match[str] | None:
        return self.compiled.search(text)

    def sub(self, replacement: str, text: str) -> str:
        return self.compiled.sub(replacement, text)


@functools.cache
def _surrogates() -> re.Pattern[str]:
    """RE2 reads UTF-8; a lone surrogate (possible in a Python str, never in valid Unicode text) cannot
    be encoded, so error text is cleaned of them before matching and a pattern holding one is refused.
    Compiled on first use (~0.2 ms, a 2,048-character class): only non-ASCII text can hold one."""
    return re.compile("[\ud800-\udfff]")


# How much of a text a pattern sees (see the module docstring): error messages put what identifies them
# first, and the envelope keeps only the first 512 characters of an error anyway.
MATCH_LIMIT_CHARS = 1_024


@functools.cache
def _engine() -> tuple[Any, Any]:
    """The ``re2`` module and the options every pattern compiles with; ImportError when missing."""
    import re2

    options = re2.Options()
    options.log_errors = False  # errors become PolicyErrors; RE2 must not also print to the logs
    options.never_capture = True  # only "does it match" is asked: groups cost time (about half here)
    return re2, options


class RE2Pattern:
    """A compiled RE2 pattern. ``search(text)`` is True when the pattern matches anywhere in ``text``."""

    __slots__ = ("_compiled", "pattern")

    def __init__(self, pattern: str, compiled: Any) -> None:
        self.pattern = pattern
        self._compiled = compiled

    def search(self, text: str) -> bool:
        """Whether the pattern matches within the first MATCH_LIMIT_CHARS characters of ``text``."""
        cut = len(text) > MATCH_LIMIT_CHARS
        if cut:
            # One character more than is searched: it tells RE2 the text goes on past the limit.
            text = text[: MATCH_LIMIT_CHARS + 1]
        if not text.isascii():
            text = _surrogates().sub("\ufffd", text)
        if cut:
            return self._compiled.search(text, 0, MATCH_LIMIT_CHARS) is not None
        return self._compiled.search(text) is not None

    def __repr__(self) -> str:
        return f"RE2Pattern({self.pattern!r})"


def compile_re2(pattern: object, path: str) -> RE2Pattern:
    """Compile ``pattern`` as RE2; a PolicyError naming ``path`` when it is not valid RE2 or when the
    engine is missing."""
    if not isinstance(pattern, str):
        raise PolicyError(path, f"must be a string (an RE2 regular expression), got {pattern!r}")
    try:
        engine, options = _engine()
    except ImportError as exc:
        raise PolicyError(
            path,
            f"matching needs the RE2 engine (package google-re2, module re2), which cannot be imported "
            f"here ({exc}); build the Lambda zip with `serverless-retry package function SRC "
            "--with-serverless-retry --arch ARCH --python X.Y` (or the layer with `serverless-retry "
            "package layer`) for the function's architecture and runtime, which bundles it, or add "
            "google-re2 to your own package",
        ) from None
    if not pattern.isascii() and _surrogates().search(pattern):
        raise PolicyError(path, "not a valid RE2 regular expression: it holds a lone surrogate, not text")
    try:
        compiled = engine.compile(pattern, options)
    except engine.error as exc:
        raise PolicyError(
            path,
            f"not a valid RE2 regular expression: {_error_text(exc)} "
            "(RE2 has no backreferences or look-around; see the retry policy reference, docs/retry-policy.md)",
        ) from None
    return RE2Pattern(pattern, compiled)


def _error_text(exc: BaseException) -> str:
    detail = exc.args[0] if exc.args else exc
    if isinstance(detail, bytes):
        return detail.decode("utf-8", "replace")
    return str(detail)
