"""One Lambda execution environment: a child process that imports a function's handler from its
deployed code and runs one invocation at a time.

The runtime starts it as ``python -I -S worker.py --task-root DIR [--opt LAYERS] --lib SITE_DIR...`` with an
environment built from scratch (the function's variables, the Lambda reserved ones, emulator
credentials). ``-I -S`` keep the caller's sys.path, .pth files (such as an editable install of
this very project) and environment out, so ``import serverless_retry`` inside the handler finds
the *deployed* copy in DIR first, as on Lambda where /var/task leads sys.path and the runtime
supplies boto3. This file therefore uses the standard library only and never imports the package
it belongs to.

Protocol: one JSON object per line on stdin (``{"request_id", "event", "deadline_ms",
"function_arn", ...}``), one JSON object per line on the result file descriptor (``--result-fd``):
``{"request_id", "ok": true, "result": ...}`` or ``{"request_id", "ok": false, "error":
{"errorType", "errorMessage", "stackTrace"}, "fatal": bool}``. stdout and stderr are the function's
log output; after each invocation the worker prints ``--sentinel`` and the request id, so the
runtime knows the invocation's output is complete. After a fatal (init) error the worker exits, as Lambda discards a sandbox whose init
failed. A request ``{"request_id", "init": true}`` only imports the handler (Lambda's init phase)
and answers ``{"request_id", "ok": true, "init": true}``, so the runtime can warm a worker before
it receives the messages the worker will run.
"""

from __future__ import annotations

import argparse
import importlib
import json
import logging
import os
import sys
import time
import traceback
from typing import Any

# Real time, for the invocation's deadline (the runtime sets it in real time).
_real_time = time.time
_CLOCK_FILE_VARIABLE = "SERVERLESS_RETRY_LOCAL_CLOCK_FILE"
_TRACE_DIR_VARIABLE = "SERVERLESS_RETRY_LOCAL_TRACE_DIR"
_TRACE_VARIABLE = "_X_AMZN_TRACE_ID"


def _set_trace_header(trace_dir: str | None, request_id: str) -> None:
    """As Lambda's runtime does for each invocation: _X_AMZN_TRACE_ID holds the invocation's X-Ray
    trace header, which botocore adds to every call the function makes (X-Amzn-Trace-Id). The
    runtime leaves it in ``trace_dir`` under the request id (recursion.py in the tools package);
    an invocation without one (an asynchronous one, a pipe's) has none, so it starts no chain."""
    header = None
    if trace_dir:
        try:
            with open(os.path.join(trace_dir, request_id), encoding="utf-8") as handle:
                header = handle.read().strip() or None
        except OSError:
            header = None
    if header:
        os.environ[_TRACE_VARIABLE] = header
    else:
        os.environ.pop(_TRACE_VARIABLE, None)


def _show_held_clock(path: str) -> None:
    """Let Lambda code read the emulator's held logical clock through ``time.time``.

    Code run by the local runtime computes logical time as SERVERLESS_RETRY_CLOCK_EPOCH +
    (time.time() - epoch) x SERVERLESS_RETRY_CLOCK_SCALE (serverless_retry.clock.ScaledClock). The
    emulator's clock is that line, except that it waits while the runtime has due events to
    dispatch (held_clock.py in the tools package, whose file layout this repeats: this script
    imports nothing of its own package). So ``time.time`` here answers the instant that makes the
    line give the held clock: epoch + (logical - epoch) / scale."""
    import mmap
    import struct

    epoch = float(os.environ["SERVERLESS_RETRY_CLOCK_EPOCH"])
    scale = float(os.environ["SERVERLESS_RETRY_CLOCK_SCALE"])
    layout = struct.Struct("<Qddd")
    slots = (0, layout.size)  # two copies of the state; the writer finishes slot 1 before slot 0
    with open(path, "rb") as handle:
        view = mmap.mmap(handle.fileno(), layout.size * len(slots), access=mmap.ACCESS_READ)

    def held_time() -> float:
        real = _real_time()
        for tries in range(100_000):  # bounded: one slot is whole unless the writer publishes again
            for offset in slots:
                seq, anchor_real, anchor_logical, cap = layout.unpack(view[offset : offset + layout.size])
                if seq % 2 == 0 and struct.unpack("<Q", view[offset : offset + 8])[0] == seq:
                    logical = min(anchor_logical + (real - anchor_real) * scale, cap)
                    return float(epoch + (logical - epoch) / scale)
            time.sleep(0 if tries < 100 else 0.001)  # let the writer finish
        raise RuntimeError("the emulator's clock file was never whole: its writer stopped mid-write")

    time.time = held_time
    time.time_ns = lambda: int(held_time() * 1e9)


