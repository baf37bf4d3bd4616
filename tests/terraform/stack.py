"""Example stacks applied once per test run, shared by the terraform and integration tiers.

Applying an example to the emulator takes ~90 s, nearly all of it the AWS provider's SQS attribute
waiters sleeping. So each stack is applied once per test run, in a background thread started as
soon as collection shows a test wants it (see ``tests/conftest.py``, which also runs the tests that
use a stack last), while the other tiers run; a test that needs the stack waits for it then. Both
tiers get the same emulator and outputs: the terraform tier checks what was created, the
integration tier drives it with the local runtime (and restores whatever it changes).

Under pytest-xdist the applies run in the controller process (it only waits for reports anyway),
which writes each applied stack's description (emulator address and clock, outputs, directory) to
``<stack dir>/<name>.json``; a worker's fixture waits for that file and attaches to the emulator.
Every test of one stack is in one xdist group (``stack-<name>``), so they run one after the other
on one worker, and a test that changes the stack has it to itself until it has restored it.

Adding a stack is one line in ``STACKS``: its root, the fixture name tests ask for, its variables,
and the clock scale its emulator runs on. The root is ``examples/<name>`` unless the spec names
another (a test fixture root); the package is ``dist/examples/<package or name>.zip`` when
``./build.sh package`` made it, else built here from the spec's ``source`` directory.
"""

from __future__ import annotations

import importlib
import json
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import boto3
import pytest
from serverless_retry_tools.local.emulator.emulator import Emulator
from serverless_retry_tools.local.sandbox.terraform import emulator_variables

from tests.terraform.conftest import ROOT, Terraform, attached_provider, ignore_state, terraform_env
from tests.terraform.conftest import init as terraform_init


@dataclass(frozen=True)
class StackSpec:
    name: str  # examples/<name>, dist/examples/<name>.zip
    fixture: str  # the session fixture tests request
    source: str  # what scripts/build_package.py adds to the package (--extra)
    variables: dict[str, Any] = field(default_factory=dict)
    # Logical seconds per real second. Queue visibility timeouts are logical and function timeouts
    # real, so a stack's visibility must hold at this scale (180 logical s = 1.8 real s at x100).
    clock_scale: float = 100.0
    directory: str | None = None  # the root, relative to the repository; None: examples/<name>
    package: str | None = None  # the dist/examples/<package>.zip it deploys; None: <name>
    # "python.module:Class", a SharedStack subclass that prepares and applies the root its own way
    # (the outside-the-repository stack); None: an example root and its package, as below.
    applier: str | None = None

    @property
    def root(self) -> str:
        return self.directory or f"examples/{self.name}"


