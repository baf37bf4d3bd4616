"""The ready file of a running sandbox (``serverless-retry local --ready-file``); the environment
that talks to an emulator and the atomic write are the emulator's contract
(:mod:`serverless_retry_tools.local.emulator_contract`), since its child writes a ready file too.

A script waits for the file, then reads everything it needs from it: where the emulator listens and
in which region, the root's outputs, the clock, and how the root was applied (its state file,
``TF_DATA_DIR``, the Terraform CLI configuration, the variables), so that ``serverless-retry local
apply`` re-applies a changed root to the running sandbox without guessing any of them.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, NotRequired, TypedDict

from serverless_retry_tools.local.emulator_contract import talk_environment

if TYPE_CHECKING:
    from serverless_retry_tools.local.emulator.emulator import Emulator
    from serverless_retry_tools.local.sandbox.terraform import Terraform

__all__ = [
    "ReadyFileError",
    "SandboxInfo",
    "TerraformInfo",
    "read_ready_file",
    "sandbox_info",
]


class TerraformInfo(TypedDict):
    """How the sandbox applied its root: what a second apply must reuse."""

    root: str
    state: str
    variables: dict[str, Any]
    env: dict[str, str]  # TF_DATA_DIR, TF_CLI_CONFIG_FILE (when one is used), TF_PLUGIN_CACHE_DIR


class SandboxInfo(TypedDict):
    """The ready file's JSON."""

    endpoint: str
    region: str
    state: str  # the Terraform state file (also in ``terraform``), for a person reading the file
    outputs: dict[str, Any]
    clock: dict[str, float]
    work_dir: str
    pid: int
    terraform: TerraformInfo
    talk: NotRequired[str]  # the environment line that talks to the emulator


class ReadyFileError(RuntimeError):
    """The ready file is missing, unreadable, or names a sandbox that is no longer running."""


def sandbox_info(
    emulator: Emulator, tf: Terraform, variables: dict[str, Any], outputs: dict[str, Any], work_dir: Path
) -> SandboxInfo:
    """The ready file of a sandbox run by this process: ``emulator``, with ``tf``'s root applied."""
    return {
        "endpoint": emulator.url,
        "region": emulator.region,
        "state": str(tf.state),
        "outputs": outputs,
        "clock": {"epoch": emulator.clock.epoch, "scale": emulator.clock.scale},
        "work_dir": str(work_dir),
        "pid": os.getpid(),
        "terraform": {
            "root": str(tf.root),
            "state": str(tf.state),
            "variables": dict(variables),
            "env": tf.settings(),
        },
        "talk": talk_environment(emulator.url, emulator.region),
    }


def _running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process: it exists
        return True
    return True


def read_ready_file(path: Path) -> SandboxInfo:
    """The running sandbox's ready file; ``ReadyFileError`` when it is missing, was not written by
    ``serverless-retry local`` or names a process that has ended."""
    try:
        info = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ReadyFileError(
            f"{path} does not exist: start the sandbox with serverless-retry local --root DIR "
            f"--ready-file {path}, and wait until it writes the file"
        ) from None
    except (OSError, ValueError) as exc:
        raise ReadyFileError(f"cannot read {path}: {exc}") from None
    missing = [
        k for k in ("endpoint", "region", "pid", "terraform") if not isinstance(info, dict) or k not in info
    ]
    if missing:
        raise ReadyFileError(
            f"{path} is not the ready file of serverless-retry local (no {', '.join(missing)})"
        )
    if not _running(int(info["pid"])):
        raise ReadyFileError(f"the sandbox of {path} (pid {info['pid']}) is no longer running")
    result: SandboxInfo = info
    return result