_LEVELS = {"TRACE": 5, "DEBUG": 10, "INFO": 20, "WARN": 30, "WARNING": 30, "ERROR": 40, "FATAL": 50}


class LambdaContext:
    """The attributes and method handlers use on AWS's context object."""

    def __init__(self, request: dict[str, Any]) -> None:
        self.aws_request_id: str = request["request_id"]
        self.function_name: str = os.environ.get("AWS_LAMBDA_FUNCTION_NAME", "")
        self.function_version: str = os.environ.get("AWS_LAMBDA_FUNCTION_VERSION", "$LATEST")
        self.invoked_function_arn: str = request.get("function_arn", "")
        self.memory_limit_in_mb: str = os.environ.get("AWS_LAMBDA_FUNCTION_MEMORY_SIZE", "128")
        self.log_group_name: str = os.environ.get("AWS_LAMBDA_LOG_GROUP_NAME", "")
        self.log_stream_name: str = os.environ.get("AWS_LAMBDA_LOG_STREAM_NAME", "")
        self.identity = None
        self.client_context = None
        self._deadline_ms = int(request["deadline_ms"])

    def get_remaining_time_in_millis(self) -> int:
        return max(0, self._deadline_ms - int(_real_time() * 1000))


class _JsonFormatter(logging.Formatter):
    """The shape of the Lambda Python runtime's JSON application logs."""

    def format(self, record: logging.LogRecord) -> str:
        out: dict[str, Any] = {
            "timestamp": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created))
            + f".{int(record.msecs):03d}Z",
            "level": record.levelname,
            "message": record.getMessage(),
            "logger": record.name,
            "requestId": getattr(record, "aws_request_id", _current["request_id"]),
        }
        for key, value in record.__dict__.items():
            if key not in _STANDARD_RECORD_KEYS and not key.startswith("_"):
                out[key] = value
        if record.exc_info:
            out["errorType"] = record.exc_info[0].__name__ if record.exc_info[0] else None
            out["stackTrace"] = traceback.format_exception(*record.exc_info)
        return json.dumps(out, default=str)


_STANDARD_RECORD_KEYS = set(logging.makeLogRecord({}).__dict__) | {"message", "asctime"}
_current = {"request_id": ""}  # the invocation in progress, for log records


def _setup_logging() -> None:
    # As the Lambda Python runtime does: one handler on the root logger writing to stdout; text
    # unless the function's LoggingConfig says JSON; the root level is set only when a level is
    # configured (so by default, as on AWS, only WARNING and above reach the logs from `logging`).
    handler = logging.StreamHandler(sys.stdout)
    if os.environ.get("AWS_LAMBDA_LOG_FORMAT") == "JSON":
        handler.setFormatter(_JsonFormatter())
    else:
        handler.setFormatter(
            logging.Formatter("[%(levelname)s]\t%(asctime)s.%(msecs)03dZ\t%(message)s", "%Y-%m-%dT%H:%M:%S")
        )
        logging.Formatter.converter = time.gmtime
    root = logging.getLogger()
    root.addHandler(handler)
    level = os.environ.get("AWS_LAMBDA_LOG_LEVEL", "").upper()
    if level in _LEVELS:
        root.setLevel(_LEVELS[level])


