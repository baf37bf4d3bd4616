"""Pattern 1 in the shape Powertools users already write (``process_partial_response``).

    from serverless_retry import Message, RetryingProcessor, process_retrying_response

    processor = RetryingProcessor()             # settings from the environment, read on first use

    def record_handler(message: Message) -> None:
        order = message.sqs_record.json_body     # Powertools' SQSRecord of the original message
        ...

    def lambda_handler(event, context):
        return process_retrying_response(
            event=event, record_handler=record_handler, processor=processor, context=context
        )

or, in the decorator style of ``@self_healing`` (pattern 2): ``@retrying_consumer`` turns the record
handler into the Lambda handler. Both run a ``RetryingConsumer``: the same code as the module's
built-in handler (``serverless_retry.handlers.consumer``), only the record handler is given in code
instead of ``SERVERLESS_RETRY_PROCESSOR``.
"""

from __future__ import annotations

import functools
import inspect
import random
from collections import OrderedDict
from collections.abc import Callable, Mapping
from contextvars import ContextVar
from dataclasses import replace
from typing import Any, NamedTuple, cast, overload

from aws_lambda_powertools import Logger

from serverless_retry.async_processor import (
    is_async_processor,
    refuse_inside_running_loop,
    requires_lambda_context,
    run,
    synchronous,
)
from serverless_retry.aws import AwsClients
from serverless_retry.clock import Clock, SystemClock
from serverless_retry.config import ConsumerSettings, QueueTargets
from serverless_retry.consumer.retrying_consumer import BatchResponse, RetryingConsumer, idempotent_processor
from serverless_retry.message import ExhaustedHook, Message, Processor
from serverless_retry.observability import ConsumerMetrics
from serverless_retry.policy import RetryPolicy

__all__ = [
    "LambdaHandler",
    "RecordHandler",
    "RetryingProcessor",
    "process_retrying_response",
    "retrying_consumer",
]

LambdaHandler = Callable[[Mapping[str, Any], Any], BatchResponse]
# A record handler: handler(message), or handler(message, lambda_context) as Powertools injects it.
RecordHandler = Processor | Callable[[Message, Any], object]


class RetryingProcessor:
    """What ``processor=`` means to Powertools' ``process_partial_response``, for retries: the
    settings, the AWS clients and the exhausted hook that the consumers it runs share.

    Settings come from the environment the consumer module sets (``ConsumerSettings.from_env``;
    ``SERVERLESS_RETRY_PROCESSOR`` may be unset: the record handler is given in code), read on first
    use, so importing a module that makes one needs no environment; a bad configuration raises
    ``ConfigError`` naming the variable before any record is processed. Explicit arguments override:
    ``settings`` replaces the environment; ``policy`` and ``targets`` replace those parts of it (both
    given and no ``settings``: the environment is not read at all, and no claims or idempotency table
    is used); ``clock``, ``clients``, ``logger``, ``metrics`` and ``rand`` are injectable for tests.
    """

    def __init__(
        self,
        *,
        policy: RetryPolicy | None = None,
        targets: QueueTargets | None = None,
        on_exhausted: ExhaustedHook | None = None,
        settings: ConsumerSettings | None = None,
        environ: Mapping[str, str] | None = None,
        clients: AwsClients | None = None,
        clock: Clock | None = None,
        logger: Logger | None = None,
        metrics: ConsumerMetrics | None = None,
        rand: random.Random | None = None,
    ) -> None:
        self.on_exhausted = on_exhausted
        self._given = settings
        self._policy = policy
        self._targets = targets
        self._environ = environ
        self._clock = clock
        self.clients = clients or AwsClients()
        self._logger = logger
        self._metrics = metrics
        self._rand = rand
        self._settings: ConsumerSettings | None = None
        # One consumer for every record handler: it calls the handler of the call in progress. A
        # handler made per invocation (a functools.partial carrying the context) then costs no new
        # consumer, claims store or signing-key read, and nothing grows with the invocations.
        self._consumer: RetryingConsumer | None = None
        self._current: ContextVar[_Handler | None] = ContextVar("serverless_retry_handler", default=None)
        self._direct: _Handler | None = None  # consumer(h) called directly runs h
        self._handlers: OrderedDict[RecordHandler, _Handler] = OrderedDict()  # the last few, prepared

    @property
    def settings(self) -> ConsumerSettings:
        """The settings in effect (read from the environment on first access)."""
        if self._settings is None:
            settings = self._given
            if settings is None and self._policy is not None and self._targets is not None:
                settings = ConsumerSettings("", self._policy, self._targets, clock=SystemClock())
            if settings is None:
                settings = ConsumerSettings.from_env(self._environ, processor_required=False)
            if self._policy is not None:
                settings = replace(settings, policy=self._policy)
            if self._targets is not None:
                settings = replace(settings, targets=self._targets)
            if self._clock is not None:
                settings = replace(settings, clock=self._clock)
            self._settings = settings
        return self._settings

    def consumer(self, record_handler: RecordHandler) -> RetryingConsumer:
        """The ``RetryingConsumer`` this processor runs (made once, then reused for every handler);
        called directly, it runs ``record_handler``. Raises ``TypeError`` for a handler that cannot
        be called with a message (and ``lambda_context=``, if it declares that parameter)."""
        self._direct = self._handler(record_handler)
        return self._engine()

    def process(
        self, event: Mapping[str, Any], record_handler: RecordHandler, context: Any = None
    ) -> BatchResponse:
        """``record_handler(Message)`` for each record (``record_handler(Message, lambda_context=
        context)`` if it declares ``lambda_context``); the partial batch response."""
        handler = self._handler(record_handler)
        if handler.is_async:
            refuse_inside_running_loop()  # before any record: the batch goes back whole
        token = self._current.set(handler._replace(context=context))
        try:
            return self._engine()(event, context)
        finally:
            self._current.reset(token)

    def _engine(self) -> RetryingConsumer:
        if self._consumer is None:
            settings = self.settings
            processor: Processor = self._run_current
            if settings.idempotency_table:  # as the built-in handler does (consumer_from_env)
                processor = idempotent_processor(processor, settings.idempotency_table)
            self._consumer = RetryingConsumer.from_settings(
                settings,
                processor,
                clients=self.clients,
                rand=self._rand,
                logger=self._logger,
                metrics=self._metrics,
                on_exhausted=self.on_exhausted,
            )
        return self._consumer

    def _run_current(self, message: Message) -> object:
        handler = self._current.get() or self._direct
        if handler is None:
            raise RuntimeError("no record handler: call process(event, record_handler, context)")
        return handler.call(message, handler.context)

    def _handler(self, record_handler: RecordHandler) -> _Handler:
        """``record_handler`` prepared once (kept for the last few handlers seen)."""
        try:
            handler = self._handlers.get(record_handler)
        except TypeError:  # unhashable: prepared on every call
            return _prepare(record_handler)
        if handler is None:
            handler = _prepare(record_handler)
            self._handlers[record_handler] = handler
            if len(self._handlers) > _HANDLERS_KEPT:
                self._handlers.popitem(last=False)
        else:
            self._handlers.move_to_end(record_handler)
        return handler


