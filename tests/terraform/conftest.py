"""The Terraform tier: drive the terraform CLI (and checkov) with plain subprocess.

Why not python-terraform: 0.10.1 (2019) passes ``-force`` to destroy, stops at apply's approval
prompt and has a broken ``output()`` with current Terraform; the CLI itself is a small, stable
interface. Every directory is copied to a per-session workspace and initialised once there, so the
source tree gets no ``.terraform`` or lock files and parallel sessions (xdist workers) never share
an initialised directory.
"""

from __future__ import annotations

import atexit
import contextlib
import fcntl
import json
import os
import re
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Generic, TypeVar

import pytest

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).parent
# The example-apply tests (test_example_apply*.py) run last: they wait for their stack.
APPLY_TESTS = "test_example_apply"
MODULES = (
    "modules/retry-policy",
    "modules/queue",
    "modules/scheduler",
    "modules/function",
    "modules/consumer",
    "modules/scheduled-retry",
    "modules/monitoring",
    "modules/self-healing",
    "modules/layer",
    "modules/stream-retry",
    "modules/archive",
)
EXAMPLES = (
    "examples/scheduled-retry",
    "examples/self-healing",
    "examples/native-retry",
    "examples/stream-retry",
)
TF_DIRS = MODULES + EXAMPLES
# What the workspace holds: the configurations and what their tests reference by relative path.
COPIED = ("modules", "examples", "tests/terraform/mocks", "tests/terraform/fixtures")
# Terraform processes run side by side up to this many (more only queue up for CPU).
PARALLEL = max(2, min(4, os.cpu_count() or 2))
# Terraform, its providers and checkov are throughput work: niced, they leave the CPU first to what
# keeps time, the emulators and function workers of the integration tests running beside them
# (whose logical clocks run 20 to 100 times real time, so a second of waiting for a core is minutes).
NICE = ["nice", "-n", "10"] if shutil.which("nice") else []
K = TypeVar("K")
V = TypeVar("V")


