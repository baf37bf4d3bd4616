"""The frame every ``serverless-retry demo`` shares, whatever its example tells.

Timestamped progress lines and the logical-time line; the options every demo takes; one example
applied to a fresh emulator, handed to the demo's story, then destroyed with the emulator stopped;
the runtime run until nothing is in transit; the per-message accounting file. Exit status: 2 when the example or its zip is missing, 1 when
Terraform fails, else what the story returns (0 only when every message is accounted for).
"""

from __future__ import annotations

import json
import shutil
import tempfile
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Self, TextIO

import boto3
from botocore.config import Config

from serverless_retry_tools.local.emulator.emulator import Emulator
from serverless_retry_tools.local.runtime.runtime import Runtime
from serverless_retry_tools.local.sandbox.terraform import (
    Terraform,
    TerraformError,
    emulator_environment,
    emulator_variables,
)

__all__ = [
    "CLIENT_CONFIG",
    "ExampleOptions",
    "ExampleRun",
    "ProgressLines",
    "find_repo_root",
    "logical_duration",
    "logical_line",
    "run_example",
    "run_until_settled",
    "write_accounting",
]

# The demos' own clients: a transient emulator error is retried rather than failing the run.
CLIENT_CONFIG = Config(retries={"mode": "standard", "max_attempts": 5})


def find_repo_root() -> Path:
    """The checkout this package lives in (editable install), else the current directory."""
    here = Path(__file__).resolve()
    for candidate in (*here.parents, Path.cwd()):
        if (candidate / "examples" / "scheduled-retry").is_dir() and (candidate / "modules").is_dir():
            return candidate
    return Path.cwd()


@dataclass
class ExampleOptions:
    """What every demo takes; each demo's options add their own and their own defaults."""

    clock_scale: float = 100.0
    deadline_seconds: float = 150.0
    seed: int = 7
    repo: Path = field(default_factory=find_repo_root)
    work_dir: Path | None = None
    destroy: bool = True

    @classmethod
    def from_args(cls, args: Any, **own: Any) -> Self:
        """The options from ``serverless-retry demo``'s arguments (defaults already filled per
        example), plus the demo's ``own``."""
        options = cls(
            clock_scale=args.clock_scale,
            deadline_seconds=args.deadline,
            seed=args.seed,
            work_dir=Path(args.work_dir) if args.work_dir else None,
            destroy=not args.keep,
            **own,
        )
        if args.repo:
            options.repo = Path(args.repo)
        return options


class ProgressLines:
    """Timestamped progress lines (seconds since the demo started); ``stamp=False`` for the table."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self.started = time.monotonic()
        self.lock = threading.Lock()

    def __call__(self, text: str = "", *, stamp: bool = True) -> None:
        with self.lock:
            prefix = f"[{time.monotonic() - self.started:6.1f}s] " if stamp and text else ""
            print(prefix + text, file=self.stream, flush=True)


def logical_duration(seconds: float) -> str:
    """``12m05s`` or ``1h02m05s``."""
    minutes, secs = divmod(int(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m{secs:02d}s" if hours else f"{minutes}m{secs:02d}s"


def logical_line(seconds: float, *parts: str) -> str:
    """A progress line: the logical time since the workload was sent, then what the demo counts."""
    return " | ".join((f"logical +{logical_duration(seconds)}", *parts))


@dataclass(frozen=True)
class ExampleRun:
    """An example applied to a fresh emulator: what a demo's story gets."""

    emulator: Emulator
    terraform: Terraform
    variables: dict[str, Any]  # as applied; a story may change them and apply again
    outputs: dict[str, Any]
    work_dir: Path
    out: ProgressLines