_HANDLERS_KEPT = 8


class _Handler(NamedTuple):
    call: Callable[[Message, Any], object]  # synchronous, to completion; (message, lambda context)
    is_async: bool
    context: Any = None


def _prepare(record_handler: RecordHandler) -> _Handler:
    """A record handler as the consumer calls it: async ones run to completion (async_processor), and
    the Lambda context injected as ``lambda_context=`` when the handler declares it, as Powertools'
    batch processor does."""
    is_async = is_async_processor(record_handler)
    if not requires_lambda_context(record_handler):
        # (a two-parameter handler without lambda_context cannot take a lone message: refused here)
        plain = synchronous(cast(Processor, record_handler))
        return _Handler(lambda message, _context: plain(message), is_async)
    signature = inspect.signature(record_handler)
    try:
        signature.bind(None, lambda_context=None)
    except TypeError as exc:
        raise TypeError(
            f"the record handler {record_handler!r}{signature} cannot be called as"
            f" handler(message, lambda_context=context): {exc}"
        ) from None

    def with_context(message: Message, context: Any) -> object:
        result = record_handler(message, lambda_context=context)  # type: ignore[call-arg]
        return run(result) if result is not None and inspect.isawaitable(result) else result

    return _Handler(with_context, is_async)


@functools.cache
def _default_processor() -> RetryingProcessor:
    return RetryingProcessor()


def process_retrying_response(
    event: Mapping[str, Any],
    record_handler: RecordHandler,
    processor: RetryingProcessor | None = None,
    context: Any = None,
) -> BatchResponse:
    """Powertools' ``process_partial_response(event, record_handler, processor, context)``, retrying:
    calls ``record_handler(Message)`` per record, retries failures by the policy, and returns
    ``{"batchItemFailures": [...]}`` for an event source mapping with ``ReportBatchItemFailures``.
    ``processor`` None: one shared ``RetryingProcessor()`` configured from the environment."""
    return (processor or _default_processor()).process(event, record_handler, context)


@overload
def retrying_consumer(record_handler: RecordHandler, /) -> LambdaHandler: ...


@overload
def retrying_consumer(
    *, processor: RetryingProcessor | None = None, on_exhausted: ExhaustedHook | None = None
) -> Callable[[RecordHandler], LambdaHandler]: ...


def retrying_consumer(
    record_handler: RecordHandler | None = None,
    /,
    *,
    processor: RetryingProcessor | None = None,
    on_exhausted: ExhaustedHook | None = None,
) -> LambdaHandler | Callable[[RecordHandler], LambdaHandler]:
    """Turn ``record_handler(Message)`` into the Lambda handler ``(event, context)`` that returns the
    partial batch response: ``@retrying_consumer``, or ``@retrying_consumer(on_exhausted=hook)`` /
    ``@retrying_consumer(processor=RetryingProcessor(...))``. The undecorated function stays
    reachable as ``handler.__wrapped__`` (to test it alone)."""
    if processor is not None and on_exhausted is not None:
        raise TypeError("give on_exhausted to the RetryingProcessor, or processor= alone")

    def decorate(handler: RecordHandler) -> LambdaHandler:
        chosen = processor or RetryingProcessor(on_exhausted=on_exhausted)

        @functools.wraps(handler)
        def lambda_handler(event: Mapping[str, Any], context: Any) -> BatchResponse:
            return chosen.process(event, handler, context)

        return lambda_handler

    if record_handler is not None:
        return decorate(record_handler)
    return decorate
