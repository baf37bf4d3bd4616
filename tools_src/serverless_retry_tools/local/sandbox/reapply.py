"""``serverless-retry local apply``: apply a changed root to a running ``serverless-retry local``.

The fix step of native retry: the sandbox keeps polling while the corrected code is deployed, and the
messages waiting in its queues meet the fix. Everything comes from the sandbox's ready file (its
state file, ``TF_DATA_DIR``, Terraform CLI configuration and variables): the same state, so Terraform
changes what differs instead of creating a second copy, and the same provider installation. The ready
file is then updated (variables, root, outputs), so the sandbox destroys what is deployed at exit.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from serverless_retry_tools.local.emulator_contract import FAKE_CREDENTIALS, write_json_atomically
from serverless_retry_tools.local.sandbox.ready_file import SandboxInfo, read_ready_file
from serverless_retry_tools.local.sandbox.terraform import Terraform, emulator_environment, emulator_variables

__all__ = ["apply_to_sandbox"]


def apply_to_sandbox(
    ready_file: Path,
    *,
    root: Path | None = None,
    overrides: Mapping[str, Any] | None = None,
    printer: Callable[[str], None] | None = None,
) -> SandboxInfo:
    """Init and apply ``root`` (default: the root the sandbox applied) with the sandbox's variables
    and ``overrides`` to the sandbox of ``ready_file``; returns the updated ready file's contents.
    Raises ``ReadyFileError`` (no running sandbox) or ``TerraformError``."""
    info = read_ready_file(ready_file)
    recorded = info["terraform"]
    chosen = (root or Path(recorded["root"])).resolve()
    variables: dict[str, Any] = {**recorded["variables"], **(overrides or {})}
    variables.update(emulator_variables(chosen, info["endpoint"]))
    state = Path(recorded["state"])
    emulator = {
        **FAKE_CREDENTIALS,
        "AWS_ENDPOINT_URL": info["endpoint"],
        "AWS_REGION": info["region"],
        "AWS_DEFAULT_REGION": info["region"],
    }
    logs = state.parent / "reapply"  # this command's logs, beside the sandbox's own
    data_dir = recorded["env"].get("TF_DATA_DIR")
    tf = Terraform(
        chosen,
        logs,
        emulator_environment(logs, {**emulator, **recorded["env"]}),
        printer=printer,
        state_file=state,
        data_dir=Path(data_dir) if data_dir else None,
    )
    tf.init()
    tf.apply(variables)
    updated: SandboxInfo = {
        **info,
        "outputs": tf.outputs(),
        "terraform": {**recorded, "root": str(chosen), "variables": variables},
    }
    write_json_atomically(ready_file, updated)
    return updated
