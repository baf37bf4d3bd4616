"""Run deployed Lambda functions locally: read each function from the emulator (GetFunction: its
configuration and, at ``Code.Location``, its zip), and invoke its handler in a worker process.

Why worker processes rather than calling handlers in this process: functions must not see each
other's environment variables or modules (two functions both import ``serverless_retry`` from their
own zips, at possibly different versions, and read their settings from ``os.environ`` at import); a
handler that hangs must be stoppable at its timeout; and a crash (``os._exit``, a segfault, a leaked
thread) must cost one invocation, not the runtime. A worker is started on first use and kept warm,
as Lambda keeps a sandbox; a new configuration or new code gets new workers.

Concurrency. Like Lambda, a function runs several invocations at once, one per worker (a worker, like
an execution environment, runs one invocation at a time): an idle warm worker is reused, a new one is
started when all are busy, up to the function's cap = min(its reserved concurrency, if set, and the
pool's ``max_concurrency``, default :data:`DEFAULT_MAX_CONCURRENCY`, sized for a small machine). An
invocation beyond the cap waits for a worker to come free (where Lambda would throttle). A reserved
concurrency of 0 is Lambda's off switch: every invocation is refused at once with :class:`Throttled`,
and each caller does what its AWS counterpart does with a 429 (an event source mapping retries the
batch within its visibility timeout, the async queue retries up to the event's maximum age, a pipe
leaves the batch to come back). An event source mapping's pollers, which on AWS do not look at
reserved concurrency, are also refused while the reserve is in use (``lease(throttle=True)``). A timeout or a crash stops only the worker that ran that invocation.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import queue
import secrets
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
import uuid
import zipfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from serverless_retry_tools.local.runtime.architectures import declared_machine, host_machine
from serverless_retry_tools.local.runtime.complete_trees import is_complete, publish
from serverless_retry_tools.local.runtime.host_builds import Runnable, runnable
from serverless_retry_tools.local.runtime.lambda_python import cache_root, version_of
from serverless_retry_tools.local.runtime.lambda_python import resolve as resolve_python
from serverless_retry_tools.local.runtime.layers import mount as mount_layers

__all__ = [
    "CLOCK_FILE_VARIABLE",
    "DEFAULT_MAX_CONCURRENCY",
    "FunctionConfig",
    "FunctionPool",
    "InvocationResult",
    "Lease",
    "LogSink",
    "Throttled",
    "lambda_environment",
    "throttled",
]

WORKER_SCRIPT = Path(__file__).with_name("worker.py")
_SENTINEL_WAIT_SECONDS = 2.0
_START_TIMEOUT_SECONDS = 30.0
CODE_CACHE_VARIABLE = "SERVERLESS_RETRY_CODE_CACHE"
# The emulator's clock file (held_clock.py): a worker shows Lambda code the held logical clock.
CLOCK_FILE_VARIABLE = "SERVERLESS_RETRY_LOCAL_CLOCK_FILE"
# Workers per function unless the function's reserved concurrency is lower: each worker is a Python
# process, and the runtime's machine may have two cores. Not Lambda's concurrency (an SQS mapping
# starts at five batches and scales up: poller_scaling.py): an invocation past this cap waits for a
# worker, and the logical clock waits with it (held_clock.py), so the cap costs real time only.
DEFAULT_MAX_CONCURRENCY = 4
_SLOT_WAIT_SECONDS = 0.5  # how often a waiting invocation checks that the pool is still open
_INIT_TIMEOUT_SECONDS = 10.0  # Lambda's limit on an on-demand init phase

LogSink = Callable[[str, str, str, str], None]  # (function name, log group, log stream, line)


@dataclass(frozen=True)
class FunctionConfig:
    """What the runtime needs of a function, from GetFunction."""

    arn: str
    name: str
    handler: str
    timeout: int
    memory: int
    version: str
    code_sha256: str
    code_location: str
    environment: tuple[tuple[str, str], ...]
    log_group: str
    log_format: str
    log_level: str
    runtime: str
    layers: tuple[str, ...] = ()  # layer version ARNs, in the function's order (mounted at /opt)
    architectures: tuple[str, ...] = ("x86_64",)  # Lambda's default when none is declared
    # Not part of the worker's identity: a changed reserved concurrency changes the cap, not the code.
    reserved_concurrency: int | None = field(default=None, compare=False)

    @classmethod
    def from_get_function(cls, response: Mapping[str, Any]) -> FunctionConfig:
        config = response["Configuration"]
        logging_config = config.get("LoggingConfig") or {}
        name = config["FunctionName"]
        return cls(
            arn=config["FunctionArn"],
            name=name,
            handler=config.get("Handler") or "",
            timeout=int(config.get("Timeout") or 3),
            memory=int(config.get("MemorySize") or 128),
            version=str(config.get("Version") or "$LATEST"),
            code_sha256=config.get("CodeSha256") or "",
            code_location=(response.get("Code") or {}).get("Location") or "",
            environment=tuple(sorted(((config.get("Environment") or {}).get("Variables") or {}).items())),
            log_group=logging_config.get("LogGroup") or f"/aws/lambda/{name}",
            log_format=logging_config.get("LogFormat") or "Text",
            log_level=logging_config.get("ApplicationLogLevel") or "",
            runtime=config.get("Runtime") or "",
            layers=tuple(layer["Arn"] for layer in config.get("Layers") or ()),
            architectures=tuple(config.get("Architectures") or ("x86_64",)),
            reserved_concurrency=_reserved(response),
        )


def _reserved(response: Mapping[str, Any]) -> int | None:
    value = (response.get("Concurrency") or {}).get("ReservedConcurrentExecutions")
    return int(value) if value is not None else None


def lambda_environment(
    config: FunctionConfig, *, task_root: str, log_stream: str, region: str, extra: Mapping[str, str]
) -> dict[str, str]:
    """The worker's whole environment, built from scratch: nothing of this process leaks in (in
    particular no real AWS credentials: ``extra`` carries the emulator's)."""
    env: dict[str, str] = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "LANG": "C.UTF-8",
        "TZ": ":UTC",
    }
    env.update(dict(config.environment))
    # Lambda's reserved variables win over the function's own, as on AWS; then the runtime's extras
    # (endpoint, credentials, clock scale) win over both.
    env.update(
        {
            "_HANDLER": config.handler,
            "AWS_EXECUTION_ENV": f"AWS_Lambda_{config.runtime or 'python3.12'}",
            "AWS_LAMBDA_FUNCTION_NAME": config.name,
            "AWS_LAMBDA_FUNCTION_VERSION": config.version,
            "AWS_LAMBDA_FUNCTION_MEMORY_SIZE": str(config.memory),
            "AWS_LAMBDA_INITIALIZATION_TYPE": "on-demand",
            "AWS_LAMBDA_LOG_GROUP_NAME": config.log_group,
            "AWS_LAMBDA_LOG_STREAM_NAME": log_stream,
            "AWS_REGION": region,
            "AWS_DEFAULT_REGION": region,
            "LAMBDA_TASK_ROOT": task_root,
        }
    )
    if config.log_format == "JSON":
        env["AWS_LAMBDA_LOG_FORMAT"] = "JSON"
        if config.log_level:
            env["AWS_LAMBDA_LOG_LEVEL"] = config.log_level
    env.update(extra)
    return env


