"""Where the tier runs: real AWS, or the local emulator (moto server + the local runtime).

Everything the scenarios, the fidelity checks and the cleanup do goes through a :class:`Target`:
its boto3 clients, the environment and variables Terraform gets, whatever must run for the
deployed functions to be invoked (on AWS, Lambda does it; on the emulator, the local runtime), and
the clock (real on AWS; logical on the emulator, ``scale`` logical seconds per real one).

The gate (:func:`opt_in`) reads the environment and the arguments only; it never calls AWS.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import boto3
from botocore.config import Config

from serverless_retry_tools.local.emulator.emulator import Emulator
from serverless_retry_tools.local.runtime.runtime import Runtime, RuntimeEvent
from serverless_retry_tools.local.sandbox.terraform import (
    cli_environment,
    emulator_environment,
    emulator_variables,
)

__all__ = [
    "OPT_IN_ENV",
    "OPT_IN_VALUE",
    "AwsTarget",
    "EmulatorTarget",
    "Gate",
    "Target",
    "credential_source",
    "opt_in",
]

OPT_IN_ENV = "SERVERLESS_RETRY_AWS_TIER"
OPT_IN_VALUE = "yes"
_REGION = re.compile(r"^[a-z]{2}(-[a-z]+)+-\d$")
# Retried calls: AWS throttles a burst of control-plane calls now and then.
CLIENT_CONFIG = Config(retries={"mode": "standard", "max_attempts": 8})


class Target(Protocol):
    kind: str  # "aws" | "emulator"
    region: str
    scale: float  # logical seconds per real second
    poll_seconds: float  # how often (real seconds) a scenario looks at the queues
    log_delay_seconds: float  # how long (real seconds) log lines may take to be readable

    def client(self, service: str) -> Any: ...

    def terraform_env(self, work_dir: Path) -> dict[str, str]: ...

    def variables(self, root: Path) -> dict[str, Any]: ...

    def start_invoking(self, work_dir: Path) -> None: ...

    def stop_invoking(self) -> None: ...

    def events(self) -> list[RuntimeEvent]: ...

    def log_time_ms(self, stamp_ms: int) -> int:
        """A CloudWatch Logs event's timestamp on the target's clock (the one retries are due on)."""
        ...


@dataclass
class AwsTarget:
    """Real AWS in ``region``, with boto3's default credential chain (Terraform's provider uses the
    same chain: the profile and the environment are passed through)."""

    region: str
    kind: str = "aws"
    scale: float = 1.0
    poll_seconds: float = 10.0
    log_delay_seconds: float = 180.0
    _session: Any = field(default=None, repr=False)

    def __post_init__(self) -> None:
        self._session = boto3.Session(region_name=self.region)

    def client(self, service: str) -> Any:
        return self._session.client(service, config=CLIENT_CONFIG)

    def terraform_env(self, work_dir: Path) -> dict[str, str]:
        # No endpoint override may leak in from the caller: this run is meant for AWS itself.
        base = {k: v for k, v in os.environ.items() if not k.startswith("AWS_ENDPOINT_URL")}
        return cli_environment(
            work_dir, {**base, "AWS_REGION": self.region, "AWS_DEFAULT_REGION": self.region}
        )

    def variables(self, root: Path) -> dict[str, Any]:
        return {"aws_region": self.region}

    def start_invoking(self, work_dir: Path) -> None:
        """Lambda invokes the functions itself."""

    def stop_invoking(self) -> None:
        pass

    def events(self) -> list[RuntimeEvent]:
        return []

    def log_time_ms(self, stamp_ms: int) -> int:
        return stamp_ms  # Lambda stamps log events on AWS's own clock


class EmulatorTarget:
    """The local emulator: started by :meth:`__enter__`, stopped by :meth:`__exit__`; the local
    runtime invokes the functions while a scenario runs."""

    kind = "emulator"
    poll_seconds = 0.5
    log_delay_seconds = 5.0

    def __init__(self, work_dir: Path, *, clock_scale: float = 100.0, region: str = "us-east-1") -> None:
        self.region = region
        self.scale = clock_scale
        self._work_dir = work_dir
        self.emulator = Emulator(region=region, log_path=work_dir / "emulator.log", clock_scale=clock_scale)
        self._runtime: Runtime | None = None
        self._events: list[RuntimeEvent] = []

    def __enter__(self) -> EmulatorTarget:
        self._work_dir.mkdir(parents=True, exist_ok=True)
        self.emulator.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop_invoking()
        self.emulator.stop()

    def client(self, service: str) -> Any:
        return boto3.client(service, config=CLIENT_CONFIG, **self.emulator.client_kwargs())  # type: ignore[call-overload]

    def terraform_env(self, work_dir: Path) -> dict[str, str]:
        return emulator_environment(work_dir, self.emulator.env())

    def variables(self, root: Path) -> dict[str, Any]:
        return {"aws_region": self.region, **emulator_variables(root, self.emulator.url)}

    def start_invoking(self, work_dir: Path) -> None:
        self.stop_invoking()
        self._events = []
        self._runtime = Runtime(
            self.emulator.url, region=self.region, work_dir=work_dir / "runtime", on_event=self._events.append
        )
        self._runtime.start()

    def stop_invoking(self) -> None:
        if self._runtime is not None:
            self._runtime.stop()
            self._runtime = None

    def events(self) -> list[RuntimeEvent]:
        return list(self._events)

    def log_time_ms(self, stamp_ms: int) -> int:
        # The local runtime stamps log events with the wall clock (moto refuses events over 2 hours
        # ahead of it, which logical time soon is), so they are mapped onto the logical clock:
        # epoch + (real - epoch) x scale. While the emulator holds its clock this runs ahead of it,
        # so on the emulator a wait can read longer than it was, never shorter.
        clock = self.emulator.clock
        real = stamp_ms / 1000
        return int((clock.epoch + (real - clock.epoch) * clock.scale) * 1000)


def wait_logical(target: Target, seconds: float) -> None:
    """Sleep ``seconds`` of the target's clock."""
    time.sleep(seconds / target.scale)


