"""moto's CPU, cut where a profile of the test suite found it, without changing anything moto answers.

Not fidelity patches (those are :mod:`serverless_retry_tools.local.moto_patches`, each proving a gap
to AWS): these only make the same answers cheaper. The emulator server installs them at start, and
the test suite in its own processes, for the moto it runs in-process (``mock_aws``).
"""

from __future__ import annotations

import functools
import sys
import threading
from collections.abc import Callable

__all__ = ["memoize_name_conversion"]

# Distinct names moto converts: AWS action, parameter and attribute names, a few hundred per service.
_NAMES_KEPT = 4096
_lock = threading.Lock()


def memoize_name_conversion() -> None:
    """moto turns an AWS name into a Python one (``VisibilityTimeout`` -> ``visibility_timeout``)
    character by character, for every request's action, and in SQS for every attribute each time a
    queue's attributes are read (every GetQueueAttributes, SendMessage and receive): the top of a CPU
    profile of the functional tests, ~140,000 conversions of a few dozen names. The conversion is a
    pure function of the name, so it is remembered (bounded: a name can come from a request).
    Idempotent; modules moto imports later take the remembered one from ``moto.core.utils``."""
    from moto.core import utils

    with _lock:
        original: Callable[[str], str] = utils.camelcase_to_underscores
        if hasattr(original, "cache_info"):
            return
        remembered = functools.lru_cache(maxsize=_NAMES_KEPT)(original)
        utils.camelcase_to_underscores = remembered
        # Modules that imported the function by name before now hold the original.
        for name, module in list(sys.modules.items()):
            if name.startswith("moto.") and getattr(module, "camelcase_to_underscores", None) is original:
                setattr(module, "camelcase_to_underscores", remembered)  # noqa: B010 - a module's global