def _ours(item: pytest.Item) -> bool:
    return HERE in Path(str(item.fspath)).parents


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark this tier `terraform`, and run the example-apply tests last within it: their stack is
    applied in the background from the start of the run (see tests/terraform/stack.py)."""
    ours = [i for i, item in enumerate(items) if _ours(item)]
    for i in ours:
        items[i].add_marker(pytest.mark.terraform)
    block = [items[i] for i in ours]
    block.sort(key=lambda item: Path(str(item.fspath)).name.startswith(APPLY_TESTS))  # stable sort
    for i, item in zip(ours, block, strict=True):
        items[i] = item


def terraform_env() -> dict[str, str]:
    """The environment scripts/tf-env.sh sets up (offline provider mirror, plugin cache), read from
    bash itself so the two can never disagree."""
    out = subprocess.run(
        ["bash", "-c", 'source "$1" && env -0', "tf-env", str(ROOT / "scripts" / "tf-env.sh")],
        capture_output=True,
        check=True,
        timeout=30,
    ).stdout.decode()
    env = dict(item.split("=", 1) for item in out.split("\0") if "=" in item)
    # A stray endpoint must never redirect a test's terraform (the apply test sets its own).
    for key in [k for k in env if k.startswith("AWS_ENDPOINT_URL")]:
        del env[key]
    env["TF_INPUT"] = "0"
    return env


class SharedProvider:
    """One AWS provider process for every mocked `terraform test`, `validate` and `console` of this pytest
    process, which Terraform attaches to (TF_REATTACH_PROVIDERS, the provider's -debug mode)
    instead of starting the provider again for each run block: a start costs ~1 s of CPU (its
    schema), and the suite has ~300 such runs. Measured on the consumer module's 40 runs: 100 s and
    ~48 s of CPU before, 15 s and ~16 s after.

    Only those commands attach, and `test` only when every test file of the directory mocks
    the provider (``mock_provider "aws"``): they ask it for its schema and to validate, never to
    configure, so concurrent Terraform processes cannot disturb one another. Plans and applies
    against an endpoint configure the provider: they get one of their own (``attached_provider``).
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._provider: DebugProvider | None = None
        self._reattach: str | None = None

    def env(self, args: Sequence[str], cwd: Path) -> dict[str, str]:
        if not args or args[0] not in ("test", "validate", "console") or not self._mocked(args, cwd):
            return {}
        binary = DebugProvider.binary(cwd)
        if binary is None:
            return {}
        with self._lock:
            if self._reattach is None:
                self._reattach = self._start(binary)
        return {"TF_REATTACH_PROVIDERS": self._reattach}

    @staticmethod
    def _mocked(args: Sequence[str], cwd: Path) -> bool:
        if args[0] in ("validate", "console"):  # (console asks only for the schema, as validate)
            return True
        directory = next((a.split("=", 1)[1] for a in args if a.startswith("-test-directory=")), "tests")
        files = list((cwd / directory).glob("*.tftest.hcl"))
        return bool(files) and all('mock_provider "aws"' in f.read_text(encoding="utf-8") for f in files)

    def _start(self, binary: Path) -> str:
        self._provider = DebugProvider(binary, Path.cwd(), terraform_env())
        atexit.register(self.close)
        return self._provider.reattach

    def close(self) -> None:
        provider, self._provider = self._provider, None
        self._reattach = None
        if provider is not None:
            provider.close()


class DebugProvider:
    """The AWS provider started in its -debug mode: Terraform attaches to it (``reattach``, the value
    of TF_REATTACH_PROVIDERS) instead of starting a provider of its own for every step. Started with
    ``cwd`` and ``env`` as Terraform would start it: relative paths (a function's zip) resolve alike."""

    _REATTACH = re.compile(r"TF_REATTACH_PROVIDERS='(\{.*\})'")

    def __init__(self, binary: Path, cwd: Path, env: Mapping[str, str], *, niced: bool = True) -> None:
        self._log = Path(tempfile.mkstemp(prefix="serverless-retry-provider-", suffix=".log")[1])
        # Its output goes to a file: a pipe nobody reads would fill and stop the provider.
        with self._log.open("wb") as out:
            self._proc: subprocess.Popen[bytes] | None = subprocess.Popen(
                [*(NICE if niced else []), str(binary), "-debug"],
                cwd=cwd,
                stdout=out,
                stderr=subprocess.STDOUT,
                # Without AWS_CA_BUNDLE: given one, a provider configured a second time (the plan after
                # an apply) fails ("unable to add custom RootCAs HTTPClient"). Our endpoints are plain
                # http. Its logs off: in -debug mode it writes every request at trace level.
                env={
                    **{k: v for k, v in env.items() if k != "AWS_CA_BUNDLE"},
                    **dict.fromkeys(("TF_LOG_PROVIDER", "TF_LOG_SDK", "TF_LOG_SDK_PROTO"), "off"),
                },
            )
        self.reattach = self._wait(binary)

    def _wait(self, binary: Path) -> str:
        assert self._proc is not None
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and self._proc.poll() is None:
            found = self._REATTACH.search(self._log.read_text(encoding="utf-8", errors="replace"))
            if found:
                return found.group(1)
            time.sleep(0.1)
        text = self._log.read_text(errors="replace")[-2000:]
        self.close()
        raise AssertionError(f"{binary} -debug printed no reattach line:\n{text}")

    @staticmethod
    def binary(directory: Path) -> Path | None:
        """The AWS provider ``terraform init`` installed for ``directory``, if any."""
        found = sorted(
            (directory / ".terraform" / "providers").glob("*/hashicorp/aws/*/*/terraform-provider-aws*")
        )
        return found[-1] if found else None

    def close(self) -> None:
        proc, self._proc = self._proc, None
        if proc is not None and proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=10)
        self._log.unlink(missing_ok=True)


@contextlib.contextmanager
def attached_provider(
    directory: Path, env: Mapping[str, str], *, niced: bool = True
) -> Iterator[dict[str, str]]:
    """TF_REATTACH_PROVIDERS (empty before ``terraform init``) for one provider that serves every
    Terraform command run in ``directory`` inside the block, one after another: each configures it
    anew, as it would a provider it started. An apply, its plan and output started ~7 providers, each
    ~1 s of CPU loading the schema before doing anything. Not for commands running side by side with
    different configurations: they would configure the one provider in turn."""
    binary = DebugProvider.binary(directory)
    if binary is None:
        yield {}
        return
    provider = DebugProvider(binary, directory, env, niced=niced)
    try:
        yield {"TF_REATTACH_PROVIDERS": provider.reattach}
    finally:
        provider.close()


