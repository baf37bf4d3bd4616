"""Pipe enrichment entry point of the self-healing pattern: ``serverless_retry.handlers.enrichment.handler``.

Settings are read at import (cold start): a bad configuration fails the init with a ``ConfigError``
naming the variable, before the pipe hands over any batch. See docs/self-healing-contract.md.
"""

from __future__ import annotations

from typing import Any

from serverless_retry.selfheal.config import EnrichmentSettings
from serverless_retry.selfheal.enrichment import Enricher
from serverless_retry.selfheal.types import FailureDetail

__all__ = ["enricher", "handler"]

enricher = Enricher(EnrichmentSettings.from_env())


@enricher.logger.inject_lambda_context(clear_state=True)
def handler(event: Any, context: Any) -> list[FailureDetail]:
    return enricher(event)
