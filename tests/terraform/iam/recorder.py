"""Record every AWS API call made while a principal acts, whatever client makes it.

botocore's ``before-call`` event is per client and per session: the consumer's clients come from
boto3's default session, Powertools' idempotency layer builds a session of its own, and a handler may
build a client before any test hook exists. ``BaseClient._make_api_call`` is the one place every call
of every client passes through, so the recorder wraps it (inside moto's ``mock_aws``, which intercepts
further down, at the HTTP layer). A call is recorded before it is sent: a call that fails still needed
its permission.

Only calls made inside :meth:`Recorder.acting_as` are recorded, with the role the call would be
signed with on AWS and what makes it (the function's code, or a service acting with that role).
The test harness's own set-up calls (creating queues, reading results) happen outside and are not.
"""

from __future__ import annotations

import contextvars
import copy
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any
from unittest import mock

from botocore.client import BaseClient
from botocore.exceptions import ClientError, ReadTimeoutError


@dataclass(frozen=True)
class Actor:
    role: str  # the IAM role name the call is signed with
    via: str  # what makes the call: "code of <function>", "event source mapping", "pipe", ...


@dataclass(frozen=True)
class Call:
    actor: Actor
    service: str  # botocore's service name: sqs, scheduler, lambda, sns, dynamodb, events, kms
    operation: str  # the API operation, e.g. SendMessageBatch
    params: dict[str, Any]
    region: str


@dataclass
class Recorder:
    calls: list[Call] = field(default_factory=list)
    # operation -> error code: the call is recorded, then refused as AWS would refuse it (e.g. a
    # Scheduler that throttles, to reach the SQS-hops fallback).
    refuse: dict[str, tuple[str, Callable[[dict[str, Any]], bool]]] = field(default_factory=dict)
    # operation -> which calls: the call takes effect, then its answer is lost (a read timeout), as
    # when the network drops it (e.g. a CreateSchedule the consumer must then look up by name).
    lose_answer: dict[str, Callable[[dict[str, Any]], bool]] = field(default_factory=dict)
    _actor: contextvars.ContextVar[Actor | None] = field(
        default_factory=lambda: contextvars.ContextVar("iam_actor", default=None)
    )

    @contextmanager
    def acting_as(self, role: str, via: str) -> Iterator[None]:
        token = self._actor.set(Actor(role, via))
        try:
            yield
        finally:
            self._actor.reset(token)

    @contextmanager
    def refusing(
        self, operation: str, code: str, when: Callable[[dict[str, Any]], bool] = lambda params: True
    ) -> Iterator[None]:
        """Refuse ``operation`` with ``code`` while inside, for the calls whose parameters ``when`` picks."""
        self.refuse[operation] = (code, when)
        try:
            yield
        finally:
            self.refuse.pop(operation, None)

    @contextmanager
    def losing_answers(
        self, operation: str, when: Callable[[dict[str, Any]], bool] = lambda params: True
    ) -> Iterator[None]:
        """While inside, ``operation`` takes effect and then times out, for the calls ``when`` picks."""
        self.lose_answer[operation] = when
        try:
            yield
        finally:
            self.lose_answer.pop(operation, None)

    @contextmanager
    def recording(self) -> Iterator[Recorder]:
        original: Callable[..., Any] = BaseClient._make_api_call
        recorder = self

        def make_api_call(client: BaseClient, operation_name: str, api_params: dict[str, Any]) -> Any:
            actor = recorder._actor.get()
            if actor is not None:
                recorder.calls.append(
                    Call(
                        actor,
                        client.meta.service_model.service_name,
                        operation_name,
                        copy.deepcopy(api_params),
                        client.meta.region_name,
                    )
                )
                code, when = recorder.refuse.get(operation_name, (None, None))
                if code is not None and when is not None and when(api_params):
                    raise ClientError(
                        {"Error": {"Code": code, "Message": "refused by the test"}}, operation_name
                    )
                lose = recorder.lose_answer.get(operation_name)
                if lose is not None and lose(api_params):
                    original(client, operation_name, api_params)
                    raise ReadTimeoutError(endpoint_url=str(client.meta.endpoint_url))
            return original(client, operation_name, api_params)

        with mock.patch.object(BaseClient, "_make_api_call", make_api_call):
            yield self