def credential_source(*, network: bool) -> str | None:
    """The method of the first credential boto3's default chain resolves, or None.

    ``network=False`` (before the opt-in) leaves out every provider that could make a request or run
    a program (instance and container metadata, SSO, assume-role, credential_process): only the
    environment and the shared files are read."""
    import botocore.session

    session = botocore.session.Session()
    if not network:
        resolver = session.get_component("credential_provider")
        for name in (
            "iam-role",
            "container-role",
            "sso",
            "assume-role",
            "assume-role-with-web-identity",
            "custom-process",
        ):
            try:
                resolver.remove(name)
            except Exception:
                continue
    try:
        credentials = session.get_credentials()
    except Exception:
        return None
    return None if credentials is None else str(getattr(credentials, "method", "unknown"))


@dataclass(frozen=True)
class Gate:
    """Whether the tier may call AWS, and why not."""

    opted_in: bool
    region: str | None
    credentials: str | None
    reasons: tuple[str, ...]

    @property
    def open(self) -> bool:
        return not self.reasons


def opt_in(environ: Mapping[str, str], region: str | None) -> Gate:
    """The opt-in is ``SERVERLESS_RETRY_AWS_TIER=yes`` plus ``--region``, and credentials boto3's
    default chain resolves. Credentials are looked for with network providers only once both are given."""
    reasons = []
    opted = environ.get(OPT_IN_ENV, "") == OPT_IN_VALUE
    if not opted:
        reasons.append(f"{OPT_IN_ENV}={OPT_IN_VALUE} is not set")
    if not region:
        reasons.append("no --region given")
    elif not _REGION.match(region):
        reasons.append(f"--region {region!r} is not a region name such as eu-west-1")
    credentials = credential_source(network=opted and bool(region))
    if credentials is None:
        reasons.append("boto3's default chain finds no credentials (AWS_PROFILE, AWS_ACCESS_KEY_ID, ...)")
    return Gate(opted, region, credentials, tuple(reasons))
