"""The emulator server: moto's server app with our compatibility patches, on 127.0.0.1.

Started by :class:`serverless_retry_tools.local.emulator.emulator.Emulator`, or by hand as a sandbox that stays up
(``python -m serverless_retry_tools.local.emulator.emulator_server --port 4566 --ready-file F &``). It prints one
JSON line (``{"url": ..., "endpoint": ..., "region": ..., "patches": [...], "clock": {"epoch": ..., "scale": ...,
"file": ...}, "pid": ...}``) once it accepts connections, writes the same to ``--ready-file``, and says
on stderr which environment talks to it. It serves until SIGTERM or SIGINT; with ``--watch-stdin``
(what ``Emulator`` passes, so the child cannot outlive it) also until it reads EOF on stdin. Without
it stdin is never read: a script's background job (stdin ``/dev/null``) does not exit at once, and a
shell's background job is not stopped for terminal input.

``--clock-scale`` / ``--clock-epoch`` put moto's SQS on the logical clock
(:mod:`serverless_retry_tools.local.emulator.logical_time`), a clock the runtime's due events hold
(:mod:`serverless_retry_tools.local.clock.held_clock`); ``GET /_serverless_retry/clock`` answers the same
``{"epoch", "scale", "file"}``, so a runtime given only the endpoint reads the emulator's own clock,
and ``POST /_serverless_retry/clock/holds`` takes its holds (:mod:`serverless_retry_tools.local.emulator.clock_server`).
On the same clock, SQS publishes its metrics and moto's alarms are evaluated each logical minute
(:mod:`serverless_retry_tools.local.emulator.cloudwatch.agent`).
"""

from __future__ import annotations

import argparse
import gc
import json
import logging
import os
import signal
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any
from urllib.parse import unquote

from serverless_retry_tools.help_text import plain
from serverless_retry_tools.local.clock.held_clock import HeldClock
from serverless_retry_tools.local.emulator.clock_server import ClockServer
from serverless_retry_tools.local.emulator.cloudwatch.agent import install_cloudwatch
from serverless_retry_tools.local.emulator.logical_time import install_logical_sqs
from serverless_retry_tools.local.emulator.moto_patches import (
    CODE_ROUTE,
    LAYER_ROUTE,
    PATCHES,
    PatchContext,
    apply_patches,
    deployed_layer_zip,
)
from serverless_retry_tools.local.emulator.s3_faults import FAULTS_ROUTE, S3PutFaults
from serverless_retry_tools.local.emulator_contract import (
    ADVANCE_ROUTE,
    CLOCK_ROUTE,
    HOLDS_ROUTE,
    talk_environment,
    write_json_atomically,
)

WsgiApp = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]


def _clock_json(clock: HeldClock) -> dict[str, Any]:
    return {"epoch": clock.epoch, "scale": clock.scale, "file": str(clock.path) if clock.path else None}