def _load_handler(spec: str) -> Any:
    module_name, _, attr = spec.rpartition(".")
    if not module_name or not attr:
        raise ValueError(f"Bad handler '{spec}': expected module.function")
    module = importlib.import_module(module_name)
    handler = getattr(module, attr, None)
    if handler is None:
        raise AttributeError(f"Handler '{attr}' missing on module '{module_name}'")
    return handler


def _error(exc: BaseException) -> dict[str, Any]:
    return {
        "errorType": type(exc).__name__,
        "errorMessage": str(exc),
        "stackTrace": traceback.format_exception(type(exc), exc, exc.__traceback__)[-20:],
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--task-root", required=True)
    parser.add_argument("--lib", action="append", default=[])
    parser.add_argument("--opt", help="the function's layers, extracted as Lambda's /opt")
    parser.add_argument("--result-fd", type=int, required=True)
    parser.add_argument("--sentinel", required=True, help="printed after each invocation's output")
    args = parser.parse_args(argv)

    # Lambda's order: the function's code, its layers' python/lib/pythonX.Y/site-packages and python/,
    # then the runtime's own (here: the standard library, then boto3's directory).
    layers = []
    if args.opt:
        site = f"python/lib/python{sys.version_info[0]}.{sys.version_info[1]}/site-packages"
        layers = [os.path.join(args.opt, site), os.path.join(args.opt, "python")]
    sys.path[:] = [args.task_root, *layers, *[p for p in sys.path if p], *args.lib]
    os.chdir(args.task_root)
    results = os.fdopen(args.result_fd, "w", buffering=1, encoding="utf-8")
    # As Lambda's runtime does, every write goes out at once: a crash or a timeout kill loses nothing.
    for stream in (sys.stdout, sys.stderr):
        stream.reconfigure(line_buffering=True, write_through=True)  # type: ignore[union-attr]
    _setup_logging()
    clock_file = os.environ.get(_CLOCK_FILE_VARIABLE)
    if clock_file and os.environ.get("SERVERLESS_RETRY_CLOCK_SCALE"):
        try:
            _show_held_clock(clock_file)
        except (OSError, ValueError, KeyError) as exc:  # the line alone, as before the held clock
            print(f"serverless-retry worker: no held clock ({exc!r})", file=sys.stderr, flush=True)

    # The runtime's, not the function's: kept out of the environment the handler sees.
    trace_dir = os.environ.pop(_TRACE_DIR_VARIABLE, None)
    handler: Any = None
    for line in sys.stdin:
        if not line.strip():
            continue
        request = json.loads(line)
        _current["request_id"] = request["request_id"]
        reply: dict[str, Any] = {"request_id": request["request_id"]}
        if request.get("init"):
            try:
                handler = handler or _load_handler(os.environ["_HANDLER"])
            except Exception as exc:
                traceback.print_exc()
                results.write(json.dumps({**reply, "ok": False, "error": _error(exc), "fatal": True}) + "\n")
                return 1
            results.write(json.dumps({**reply, "ok": True, "init": True}) + "\n")
            continue
        fatal = False
        _set_trace_header(trace_dir, request["request_id"])
        try:
            if handler is None:
                try:
                    handler = _load_handler(os.environ["_HANDLER"])
                except Exception as exc:  # an init error fails this invocation and the sandbox
                    fatal = True
                    raise exc from None
            result = handler(request["event"], LambdaContext(request))
            json.dumps(result)  # a result Lambda cannot serialise is an error, as on AWS
            reply.update(ok=True, result=result)
        except Exception as exc:
            traceback.print_exc()
            reply.update(ok=False, error=_error(exc), fatal=fatal)
        sys.stderr.flush()
        # Marks the end of this invocation's output, so the runtime writes END after it.
        print(f"{args.sentinel} {request['request_id']}", flush=True)
        results.write(json.dumps(reply, default=str) + "\n")
        if fatal:
            return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