SHARED_PROVIDER = SharedProvider()


@dataclass(frozen=True)
class Terraform:
    env: Mapping[str, str]
    # Niced unless the run waits on it: the shared stacks' applies gate whole groups of tests.
    niced: bool = True

    @property
    def _command(self) -> list[str]:
        return [*NICE, "terraform"] if self.niced else ["terraform"]

    def run(
        self,
        args: Sequence[str],
        cwd: Path,
        *,
        timeout: float = 300,
        extra_env: Mapping[str, str] | None = None,
        stdin: str | None = None,
    ) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [*self._command, *args],
            cwd=cwd,
            env={**self.env, **SHARED_PROVIDER.env(args, cwd), **(extra_env or {})},
            input=stdin,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )

    def run_until(
        self,
        args: Sequence[str],
        cwd: Path,
        stop: Callable[[str], bool],
        *,
        timeout: float = 300,
        extra_env: Mapping[str, str] | None = None,
    ) -> tuple[str, bool]:
        """``terraform ARGS``, its output (stderr merged) read line by line; once ``stop(line)`` says
        so, the process and its providers are killed (SIGKILL to its process group: an interrupted
        Terraform would first clean up, the very work a caller stops it to skip). Returns the
        output so far and whether it was stopped."""
        proc = subprocess.Popen(
            [*self._command, *args],
            cwd=cwd,
            env={**self.env, **SHARED_PROVIDER.env(args, cwd), **(extra_env or {})},
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,
        )

        def kill() -> None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)

        watchdog = threading.Timer(timeout, kill)
        watchdog.start()
        lines: list[str] = []
        stopped = False
        try:
            assert proc.stdout is not None
            for line in proc.stdout:
                lines.append(line)
                if stop(line):
                    stopped = True
                    kill()
                    break
        finally:
            watchdog.cancel()
            proc.wait(timeout=30)
            if proc.stdout is not None:
                proc.stdout.close()
        if not stopped and proc.returncode == -signal.SIGKILL:
            raise AssertionError(
                f"terraform {' '.join(args)} timed out after {timeout} s:\n{''.join(lines)[-3000:]}"
            )
        return "".join(lines), stopped

    def console(self, cwd: Path, expression: str, variables: Mapping[str, object] | None = None) -> object:
        """Evaluate one expression with ``terraform console`` (no state, no credentials needed) and
        return its value, JSON-decoded: the expression is wrapped in jsonencode() so the one line
        console prints is a string literal whose content is JSON."""
        # A private (empty) state per call: console locks its state, and calls run in parallel.
        scratch = cwd / f".console-{os.getpid()}-{threading.get_ident()}"
        args = ["console", "-no-color", f"-state={scratch}.tfstate"]
        if variables:
            Path(f"{scratch}.tfvars.json").write_text(json.dumps(variables))
            args.append(f"-var-file={scratch}.tfvars.json")
        try:
            result = self.run(args, cwd, stdin=f"jsonencode({expression})\n", timeout=120)
        finally:
            for suffix in (".tfvars.json", ".tfstate", ".tfstate.lock.info"):
                Path(f"{scratch}{suffix}").unlink(missing_ok=True)
        if result.returncode != 0:
            raise AssertionError(f"terraform console failed in {cwd}:\n{result.stdout}\n{result.stderr}")
        line = result.stdout.strip().splitlines()[-1]
        # An HCL string literal: JSON escapes plus $${ and %%{ for literal template markers.
        text = json.loads(line).replace("$${", "${").replace("%%{", "%{")
        return json.loads(text)


def _provider_cached(cache: Path) -> bool:
    return any(cache.glob("registry.terraform.io/*/*/*/*"))


