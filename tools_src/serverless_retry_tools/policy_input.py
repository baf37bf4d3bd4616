"""A retry policy given on the command line: inline JSON, or the path of a JSON file.

Text that starts with ``{`` is inline JSON; anything else is a path, and a path that does not exist
or cannot be read says so (not "not valid JSON"). Shared by the commands that take ``--policy``.
"""

from __future__ import annotations

from pathlib import Path

from serverless_retry.policy import RetryPolicy

__all__ = ["PolicyFileError", "load_policy", "read_policy_text"]


class PolicyFileError(ValueError):
    """The --policy file is missing or unreadable (a usage error: exit 2)."""


def read_policy_text(text: str) -> str:
    """The policy's JSON text; a PolicyFileError naming ``--policy`` when the file is missing or unreadable."""
    if text.lstrip().startswith("{"):
        return text
    path = Path(text)
    if not path.exists():
        raise PolicyFileError(
            f"--policy: no such file: {text} (give a JSON file, or inline JSON starting with '{{')"
        )
    if path.is_dir():
        raise PolicyFileError(f"--policy: {text} is a directory, not a JSON file")
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise PolicyFileError(f"--policy: cannot read {text}: {exc}") from None


def load_policy(text: str) -> RetryPolicy:
    return RetryPolicy.from_json(read_policy_text(text))