def run_example(
    example: str,
    options: ExampleOptions,
    out: ProgressLines,
    story: Callable[[ExampleRun], int],
    *,
    variables: Mapping[str, Any] | None = None,
    about: str = "",
    clock_note: str = "",
    applying: str = "",
) -> int:
    """Apply ``examples/<example>`` (with its zip from ``dist/examples``) to a fresh emulator on the
    options' clock, run ``story`` on it, destroy (unless told not to), stop the emulator.

    ``about`` follows the example's name in the first line, ``clock_note`` the clock scale;
    ``applying`` says what the first apply deploys."""
    root = options.repo / "examples" / example
    package = options.repo / "dist" / "examples" / f"{example}.zip"
    if not root.is_dir():
        out(f"error: {root} is missing")
        return 2
    if not package.is_file():
        out(f"error: {package} is missing: run ./build.sh package (./build.sh demo does it for you)")
        return 2
    # Absolute: terraform runs in its own directory and is given paths under this one.
    work_dir = (options.work_dir or Path(tempfile.mkdtemp(prefix="serverless-retry-demo-"))).resolve()
    work_dir.mkdir(parents=True, exist_ok=True)
    out(
        f"serverless-retry demo: examples/{example}{about} on a local AWS emulator; clock "
        f"x{options.clock_scale:g}{clock_note} (work dir {work_dir})"
    )
    status = 1
    with Emulator(log_path=work_dir / "emulator.log", clock_scale=options.clock_scale) as emulator:
        out(
            f"emulator (moto in server mode) at {emulator.url}, clock x{emulator.clock.scale:g}, "
            f"{len(emulator.applied_patches)} patches (compatibility and AWS constraints moto skips)"
        )
        tf = Terraform(
            root,
            work_dir / "terraform",
            emulator_environment(work_dir / "terraform", emulator.env()),
            printer=None,
        )
        # A private copy of the zip: a rebuild of dist/ during the run must not change it mid-apply.
        copy = work_dir / f"{example}.zip"
        shutil.copyfile(package, copy)
        applied = {**emulator_variables(root, emulator.url), "package": str(copy), **(variables or {})}
        outputs: dict[str, Any] = {}
        try:
            tf.init()
            out(
                f"terraform init done; applying{applying} (the AWS provider waits ~25 s on each SQS queue "
                "and policy)"
            )
            tf.apply(applied)
            out(f"terraform apply done in {tf.timings['apply']:.0f} s")
            outputs = tf.outputs()
            status = story(ExampleRun(emulator, tf, applied, outputs, work_dir, out))
        except TerraformError as exc:
            out(f"error: {exc}")
            status = 1
        finally:
            if options.destroy:
                try:
                    _empty_archive(emulator, outputs)
                    tf.destroy(applied, refresh=False)
                    out(f"terraform destroy done in {tf.timings.get('destroy', 0):.0f} s")
                except TerraformError as exc:
                    out(f"warning: {exc}")
    out(f"emulator stopped; total {time.monotonic() - out.started:.0f} s")
    return status


def _empty_archive(emulator: Emulator, outputs: Mapping[str, Any]) -> None:
    """Empty the example's archive bucket (every version: it is versioned) before the destroy: S3
    refuses to delete a bucket that holds anything, and the demo's records live as long as its
    emulator."""
    location = str(outputs.get("archive_location") or "")
    if not location.startswith("s3://"):
        return
    bucket = location.removeprefix("s3://").split("/", 1)[0]
    s3 = boto3.client("s3", config=CLIENT_CONFIG, **emulator.client_kwargs())
    for page in s3.get_paginator("list_object_versions").paginate(Bucket=bucket):
        entries = [
            {"Key": v["Key"], "VersionId": v["VersionId"]}
            for v in [*page.get("Versions", []), *page.get("DeleteMarkers", [])]
        ]
        if entries:  # a page holds at most 1,000 versions: what one DeleteObjects takes
            s3.delete_objects(Bucket=bucket, Delete={"Objects": entries, "Quiet": True})


def run_until_settled(
    runtime: Runtime,
    out: ProgressLines,
    *,
    in_transit: Callable[[], Mapping[str, int]],
    progress: Callable[[Mapping[str, int]], Sequence[str]],
    quiet_checks: int,
    deadline_seconds: float,
    finals: str,
    summary: Callable[[], str],
) -> bool:
    """Start ``runtime`` and run it until ``in_transit`` counts nothing ``quiet_checks`` checks in a
    row (True) or ``deadline_seconds`` pass (False). At most every 3 s a progress line: the logical
    time since the start, then ``progress`` of the last count; at the end whether every one of the
    ``finals`` (messages, deliveries) reached a final place, and the runtime's ``summary``."""
    started = runtime.clock.now()
    runtime.start()
    state = {"quiet": 0, "last": 0.0}

    def settled() -> bool:
        pending = in_transit()
        now = time.monotonic()
        if now - state["last"] >= 3:
            state["last"] = now
            out(logical_line((runtime.clock.now() - started).total_seconds(), *progress(pending)))
        state["quiet"] = state["quiet"] + 1 if not any(pending.values()) else 0
        return state["quiet"] >= quiet_checks

    done = runtime.run(until=settled, deadline_seconds=deadline_seconds, check_every=0.5)
    verdict = (
        f"every {finals} reached a final place" if done else f"deadline of {deadline_seconds:.0f} s passed"
    )
    out(f"{verdict}; runtime: {summary()}")
    return done


def write_accounting(work_dir: Path, rows: Sequence[Mapping[str, Any]]) -> None:
    """The per-message accounting of a run, as JSON beside its logs."""
    (work_dir / "accounting.json").write_text(json.dumps(list(rows), indent=1))
