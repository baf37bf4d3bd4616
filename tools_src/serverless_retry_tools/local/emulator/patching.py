"""How the emulator's patches to moto are put in and taken out again: each install returns an
``Undo``; a patch module chains its undos so the emulator can restore moto exactly."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["Undo", "chain", "replace"]

Undo = Callable[[], None]


def replace(owner: Any, attr: str, new: Any) -> Undo:
    """Set ``owner.attr`` (which ``owner`` itself must define) to ``new``; the undo puts it back."""
    old = owner.__dict__[attr]
    setattr(owner, attr, new)
    return lambda: setattr(owner, attr, old)


def chain(undos: list[Undo]) -> Undo:
    """One undo for many, run in reverse order."""

    def undo() -> None:
        for u in reversed(undos):
            u()

    return undo