STACKS: tuple[StackSpec, ...] = (
    StackSpec("scheduled-retry", "scheduled_retry_stack", "examples/scheduled-retry/src/orders_example", {"function_timeout": 30}),
    # x10: between two attempts the self-healing pipeline runs in real time (x the scale), and the
    # failure queue's 180 s visibility must outlast a cold enrichment (18 real seconds at x10).
    StackSpec("self-healing", "self_healing_stack", "examples/self-healing/src/self_healing_example", clock_scale=10.0),
    StackSpec("native-retry", "native_retry_stack", "examples/native-retry/src/native_orders", {"function_timeout": 30, "release": "buggy"}, clock_scale=10.0),
    # Both FIFO orders (modules/scheduled-retry, fifo = true) with the example's processor and zip.
    StackSpec("fifo-retry", "fifo_retry_stack", "examples/scheduled-retry/src/orders_example", directory="tests/terraform/fixtures/fifo-retry", package="scheduled-retry"),
    # modules/stream-retry with its defaults on a Kinesis stream, its own journaling processor. x10: the
    # default policy's whole budget (retries after 10, 20, 40, 80 s by SQS delay, no Scheduler hop) runs
    # out in 15 real s, and the retry queue's 180 s visibility is 18 real s, ample for a cold invocation.
    StackSpec("stream-retry", "stream_retry_stack", "tests/integration/fixtures/stream-retry/src/stream_journal", clock_scale=10.0, directory="tests/integration/fixtures/stream-retry", package="stream-retry-journal"),
    # A user's root outside the checkout: modules from a tagged clone, their processor packaged by
    # `serverless-retry package` (tests/integration/outside_stack.py). x20: 6 x 30 s visibility.
    StackSpec("outside", "outside_stack", "", clock_scale=20.0, directory="outside/infra", applier="tests.integration.outside_stack:OutsideStack"),
    # modules/self-healing with the source's on_failure = "s3": records over 256 KiB redriven from S3.
    # x10: the default policy's first retry waits 10 logical s (1 real s) in a one-time schedule.
    StackSpec("selfheal-large", "selfheal_large_stack", "tests/integration/fixtures/selfheal-large/src/selfheal_large", clock_scale=10.0, directory="tests/integration/fixtures/selfheal-large", package="selfheal-large"),
    # The three patterns, each with an archive on its terminal queues; one zip for all their handlers
    # (tests/integration/archive_patterns_stack.py). Its tests jump the clock past the queues' 14-day
    # retention and do not turn it back: the stack is theirs alone.
    StackSpec("archive-patterns", "archive_patterns_stack", "", clock_scale=10.0, directory="tests/integration/fixtures/archive-patterns", applier="tests.integration.archive_patterns_stack:ArchivePatternsStack"),
)  # fmt: skip
BY_FIXTURE = {spec.fixture: spec for spec in STACKS}


@dataclass(frozen=True)
class Applied:
    spec: StackSpec
    emulator: Emulator
    directory: Path
    variables: dict[str, Any]
    outputs: dict[str, Any]
    second_plan: subprocess.CompletedProcess[str]

    def client(self, service: str, **kwargs: Any) -> Any:
        return boto3.client(service, **self.emulator.client_kwargs(), **kwargs)  # type: ignore[call-overload]

    def to_json(self) -> dict[str, Any]:
        """What another process needs to use this stack (``from_json``): the emulator stays here."""
        clock = self.emulator.clock
        return {
            "emulator": {
                "url": self.emulator.url,
                "region": self.emulator.region,
                "clock_epoch": clock.epoch,
                "clock_scale": clock.scale,
                "clock_file": str(getattr(clock, "path", "")) or None,
                "patches": self.emulator.applied_patches,
            },
            "directory": str(self.directory),
            "variables": self.variables,
            "outputs": self.outputs,
            "second_plan": {
                "args": list(self.second_plan.args),
                "returncode": self.second_plan.returncode,
                "stdout": self.second_plan.stdout,
                "stderr": self.second_plan.stderr,
            },
        }

    @classmethod
    def from_json(cls, spec: StackSpec, data: dict[str, Any]) -> Applied:
        plan = data["second_plan"]
        return cls(
            spec,
            Emulator.attach(data["emulator"].pop("url"), **data["emulator"]),
            Path(data["directory"]),
            data["variables"],
            data["outputs"],
            subprocess.CompletedProcess(plan["args"], plan["returncode"], plan["stdout"], plan["stderr"]),
        )


def group(spec: StackSpec) -> str:
    """The xdist group of every test that uses ``spec``'s stack."""
    return f"stack-{spec.name}"


def used_after(request: pytest.FixtureRequest, spec: StackSpec) -> bool:
    """Whether a test that runs after ``request``'s module in this session uses ``spec``'s stack: a
    module that changed the stack must restore it then, and need not otherwise (the run's end
    discards it). The stack's tests all run on one worker, in collection order (tests/conftest.py),
    so the session's later items are exactly those that will still look at it."""
    items = request.session.items
    here = Path(str(request.node.fspath))
    last = max((i for i, item in enumerate(items) if Path(str(item.fspath)) == here), default=len(items))
    return any(spec.fixture in getattr(item, "fixturenames", ()) for item in items[last + 1 :])


