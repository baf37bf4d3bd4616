"""Processors the cold-start tests point SERVERLESS_RETRY_PROCESSOR at."""

from __future__ import annotations

from serverless_retry.message import Message

SEEN: list[Message] = []
NOT_CALLABLE = 42


def record(message: Message) -> None:
    SEEN.append(message)


class Handlers:
    @staticmethod
    def record(message: Message) -> None:
        SEEN.append(message)