def _own_routes(app: WsgiApp, clock: HeldClock, holds: ClockServer, faults: S3PutFaults) -> WsgiApp:
    """Serve the clock at CLOCK_ROUTE, the runtime's holds at HOLDS_ROUTE, its jumps at ADVANCE_ROUTE,
    S3 write faults at FAULTS_ROUTE (s3_faults.py), deployed Lambda zips at the Code.Location the
    ``lambda_code_location_unreachable`` patch hands out and layer zips at the one of
    ``lambda_layer_content_unreachable``; everything else goes to moto."""

    posts = {HOLDS_ROUTE: holds.declare, ADVANCE_ROUTE: holds.advance, FAULTS_ROUTE: faults.configure}

    def wrapped(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        path = str(environ.get("PATH_INFO", ""))
        if path == CLOCK_ROUTE:
            start_response("200 OK", [("Content-Type", "application/json")])
            return [json.dumps(_clock_json(clock)).encode()]
        post = posts.get(path)
        if post is not None and environ.get("REQUEST_METHOD") == "POST":
            try:
                length = int(environ.get("CONTENT_LENGTH") or 0)
                answer = post(json.loads(environ["wsgi.input"].read(length)))
            except (ValueError, KeyError, TypeError) as exc:
                start_response("400 Bad Request", [("Content-Type", "text/plain")])
                return [f"bad request to {path}: {exc!r}".encode()]
            start_response("200 OK", [("Content-Type", "application/json")])
            return [json.dumps(answer).encode()]
        if path.startswith(LAYER_ROUTE + "/"):
            return _zip_or_404(path, lambda: deployed_layer_zip(path), start_response)
        if not path.startswith(CODE_ROUTE + "/"):
            return app(environ, start_response)
        return _zip_or_404(path, lambda: _deployed_code(path), start_response)

    return wrapped


def _deployed_code(path: str) -> bytes:
    from moto.awslambda.models import lambda_backends

    account, region, name, version = [unquote(p) for p in path[len(CODE_ROUTE) + 1 :].split("/")]
    fn = lambda_backends[account][region].get_function(name, None if version == "$LATEST" else version)
    body: bytes = fn.code_bytes
    return body


def _zip_or_404(path: str, body: Callable[[], bytes], start_response: Callable[..., Any]) -> Iterable[bytes]:
    try:
        content = body()
    except Exception as exc:  # any lookup failure is a 404 for the caller
        start_response("404 Not Found", [("Content-Type", "text/plain")])
        return [f"nothing deployed at {path}: {exc}".encode()]
    start_response("200 OK", [("Content-Type", "application/zip"), ("Content-Length", str(len(content)))])
    return [content]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=plain(__doc__))
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0, help="0 picks a free port")
    parser.add_argument(
        "--patches",
        default="all",
        help=f"comma-separated patch names, 'all' or 'none'; known: {', '.join(PATCHES)}",
    )
    parser.add_argument("--verbose", action="store_true", help="log every request")
    parser.add_argument(
        "--region",
        default="us-east-1",
        help="the region the ready line and the environment it prints name (moto serves every region)",
    )
    parser.add_argument(
        "--ready-file",
        metavar="PATH",
        help="once it accepts connections, write the ready line's JSON here (removed at exit)",
    )
    parser.add_argument(
        "--watch-stdin",
        action="store_true",
        help="also stop at EOF on stdin (for a parent process that holds the pipe); off by default",
    )
    parser.add_argument("--clock-scale", type=float, default=1.0, help="logical seconds per real second")
    parser.add_argument(
        "--clock-epoch", type=float, help="Unix time where logical and real meet (default now)"
    )
    args = parser.parse_args(argv)
    # The clock's file, read by the runtime and by every function's worker (see held_clock.py).
    shm = Path("/dev/shm")  # memory-backed where there is one; a temp file otherwise
    handle, name = tempfile.mkstemp(prefix="serverless-retry-clock-", dir=shm if shm.is_dir() else None)
    os.close(handle)
    clock_file = Path(name)
    clock = HeldClock(
        epoch=time.time() if args.clock_epoch is None else args.clock_epoch,
        scale=args.clock_scale,
        path=clock_file,
    )
    holds = ClockServer(clock)
    faults = S3PutFaults()  # off until a test configures it

    from moto.moto_server.werkzeug_app import (
        DomainDispatcherApplication,
        MotoRequestHandler,
        create_backend_app,
    )
    from werkzeug.serving import make_server

    logging.getLogger("werkzeug").setLevel(logging.INFO if args.verbose else logging.WARNING)
    _list_moto_modules_once()
    app = DomainDispatcherApplication(create_backend_app)
    server = make_server(
        args.host,
        args.port,
        _own_routes(app, clock, holds, faults),
        threaded=True,
        request_handler=MotoRequestHandler,
    )
    url = f"http://{args.host}:{server.server_port}"
    names: list[str] | None
    if args.patches == "all":
        names = None
    elif args.patches == "none":
        names = []
    else:
        names = [n for n in args.patches.split(",") if n]
    apply_patches(names, PatchContext(server_url=url, clock=clock))
    applied = list(PATCHES) if names is None else names
    install_logical_sqs(clock, holds.queue_changed)
    faults.install()
    # SQS metrics, EMF extraction and alarm evaluation in logical time (cloudwatch/agent.py).
    _, stop_cloudwatch = install_cloudwatch(clock)
    holds.install()
    # At x100 a real millisecond is a logical tenth of a second: a full garbage collection of moto's
    # many long-lived objects (tens of ms) would stall every long poll past its message's due time.
    # Startup's objects are frozen out of collection, and collections of new ones come less often.
    gc.freeze()
    gc.set_threshold(50_000, 50, 100)

    def shutdown(*_: Any) -> None:
        # shutdown() blocks until serve_forever returns, so never call it on the serving thread.
        threading.Thread(target=server.shutdown, daemon=True).start()

    signal.signal(signal.SIGTERM, shutdown)
    signal.signal(signal.SIGINT, shutdown)

    if args.watch_stdin:

        def watch_parent() -> None:
            while sys.stdin.read(4096):
                pass
            shutdown()

        threading.Thread(target=watch_parent, daemon=True).start()
    ready = {
        "url": url,
        "endpoint": url,
        "region": args.region,
        "patches": applied,
        "clock": _clock_json(clock),
        "pid": os.getpid(),
    }
    ready_file = Path(args.ready_file).resolve() if args.ready_file else None
    if ready_file is not None:
        write_json_atomically(ready_file, ready)
    print(json.dumps(ready), flush=True)
    print(
        f"emulator ready; talk to it with {talk_environment(url, args.region)}", file=sys.stderr, flush=True
    )
    try:
        server.serve_forever()
        server.server_close()
    finally:
        stop_cloudwatch()
        clock.close()
        clock_file.unlink(missing_ok=True)
        if ready_file is not None:
            ready_file.unlink(missing_ok=True)
    return 0


def _list_moto_modules_once() -> None:
    """moto's dispatcher asks, for every request, whether the host names a moto module, by listing
    moto's package directory and stat-ing its ~170 entries: a fifth of an emulator's CPU in a
    profile of the test suite. The installed package does not change while the server runs."""
    from moto import backends

    modules = tuple(backends.list_of_moto_modules())
    backends.list_of_moto_modules = lambda: modules


if __name__ == "__main__":
    raise SystemExit(main())