class SharedStack:
    """One spec applied in a background thread to its own emulator; ``result()`` waits for it."""

    def __init__(self, spec: StackSpec, terraform: Terraform, tmp: Path, publish: Path | None = None) -> None:
        self.spec = spec
        self._terraform = terraform
        self._tmp = tmp
        self._publish = publish  # where xdist workers read the outcome (None: this process only)
        self._emulator = Emulator(log_path=tmp / "emulator.log", clock_scale=spec.clock_scale)
        self._thread: threading.Thread | None = None
        self._applied: Applied | None = None
        self._error: BaseException | None = None
        self._lock = threading.Lock()

    def start(self) -> None:
        with self._lock:
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name=f"apply-{self.spec.name}", daemon=True)
                self._thread.start()

    def ended(self) -> bool:
        return self._thread is not None and not self._thread.is_alive()

    def result(self, timeout: float = 900) -> Applied:
        self.start()
        assert self._thread is not None
        self._thread.join(timeout)
        if self._thread.is_alive():
            raise AssertionError(f"applying {self.spec.root} took longer than {timeout:.0f} s")
        if self._error is not None:
            raise AssertionError(f"applying {self.spec.root} failed: {self._error}") from self._error
        assert self._applied is not None
        return self._applied

    def close(self) -> None:
        # Stopping the emulator first ends an apply still running (nobody is waiting for it).
        self._emulator.stop()
        if self._thread is not None:
            self._thread.join(120)

    def _package(self) -> Path:
        zip_name = self.spec.package or self.spec.name
        built = ROOT / "dist" / "examples" / f"{zip_name}.zip"
        out = self._tmp / f"{zip_name}.zip"
        if built.is_file():
            # A private copy: a ./build.sh package elsewhere must not change the zip under an apply.
            shutil.copyfile(built, out)
            return out
        subprocess.run(
            [sys.executable, "scripts/build_package.py", "--extra", self.spec.source, "--out", str(out)],
            cwd=ROOT, check=True, timeout=600, capture_output=True,
        )  # fmt: skip
        return out

    def _run(self) -> None:
        try:
            self._applied = self._apply()
        except BaseException as exc:  # reported to every test that asks for the stack
            self._error = exc
        if self._publish is not None:
            outcome = (
                self._applied.to_json() if self._applied else {"error": f"{self._error!r}\n{self._error}"}
            )
            # Written whole, then renamed: a waiting worker never reads half a file.
            partial = self._publish.with_suffix(".partial")
            partial.write_text(json.dumps(outcome), encoding="utf-8")
            partial.rename(self._publish)

    def _apply(self) -> Applied:
        # The same layout as the repository, so a root's relative module sources resolve.
        roots = () if self.spec.root.startswith("examples/") else (self.spec.root,)
        for relative in ("modules", "examples", *roots):
            shutil.copytree(ROOT / relative, self._tmp / relative, ignore=ignore_state)
        directory = self._tmp / self.spec.root
        package = self._package()
        self._emulator.start()
        # As `serverless-retry local apply` points a root at the emulator: the examples' endpoint
        # variables, with AWS_ENDPOINT_URL in Terraform's environment (``_deploy``) instead of the
        # provider's endpoints block (~2 s of CPU each time the provider is configured).
        pointed = emulator_variables(directory, self._emulator.url)
        variables = {
            **{k: v if isinstance(v, str) else json.dumps(v) for k, v in pointed.items()},
            "package": str(package),
            **self.spec.variables,
        }
        tf_vars = [f"-var={k}={v}" for k, v in variables.items()]
        second_plan, outputs = self._deploy(directory, tf_vars)
        return Applied(self.spec, self._emulator, directory, variables, outputs, second_plan)

    def _deploy(
        self, directory: Path, tf_vars: Sequence[str] = ()
    ) -> tuple[subprocess.CompletedProcess[str], dict[str, Any]]:
        """init, apply, the second plan and the outputs of the root in ``directory`` against this
        stack's (started) emulator: its second plan and its outputs."""
        env = self._emulator.env()
        run = self._terraform.run
        init = terraform_init(self._terraform, directory)
        if init.returncode != 0:
            raise RuntimeError(f"terraform init:\n{init.stdout}\n{init.stderr}")
        # One provider for the apply, the plan after it and the output (conftest.attached_provider).
        with attached_provider(directory, {**self._terraform.env, **env}, niced=False) as attached:
            env = {**env, **attached}
            apply = run(
                ["apply", "-auto-approve", "-no-color", *tf_vars], directory, extra_env=env, timeout=600
            )
            if apply.returncode != 0:
                raise RuntimeError(
                    f"terraform apply:\n{apply.stdout}\n{apply.stderr}\n(log: {self._tmp / 'emulator.log'})"
                )
            # The second plan right after the apply, before any test changes the stack.
            second_plan = run(
                ["plan", "-detailed-exitcode", "-no-color", *tf_vars], directory, extra_env=env, timeout=300
            )
            output = run(["output", "-json"], directory, extra_env=env)
        return second_plan, {k: v["value"] for k, v in json.loads(output.stdout).items()}