class Throttled(Exception):
    """Lambda refused the invocation, nothing ran: the function's reserved concurrency is 0
    (TooManyRequestsException, Reason ReservedFunctionConcurrentInvocationLimitExceeded)."""

    def __init__(self, function: str) -> None:
        super().__init__(
            f"TooManyRequestsException: Rate Exceeded. (function {function}: reserved concurrency 0, "
            "ReservedFunctionConcurrentInvocationLimitExceeded)"
        )
        self.function = function


def throttled(config: FunctionConfig) -> bool:
    """Whether Lambda refuses every invocation of the function (reserved concurrency 0)."""
    return config.reserved_concurrency == 0


@dataclass
class InvocationResult:
    request_id: str
    ok: bool
    result: Any = None
    error: dict[str, Any] | None = None
    duration_ms: float = 0.0
    timed_out: bool = False

    @property
    def error_text(self) -> str:
        if self.error is None:
            return ""
        return f"{self.error.get('errorType', 'Error')}: {self.error.get('errorMessage', '')}"


@dataclass(eq=False)  # a worker is itself: kept in sets by identity
class _Worker:
    config: FunctionConfig
    proc: subprocess.Popen[str]
    results: queue.Queue[dict[str, Any] | None]
    log_stream: str
    token: str
    sentinels: dict[str, threading.Event] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def alive(self) -> bool:
        return self.proc.poll() is None