def init(terraform: Terraform, directory: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``terraform init``. The first one of the session (across xdist workers too) installs the
    provider into the shared plugin cache, and two doing so at once fail with "file exists": that one
    runs alone. Later ones only link the cached provider (scripts/tf-env.sh's
    TF_PLUGIN_CACHE_MAY_BREAK_DEPENDENCY_LOCK_FILE, tests/terraform/test_plugin_cache.py) and run side
    by side.
    """
    cache = Path(terraform.env.get("TF_PLUGIN_CACHE_DIR") or ROOT / "build" / "terraform")
    cache.mkdir(parents=True, exist_ok=True)
    if not _provider_cached(cache):
        with (cache / ".serverless-retry-init.lock").open("w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if not _provider_cached(cache):
                return terraform.run(["init", "-no-color", *args], directory)
    return terraform.run(["init", "-no-color", *args], directory)


@dataclass(frozen=True)
class Workspace:
    root: Path
    terraform: Terraform

    def dir(self, relative: str) -> Path:
        return self.root / relative


def ignore_state(_: str, names: list[str]) -> set[str]:
    return {n for n in names if n in (".terraform", ".terraform.lock.hcl") or n.endswith(".tfstate")}


@pytest.fixture(scope="session")
def terraform() -> Terraform:
    if shutil.which("terraform") is None:
        pytest.skip("terraform is not on PATH")
    return Terraform(terraform_env())


def _initialised(terraform: Terraform, root: Path) -> None:
    """Copy every module and example to ``root`` and ``terraform init`` each there."""
    for relative in COPIED:
        shutil.copytree(ROOT / relative, root / relative, ignore=ignore_state)

    # The first init writes a lock file; with it in place the others skip hashing the provider
    # (~1 s of CPU each: the package is hundreds of MB), and they run side by side.
    first, *rest = TF_DIRS
    results = [(first, init(terraform, root / first, "-backend=false"))]
    lock_file = root / first / ".terraform.lock.hcl"
    if lock_file.is_file():
        for directory in rest:
            shutil.copyfile(lock_file, root / directory / ".terraform.lock.hcl")
    with ThreadPoolExecutor(PARALLEL) as pool:
        results += zip(
            rest, pool.map(lambda d: init(terraform, root / d, "-backend=false"), rest), strict=True
        )
    failed = [(d, r) for d, r in results if r.returncode != 0]
    if failed:
        pytest.fail(
            "terraform init failed:\n" + "\n".join(f"{d}:\n{r.stdout}\n{r.stderr}" for d, r in failed)
        )


@pytest.fixture(scope="session")
def workspace(terraform: Terraform, tmp_path_factory: pytest.TempPathFactory) -> Workspace:
    """Every module and example copied to one directory and initialised (once per session).

    Under xdist the first worker initialises a template in the run's shared temporary directory and
    the others copy it (an initialised directory is its files, the lock file and links into the
    plugin cache): ten inits per worker were ~7 s of CPU each time."""
    root = tmp_path_factory.mktemp("tf-workspace")
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        _initialised(terraform, root)
        return Workspace(root, terraform)
    template = tmp_path_factory.getbasetemp().parent / "tf-workspace-template"
    with (template.parent / "tf-workspace-template.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        done = template / ".serverless-retry-initialised"
        if not done.exists():
            shutil.rmtree(template, ignore_errors=True)
            template.mkdir()
            _initialised(terraform, template)
            done.touch()
    shutil.copytree(template, root, symlinks=True, dirs_exist_ok=True)
    return Workspace(root, terraform)


@pytest.fixture(autouse=True)
def _example_sources_importable(monkeypatch: pytest.MonkeyPatch) -> None:
    """The example's processor package lives in examples/scheduled-retry/src, not in lambda_src."""
    monkeypatch.syspath_prepend(str(ROOT / "examples" / "scheduled-retry" / "src"))


class Runs(Generic[K, V]):
    """``fn(key)`` for a fixed set of keys, computed once each.

    In a single pytest process the first lookup starts every key in a thread pool (terraform
    processes of different directories overlap). Under pytest-xdist each worker only computes the
    keys its own tests ask for: pre-starting everything would redo all of it on every worker.
    """

    def __init__(self, fn: Callable[[K], V], keys: Iterable[K]) -> None:
        self._fn = fn
        self._keys = list(keys)
        self._futures: dict[K, Future[V]] = {}
        self._pool = ThreadPoolExecutor(PARALLEL)
        self._lock = threading.Lock()

    def __getitem__(self, key: K) -> V:
        with self._lock:
            if key not in self._futures:
                wanted = [key] if os.environ.get("PYTEST_XDIST_WORKER") else self._keys
                for k in wanted:
                    if k not in self._futures:
                        self._futures[k] = self._pool.submit(self._fn, k)
            future = self._futures[key]
        return future.result()

    def close(self) -> None:
        self._pool.shutdown(wait=True, cancel_futures=True)
