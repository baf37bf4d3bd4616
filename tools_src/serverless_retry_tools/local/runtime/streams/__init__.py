"""Lambda event source mappings on Kinesis streams and DynamoDB streams, run locally (moto stores
them but runs none): :class:`~serverless_retry_tools.local.runtime.streams.runner.StreamRunner`."""

from __future__ import annotations

from serverless_retry_tools.local.runtime.streams.runner import StreamRunner

__all__ = ["StreamRunner"]