@dataclass
class _Slots:
    """One function's workers: the idle ones, and how many invocations are running."""

    ready: threading.Condition = field(default_factory=threading.Condition)
    idle: list[_Worker] = field(default_factory=list)
    busy: int = 0


class FunctionPool:
    """Warm workers per function, created from the emulator's state on demand; up to
    :meth:`capacity` of one function's invocations run at once, each in its own worker."""

    def __init__(
        self,
        lambda_client: Any,
        work_dir: Path,
        *,
        region: str,
        extra_env: Mapping[str, str],
        log_sink: LogSink | None = None,
        python: str | None = None,
        libs: list[str] | None = None,
        on_warning: Callable[[str, str], None] | None = None,
        max_concurrency: int = DEFAULT_MAX_CONCURRENCY,
    ) -> None:
        if max_concurrency < 1:
            raise ValueError(f"max_concurrency must be at least 1, not {max_concurrency}")
        self.max_concurrency = max_concurrency
        self._lambda = lambda_client
        # Unpacked code, one directory per CodeSha256. SERVERLESS_RETRY_CODE_CACHE lets runtimes
        # share it (a test run's many runtimes then unpack and byte-compile each zip once).
        self._code_root = Path(os.environ.get(CODE_CACHE_VARIABLE) or work_dir / "code")
        self._region = region
        self._extra_env = dict(extra_env)
        self._log_sink = log_sink
        # By default each function runs on its Lambda runtime's Python with only boto3 besides its
        # zip (serverless_retry_tools.local.runtime.lambda_python); ``python``/``libs`` pin both instead.
        self._python = python
        self._libs = libs
        self._on_warning = on_warning
        self._slots: dict[str, _Slots] = {}
        self._live: set[_Worker] = set()  # every started worker not yet stopped, for close()
        self._pool_lock = threading.Lock()
        self._code_locks: dict[str, threading.Lock] = {}
        # The trees each function's workers run (its code and /opt with foreign builds replaced),
        # and the notices about them already given as warnings.
        self._runnables: dict[tuple[str, ...], tuple[Runnable, Runnable | None]] = {}
        self._announced: set[tuple[str, str]] = set()
        self._closed = False
        self.invocations = 0

    # -- configuration and code ---------------------------------------------------------------------
    def describe(self, function: str) -> FunctionConfig:
        return FunctionConfig.from_get_function(self._lambda.get_function(FunctionName=function))

    def _code_dir(self, config: FunctionConfig) -> Path:
        """The function's code, unpacked once per CodeSha256 and shared by every function with that
        code. Atomic: the zip is downloaded and unpacked into a private staging directory that is
        renamed into place complete, so workers starting together (in this runtime or another one
        sharing the work dir) never read a half-written archive or tree."""
        digest = config.code_sha256.replace("/", "_").replace("+", "-").rstrip("=") or "unknown"
        target = self._code_root / digest
        if is_complete(target):
            return target
        if not config.code_location.startswith(("http://", "https://")):
            raise RuntimeError(
                f"function {config.name}: GetFunction gave no downloadable Code.Location "
                f"({config.code_location!r}); is the emulator's lambda_code_location_unreachable patch on?"
            )
        with self._pool_lock:
            lock = self._code_locks.setdefault(digest, threading.Lock())
        with lock:  # one download per digest in this runtime; the rename settles races between runtimes
            if is_complete(target):
                return target
            target.parent.mkdir(parents=True, exist_ok=True)
            staging = Path(tempfile.mkdtemp(prefix=f".{digest}.", dir=target.parent))
            try:
                with urllib.request.urlopen(config.code_location, timeout=30) as response:
                    archive = io.BytesIO(response.read())
                with zipfile.ZipFile(archive) as zf:
                    zf.extractall(staging)
                if target.exists() and not is_complete(target):
                    # Left incomplete by an interrupted run of an older version: set it aside.
                    shutil.rmtree(target, ignore_errors=True)
                publish(staging, target, config.code_sha256)
            finally:
                shutil.rmtree(staging, ignore_errors=True)
        return target

    # -- workers ------------------------------------------------------------------------------------
    def prepare(self, config: FunctionConfig) -> None:
        """Unpack the function's code and find its Python (a first use may install boto3 for it),
        so that a batch received next does not spend its visibility timeout on that."""
        self._trees(config, self._interpreter(config)[0])

    def _opt_dir(self, config: FunctionConfig) -> Path | None:
        """The function's layers extracted as Lambda's /opt (None without layers)."""
        if not config.layers:
            return None
        return mount_layers(self._lambda, config.arn, config.layers, self._code_root / "layers")

    def _trees(self, config: FunctionConfig, python: str) -> tuple[Runnable, Runnable | None]:
        """The function's code and /opt as its worker runs them on this host: a distribution whose
        compiled modules are built for the function's declared architecture only (an arm64 zip on
        an x86_64 host) is replaced by this host's build (host_builds.py)."""
        code, opt = self._code_dir(config), self._opt_dir(config)
        version = version_of(python) or f"{sys.version_info[0]}.{sys.version_info[1]}"
        declared, host = declared_machine(config.architectures), host_machine()
        key = (config.name, str(code), str(opt), declared, python)
        with self._pool_lock:
            if key in self._runnables:
                return self._runnables[key]

        def run(tree: Path, sites: tuple[str, ...], where: str) -> Runnable:
            return runnable(
                tree, sites, declared=declared, host=host, python=python, python_version=version,
                where=f"function {config.name}'s {where}", cache=cache_root() / "host-builds",
            )  # fmt: skip

        site = f"python/lib/python{version}/site-packages"
        trees = (run(code, (".",), "zip"), run(opt, ("python", site), "layers") if opt is not None else None)
        with self._pool_lock:
            self._runnables[key] = trees
        return trees

    def _announce(self, worker: _Worker, trees: tuple[Runnable, Runnable | None]) -> None:
        """Say in the function's log, at each cold start as Lambda's own INIT lines are, what the
        emulator substituted or found, and once as a warning of the runtime."""
        for tree in trees:
            if tree is None:
                continue
            for line in (tree.summary, *tree.notes):
                if not line:
                    continue
                self._log(worker, line)
                first = (worker.config.name, line) not in self._announced
                self._announced.add((worker.config.name, line))
                if first and self._on_warning is not None:
                    self._on_warning(worker.config.name, line)

    def _start(self, config: FunctionConfig) -> _Worker:
        python, libs = self._interpreter(config)
        trees = self._trees(config, python)
        task_root = str(trees[0].path)
        stamp = datetime.now(UTC).strftime("%Y/%m/%d")
        log_stream = f"{stamp}/[{config.version}]{uuid.uuid4().hex}"
        env = lambda_environment(
            config, task_root=task_root, log_stream=log_stream, region=self._region, extra=self._extra_env
        )
        token = f"__serverless_retry_end_{secrets.token_hex(8)}__"
        read_fd, write_fd = os.pipe()
        cmd = [
            python,
            "-I",
            "-S",
            str(WORKER_SCRIPT),
            "--task-root",
            task_root,
            "--result-fd",
            str(write_fd),
        ]
        cmd += ["--sentinel", token]
        if trees[1] is not None:
            cmd += ["--opt", str(trees[1].path)]
        for lib in libs:
            cmd += ["--lib", lib]
        try:
            proc = subprocess.Popen(
                cmd,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                env=env,
                cwd=task_root,
                pass_fds=(write_fd,),
                text=True,
                bufsize=1,
            )
        finally:
            os.close(write_fd)
        results: queue.Queue[dict[str, Any] | None] = queue.Queue()
        worker = _Worker(config, proc, results, log_stream, token)
        threading.Thread(target=self._read_results, args=(read_fd, results), daemon=True).start()
        threading.Thread(target=self._read_output, args=(worker,), daemon=True).start()
        self._announce(worker, trees)
        return worker

    def _interpreter(self, config: FunctionConfig) -> tuple[str, list[str]]:
        if self._python is not None or self._libs is not None:
            return self._python or sys.executable, list(self._libs or [])
        found = resolve_python(config.runtime)
        if found.warning and self._on_warning is not None:
            self._on_warning(config.name, found.warning)
        return found.executable, list(found.libs)

    @staticmethod
    def _read_results(fd: int, results: queue.Queue[dict[str, Any] | None]) -> None:
        with os.fdopen(fd, "r", encoding="utf-8") as stream:
            for line in stream:
                with contextlib.suppress(json.JSONDecodeError):
                    results.put(json.loads(line))
        results.put(None)  # the worker is gone

    def _read_output(self, worker: _Worker) -> None:
        assert worker.proc.stdout is not None
        for raw in worker.proc.stdout:
            line = raw.rstrip("\n")
            if line.startswith(worker.token):
                event = worker.sentinels.get(line[len(worker.token) :].strip())
                if event is not None:
                    event.set()
                continue
            self._log(worker, line)

    def _log(self, worker: _Worker, line: str) -> None:
        if self._log_sink is not None:
            self._log_sink(worker.config.name, worker.config.log_group, worker.log_stream, line)

    def capacity(self, config: FunctionConfig) -> int:
        """How many of this function's invocations may run at once (0: none, it is throttled)."""
        reserved = config.reserved_concurrency
        if reserved is not None:
            return min(reserved, self.max_concurrency)
        return self.max_concurrency

    def _acquire(
        self, config: FunctionConfig, *, throttle: bool = False, patience: float = 0.0
    ) -> tuple[_Slots, _Worker | None]:
        """Wait for a free slot; return it with an idle worker of this configuration, if any. With no
        slot at all (reserved concurrency 0), or with ``throttle`` while the reserve is in use, refuse
        at once, as Lambda does."""
        if throttled(config):
            raise Throttled(config.name)
        reserved = config.reserved_concurrency
        give_up = time.monotonic() + patience
        with self._pool_lock:
            slots = self._slots.setdefault(config.arn, _Slots())
        with slots.ready:
            while slots.busy >= self.capacity(config):
                if throttle and reserved is not None and slots.busy >= reserved:
                    left = give_up - time.monotonic()
                    if left <= 0 or self._closed:
                        raise Throttled(config.name)
                    slots.ready.wait(min(left, _SLOT_WAIT_SECONDS))
                    continue
                if self._closed:
                    raise RuntimeError("the function pool is closed")
                slots.ready.wait(_SLOT_WAIT_SECONDS)
            slots.busy += 1
            # Workers of older code or configuration, or that died while idle, are done with.
            fresh = [w for w in slots.idle if w.config == config and w.alive()]
            stale = [w for w in slots.idle if w not in fresh]
            worker = fresh.pop() if fresh else None
            slots.idle = fresh
        for old in stale:
            self._stop_worker(old)
        return slots, worker

    def _release(self, slots: _Slots, worker: _Worker | None) -> None:
        keep = worker is not None and worker.alive() and not self._closed
        with slots.ready:
            slots.busy -= 1
            if keep and worker is not None:
                slots.idle.append(worker)
            slots.ready.notify()
        if worker is not None and not keep:
            self._stop_worker(worker)

    def _stop_worker(self, worker: _Worker) -> None:
        with self._pool_lock:
            self._live.discard(worker)
        if worker.proc.stdin is not None:
            with contextlib.suppress(OSError):
                worker.proc.stdin.close()
        if worker.proc.poll() is None:
            worker.proc.terminate()
            try:
                worker.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                worker.proc.kill()
                worker.proc.wait(timeout=5)

    # -- invocation ---------------------------------------------------------------------------------
    def invoke(
        self,
        function: str,
        event: Any,
        *,
        config: FunctionConfig | None = None,
        request_id: str | None = None,
        throttle: bool = False,
    ) -> InvocationResult:
        """Invoke synchronously (RequestResponse) in an idle or new worker of the function, waiting
        while :meth:`capacity` invocations of it are running (with ``throttle``, raising
        :class:`Throttled` instead while its reserved concurrency is in use). An async invocation
        passes its ``request_id`` (the same on each of Lambda's retries)."""
        if self._closed:
            raise RuntimeError("the function pool is closed")
        config = config or self.describe(function)
        lease = self.lease(config, warm=False, throttle=throttle)
        try:
            return lease.invoke(config, event, request_id)
        finally:
            lease.release()

    def lease(
        self, config: FunctionConfig, *, warm: bool = True, throttle: bool = False, patience: float = 0.0
    ) -> Lease:
        """Hold one of the function's slots (waiting while :meth:`capacity` are held) with an idle
        worker or, ``warm``, a new one whose handler is already imported: an event source mapping
        takes one before it invokes, so a batch's visibility timeout is not spent starting Python.
        With ``throttle``, raise :class:`Throttled` while the function's reserved concurrency is all
        in use, as Lambda answers an SQS poller, after waiting up to ``patience`` real seconds for a
        slot of the reserve to free up (the runtime's own cap is always waited for).
        The caller must :meth:`Lease.release` it."""
        slots, worker = self._acquire(config, throttle=throttle, patience=patience)
        lease = Lease(self, slots, worker)
        if worker is None and warm:
            try:
                lease.worker = self._started(config)
                if not self._warm(lease.worker):
                    self._stop_worker(lease.worker)
                    lease.worker = None  # its invocation starts another, and reports the init error
            except BaseException:
                lease.release()
                raise
        return lease

    def _started(self, config: FunctionConfig) -> _Worker:
        worker = self._start(config)
        with self._pool_lock:
            self._live.add(worker)
        return worker

    def _warm(self, worker: _Worker) -> bool:
        """Run the worker's init phase; False when it failed, took too long or the worker died."""
        try:
            assert worker.proc.stdin is not None
            worker.proc.stdin.write(json.dumps({"request_id": f"init-{uuid.uuid4()}", "init": True}) + "\n")
            worker.proc.stdin.flush()
            reply = worker.results.get(timeout=_INIT_TIMEOUT_SECONDS)
        except (queue.Empty, OSError):
            return False
        return reply is not None and bool(reply.get("ok"))

    def _invoke(self, worker: _Worker, event: Any, request_id: str | None = None) -> InvocationResult:
        config = worker.config
        request_id = request_id or str(uuid.uuid4())
        started = time.monotonic()
        deadline_ms = int((time.time() + config.timeout) * 1000)
        sentinel = worker.sentinels[request_id] = threading.Event()
        self._log(worker, f"START RequestId: {request_id} Version: {config.version}")
        request = {
            "request_id": request_id,
            "event": event,
            "deadline_ms": deadline_ms,
            "function_arn": config.arn,
        }
        result: InvocationResult
        try:
            assert worker.proc.stdin is not None
            worker.proc.stdin.write(json.dumps(request) + "\n")
            worker.proc.stdin.flush()
            reply = worker.results.get(timeout=config.timeout)
        except queue.Empty:
            self._stop_worker(worker)
            self._log(worker, f"{_now_iso()} {request_id} Task timed out after {config.timeout:.2f} seconds")
            result = InvocationResult(
                request_id,
                ok=False,
                error={
                    "errorType": "Sandbox.Timedout",
                    "errorMessage": f"Task timed out after {config.timeout:.2f} seconds",
                },
                timed_out=True,
            )
        except (BrokenPipeError, OSError) as exc:
            self._stop_worker(worker)
            result = InvocationResult(
                request_id, ok=False, error={"errorType": "Runtime.ExitError", "errorMessage": str(exc)}
            )
        else:
            if reply is None:
                code = worker.proc.wait(timeout=5)
                message = f"RequestId: {request_id} Error: Runtime exited with error: exit status {code}"
                self._log(worker, message)
                result = InvocationResult(
                    request_id, ok=False, error={"errorType": "Runtime.ExitError", "errorMessage": message}
                )
            else:
                sentinel.wait(_SENTINEL_WAIT_SECONDS)
                result = InvocationResult(
                    request_id, ok=bool(reply.get("ok")), result=reply.get("result"), error=reply.get("error")
                )
                if reply.get("fatal"):
                    self._stop_worker(worker)
        worker.sentinels.pop(request_id, None)
        result.duration_ms = (time.monotonic() - started) * 1000
        with self._pool_lock:
            self.invocations += 1
        self._log(worker, f"END RequestId: {request_id}")
        self._log(
            worker,
            f"REPORT RequestId: {request_id}\tDuration: {result.duration_ms:.2f} ms\t"
            f"Billed Duration: {int(result.duration_ms) + 1} ms\tMemory Size: {config.memory} MB",
        )
        return result

    def close(self) -> None:
        self._closed = True
        with self._pool_lock:
            workers = list(self._live)
        for worker in workers:
            self._stop_worker(worker)


class Lease:
    """One held slot of a function, with its worker (None: started at the first invocation)."""

    def __init__(self, pool: FunctionPool, slots: _Slots, worker: _Worker | None) -> None:
        self._pool = pool
        self._slots = slots
        self.worker = worker
        self._released = False

    def invoke(self, config: FunctionConfig, event: Any, request_id: str | None = None) -> InvocationResult:
        worker = self.worker
        if worker is not None and (worker.config != config or not worker.alive()):
            self._pool._stop_worker(worker)  # new code or configuration, or it crashed or timed out
            worker = self.worker = None
        if worker is None:
            worker = self.worker = self._pool._started(config)
        return self._pool._invoke(worker, event, request_id)

    def release(self) -> None:
        if not self._released:
            self._released = True
            self._pool._release(self._slots, self.worker)


def _now_iso() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"
