"""Redrive entry point of the self-healing pattern (the retry rules' target):
``serverless_retry.handlers.redrive.handler``.

Settings (sources, policies, Scheduler) are read and validated at import (cold start). A failed
redrive call raises: Lambda retries this asynchronous invocation, then sends it to the function's
on-failure destination. See docs/self-healing-contract.md.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from serverless_retry.selfheal.config import RedriveSettings
from serverless_retry.selfheal.redrive import Redriver

__all__ = ["handler", "redriver"]

redriver = Redriver(RedriveSettings.from_env())


@redriver.logger.inject_lambda_context(clear_state=True)
def handler(event: Mapping[str, Any], context: Any) -> dict[str, Any]:
    return redriver(event).summary()