class Registry:
    """The stacks of one pytest process (the only one, or the xdist controller), each started at
    most once; with ``publish`` set, each outcome is also written where xdist workers read it."""

    def __init__(self) -> None:
        self._stacks: dict[str, SharedStack] = {}
        self._lock = threading.Lock()
        self._tmp: Path | None = None
        self._terraform: Terraform | None = None
        self._publish = False

    def directory(self, *, publish: bool = False) -> Path:
        with self._lock:
            self._publish = self._publish or publish
            if self._tmp is None:
                self._tmp = Path(tempfile.mkdtemp(prefix="serverless-retry-stacks-"))
            return self._tmp

    def get(self, spec: StackSpec) -> SharedStack:
        tmp = self.directory()
        with self._lock:
            if spec.name not in self._stacks:
                if self._terraform is None:
                    self._terraform = Terraform(terraform_env(), niced=False)
                (tmp / spec.name).mkdir()
                publish = tmp / f"{spec.name}.json" if self._publish else None
                kind: type[SharedStack] = SharedStack
                if spec.applier is not None:
                    module, _, name = spec.applier.partition(":")
                    kind = getattr(importlib.import_module(module), name)
                self._stacks[spec.name] = kind(spec, self._terraform, tmp / spec.name, publish)
            return self._stacks[spec.name]

    def applied(self, name: str) -> bool:
        """Whether stack ``name`` was started and its apply has ended (applied or failed): its tests
        would not wait for it."""
        with self._lock:
            stack = self._stacks.get(name)
        return stack is not None and stack.ended()

    def start(self, specs: list[StackSpec]) -> None:
        if shutil.which("terraform") is None:
            return
        for spec in specs:
            self.get(spec).start()

    def close(self) -> None:
        with self._lock:
            stacks, self._stacks = list(self._stacks.values()), {}
            tmp, self._tmp = self._tmp, None
        for stack in stacks:
            stack.close()
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)


def attach(spec: StackSpec, directory: Path, timeout: float = 900) -> Applied:
    """In an xdist worker: the stack the controller applies, once it has written its outcome."""
    published = directory / f"{spec.name}.json"
    deadline = time.monotonic() + timeout
    while not published.exists():
        if time.monotonic() > deadline:
            raise AssertionError(f"applying {spec.root} took longer than {timeout:.0f} s (no {published})")
        time.sleep(0.5)
    outcome = json.loads(published.read_text(encoding="utf-8"))
    if "error" in outcome:
        raise AssertionError(f"applying {spec.root} failed: {outcome['error']}")
    return Applied.from_json(spec, outcome)


REGISTRY = Registry()
