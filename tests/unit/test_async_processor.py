"""async_processor: every shape of async record handler is detected and run to completion, an
awaitable returned by a plain function is awaited too, a running event loop is refused instead of
deadlocked, and a handler that cannot take a lone message is refused when it is wrapped."""

from __future__ import annotations

import asyncio
import functools
from typing import Any

import pytest
from serverless_retry.async_processor import (
    AsyncProcessorError,
    is_async_processor,
    requires_lambda_context,
    synchronous,
)
from serverless_retry.message import Message

MESSAGE: Any = object()  # the wrapper passes it through untouched


async def failing(message: Message) -> None:
    await asyncio.sleep(0)
    raise TimeoutError("payment API timed out")


async def succeeding(message: Message, tag: str = "") -> str:
    await asyncio.sleep(0)
    return f"done{tag}"


class AsyncHandler:
    async def __call__(self, message: Message) -> str:
        await asyncio.sleep(0)
        return "object"

    async def method(self, message: Message) -> str:
        return "method"


def returns_a_coroutine(message: Message) -> Any:
    return failing(message)  # not a coroutine function, but what it returns is not a success


@pytest.mark.parametrize(
    "handler",
    [
        succeeding,
        functools.partial(succeeding, tag=""),
        functools.partial(functools.partial(succeeding), tag=""),
        AsyncHandler(),
        AsyncHandler().method,
        functools.partial(AsyncHandler()),
    ],
    ids=["function", "partial", "partial-of-partial", "object", "method", "partial-of-object"],
)
def test_every_shape_of_async_handler_is_detected_and_runs_to_completion(handler: Any) -> None:
    assert is_async_processor(handler)
    assert synchronous(handler)(MESSAGE) in {"done", "object", "method"}


def test_plain_handlers_are_not_async() -> None:
    assert not is_async_processor(lambda message: None)
    assert not is_async_processor(returns_a_coroutine)
    assert not is_async_processor(functools.partial(print))


def test_an_async_handler_s_failure_is_raised_not_swallowed() -> None:
    with pytest.raises(TimeoutError, match="payment API"):
        synchronous(failing)(MESSAGE)


def test_an_awaitable_returned_at_run_time_is_awaited_the_same_way() -> None:
    with pytest.raises(TimeoutError, match="payment API"):
        synchronous(returns_a_coroutine)(MESSAGE)

    class Pending:  # any awaitable, not only a coroutine
        def __await__(self) -> Any:
            yield from asyncio.sleep(0).__await__()
            raise ConnectionError("ledger unreachable")

    with pytest.raises(ConnectionError, match="ledger"):
        synchronous(lambda message: Pending())(MESSAGE)


def test_records_share_one_loop_per_thread_so_cached_clients_keep_working() -> None:
    loops: list[asyncio.AbstractEventLoop] = []

    async def handler(message: Message) -> None:
        loops.append(asyncio.get_running_loop())

    run = synchronous(handler)
    run(MESSAGE)
    run(MESSAGE)
    synchronous(succeeding)(MESSAGE)
    assert len(loops) == 2
    assert loops[0] is loops[1]


def test_inside_a_running_loop_an_async_handler_is_refused_not_deadlocked() -> None:
    run = synchronous(succeeding)

    async def caller() -> None:
        run(MESSAGE)

    with pytest.raises(AsyncProcessorError, match="running event loop"):
        asyncio.run(asyncio.wait_for(caller(), timeout=5))


def test_plain_handlers_keep_their_result_and_name_and_are_wrapped_once() -> None:
    def record_handler(message: Message) -> str:
        return "plain"

    wrapped = synchronous(record_handler)
    assert wrapped(MESSAGE) == "plain"
    assert wrapped.__name__ == "record_handler"
    assert wrapped.__wrapped__ is record_handler  # type: ignore[attr-defined]
    assert synchronous(wrapped) is wrapped


def test_a_handler_that_cannot_take_a_lone_message_is_refused_when_wrapped() -> None:
    def wants_context(message: Message, lambda_context: Any) -> None: ...

    assert requires_lambda_context(wants_context)
    with pytest.raises(TypeError, match=r"lambda_context.*RetryingProcessor"):
        synchronous(wants_context)  # type: ignore[arg-type]

    def no_parameter() -> None: ...

    def optional_context(message: Message, lambda_context: Any = None) -> None: ...

    with pytest.raises(TypeError, match="cannot be called with a single message"):
        synchronous(no_parameter)  # type: ignore[arg-type]
    synchronous(optional_context)  # an optional one is fine
    synchronous(print)  # builtins (no signature to read, or a varargs one) are left to the call
