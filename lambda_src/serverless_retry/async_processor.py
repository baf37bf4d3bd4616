"""Record handlers the consumer can call: ``async def`` ones run to completion, awaitables never
taken for success, and handlers that cannot take a lone message refused when the consumer is made.

The consumer calls ``processor(message)`` and counts a return as success. A coroutine function
returns at once with a coroutine that has not run, so every record, failures included, would be
deleted as processed. ``synchronous`` turns a processor into one the consumer may call that way:
an async one (a coroutine function, an object whose ``__call__`` is one, a ``functools.partial`` of
either) runs each message to completion on an event loop kept for the thread, as Powertools'
``AsyncBatchProcessor`` does in Lambda (records one after another, not concurrently); anything else
that returns an awaitable all the same has it run the same way. Inside a running event loop it
cannot wait without blocking that loop, so it refuses with ``AsyncProcessorError`` instead.
"""

from __future__ import annotations

import functools
import inspect
import sys
import threading
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, TypeGuard

if TYPE_CHECKING:
    import asyncio

from serverless_retry.message import Message, Processor

__all__ = [
    "AsyncProcessorError",
    "is_async_processor",
    "refuse_inside_running_loop",
    "requires_lambda_context",
    "run",
    "synchronous",
]

_MARK = "__serverless_retry_synchronous__"  # set on what synchronous() made: never wrapped twice


class AsyncProcessorError(RuntimeError):
    """An async record handler was called where it cannot be awaited: inside a running event loop."""


def _target(processor: object) -> object:
    """What is really called: the function under ``functools.partial`` layers."""
    while isinstance(processor, functools.partial):
        processor = processor.func
    return processor


def is_async_processor(processor: object) -> bool:
    """Whether calling ``processor`` returns a coroutine: a coroutine function (or a partial of
    one), or a callable object whose ``__call__`` is one."""
    target: Any = _target(processor)
    if inspect.iscoroutinefunction(target):
        return True
    if not callable(target) or inspect.isfunction(target) or inspect.ismethod(target):
        return False
    return inspect.iscoroutinefunction(type(target).__call__)


def requires_lambda_context(processor: object) -> bool:
    """Whether ``processor`` declares a ``lambda_context`` parameter (Powertools injects one there)."""
    try:
        return "lambda_context" in inspect.signature(processor).parameters  # type: ignore[arg-type]
    except (TypeError, ValueError):  # a builtin or C callable without a signature
        return False


def _check_callable_with_a_message(processor: object) -> None:
    try:
        signature = inspect.signature(processor)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return  # nothing to inspect: the call will tell
    try:
        signature.bind(None)
    except TypeError as exc:
        hint = ""
        if "lambda_context" in signature.parameters:
            hint = (
                " (RetryingConsumer passes no lambda_context: run the handler through"
                " RetryingProcessor / process_retrying_response / @retrying_consumer, which inject it)"
            )
        raise TypeError(
            f"the record handler {_name(processor)}{signature} cannot be called with a single"
            f" message: {exc}{hint}"
        ) from None


def _name(processor: object) -> str:
    target = _target(processor)
    return str(getattr(target, "__qualname__", None) or type(target).__qualname__)


_loops = threading.local()


def refuse_inside_running_loop() -> None:
    """Raise ``AsyncProcessorError`` when this thread runs an event loop: waiting for a coroutine
    there would block the loop it needs (a deadlock), so an async handler cannot be awaited."""
    # asyncio is imported only when an awaitable is run (its import is a quarter of the consumer's
    # cold start): if nothing imported it, no loop can be running.
    loaded = sys.modules.get("asyncio")
    if loaded is None:
        return
    try:
        loaded.get_running_loop()
    except RuntimeError:
        return
    raise AsyncProcessorError(
        "an async record handler cannot be awaited inside a running event loop: call the Lambda"
        " handler from synchronous code, as Lambda does (in a test, from a plain def test)"
    )


def run(awaitable: Awaitable[object]) -> object:
    """Run ``awaitable`` to completion on this thread's loop (made on first use and kept, so clients
    a handler caches stay on the loop they were made on, across records and invocations)."""
    try:
        refuse_inside_running_loop()
    except AsyncProcessorError:
        if inspect.iscoroutine(awaitable):
            awaitable.close()  # it never runs: no "was never awaited" warning on top of the error
        raise
    import asyncio

    loop: asyncio.AbstractEventLoop | None = getattr(_loops, "loop", None)
    if loop is None or loop.is_closed():
        loop = asyncio.new_event_loop()
        _loops.loop = loop
    return loop.run_until_complete(_as_coroutine(awaitable))


async def _as_coroutine(awaitable: Awaitable[object]) -> object:
    return await awaitable


def _is_awaitable(value: object) -> TypeGuard[Awaitable[object]]:
    return inspect.isawaitable(value)


def synchronous(processor: Processor) -> Processor:
    """``processor`` as the consumer calls it: one message, synchronously, to completion. Raises
    ``TypeError`` now for a handler that cannot be called with a lone message (one that requires a
    ``lambda_context``, say), instead of failing every record with it until its retries run out."""
    if getattr(processor, _MARK, False):
        return processor
    _check_callable_with_a_message(processor)
    if is_async_processor(processor):
        coroutine_function = processor

        @functools.wraps(_target(processor), updated=())  # type: ignore[arg-type]
        def awaited(message: Message) -> object:
            return run(coroutine_function(message))  # type: ignore[arg-type]

        wrapper: Callable[[Message], object] = awaited
    else:
        plain = processor

        @functools.wraps(_target(processor), updated=())  # type: ignore[arg-type]
        def checked(message: Message) -> object:
            result = plain(message)
            if result is not None and _is_awaitable(result):  # an awaitable is not a success yet
                return run(result)
            return result

        wrapper = checked
    setattr(wrapper, _MARK, True)
    wrapper.__wrapped__ = processor  # type: ignore[attr-defined]
    return wrapper
