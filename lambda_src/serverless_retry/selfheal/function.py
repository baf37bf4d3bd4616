"""What the enrichment and the redrive function share: their settings and what tests inject (AWS
clients, clock, logger), with the defaults Lambda runs on (lazy boto3 clients, the settings' clock,
the package's Powertools logger)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Generic, Protocol, TypeVar

if TYPE_CHECKING:
    from aws_lambda_powertools import Logger

    from serverless_retry.aws import AwsClients
    from serverless_retry.clock import Clock

__all__ = ["SelfHealingFunction"]


class _Settings(Protocol):
    @property
    def clock(self) -> Clock: ...


SettingsT = TypeVar("SettingsT", bound=_Settings)


class SelfHealingFunction(Generic[SettingsT]):
    def __init__(
        self,
        settings: SettingsT,
        *,
        clients: AwsClients | None = None,
        clock: Clock | None = None,
        logger: Logger | None = None,
    ) -> None:
        # Imported here: boto3 and Powertools load at cold start, not when the wire types are imported.
        from serverless_retry.aws import AwsClients
        from serverless_retry.observability import make_logger

        self.settings = settings
        self.clients = clients or AwsClients()
        self.clock = clock or settings.clock
        self.logger = logger or make_logger()
