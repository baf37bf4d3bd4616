"""What every moto patch is: a name, the moto behaviour it corrects, and an install that returns its
undo. The registry (:mod:`serverless_retry_tools.local.emulator.moto_patches`) and the modules holding patches
of their own (:mod:`~serverless_retry_tools.local.emulator.async_patches`,
:mod:`~serverless_retry_tools.local.emulator.events_patches`) import these from here, so the registry can
import its members without the members importing it back."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from serverless_retry_tools.local.emulator.patching import Undo

__all__ = ["Patch", "PatchContext"]


@dataclass(frozen=True)
class PatchContext:
    """What a patch may need to know about the server it runs in."""

    server_url: str = "http://127.0.0.1"
    clock: Any = None  # the emulator's LogicalClock (logical_time.py); None: real time


@dataclass(frozen=True)
class Patch:
    name: str
    corrects: str
    install: Callable[[PatchContext], Undo]
