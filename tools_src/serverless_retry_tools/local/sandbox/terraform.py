"""Drive the terraform CLI against the local emulator: init, apply, plan, output, destroy.

Plain subprocess rather than a wrapper library: python-terraform (the usual one) breaks on current
Terraform (``-force`` on destroy, an approval prompt on apply), and we need only five commands.

The root directory is never written to except for Terraform's own ``.terraform.lock.hcl``: the
working data (``TF_DATA_DIR``) and the state (``-state``) live in ``work_dir``, so the demo, the
tests and a user's ``terraform`` in the same root do not collide. The CLI configuration follows
``scripts/tf-env.sh``: when the offline provider mirror exists (``SERVERLESS_RETRY_TF_MIRROR``,
default ``/opt/tf-plugins``) and no ``TF_CLI_CONFIG_FILE`` is set, a config using it is written.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = [
    "Terraform",
    "TerraformError",
    "cli_environment",
    "declared_variables",
    "emulator_environment",
    "emulator_variables",
]

_VARIABLE = re.compile(r'^\s*variable\s+"([^"]+)"', re.MULTILINE)
Printer = Callable[[str], None]


class TerraformError(RuntimeError):
    """A terraform command failed; the message ends with the tail of its output."""


def declared_variables(root: Path) -> set[str]:
    """Names of the input variables a root declares (to pass only those it accepts)."""
    names: set[str] = set()
    for path in root.glob("*.tf"):
        names.update(_VARIABLE.findall(path.read_text(encoding="utf-8", errors="replace")))
    return names


def emulator_variables(root: Path, url: str) -> dict[str, Any]:
    """The variables that point ``root`` at the emulator at ``url``, of those it declares (the
    examples declare both): ``aws_endpoint_url``, and ``aws_endpoint_url_in_environment`` because
    Terraform runs here with AWS_ENDPOINT_URL=url (``emulator_environment``). The provider then gets
    no endpoints block, which AWS provider 5.x checks at ~2 s of CPU each time it is configured."""
    declared = declared_variables(root)
    wanted: dict[str, Any] = {"aws_endpoint_url": url, "aws_endpoint_url_in_environment": True}
    return {name: value for name, value in wanted.items() if name in declared}


def cli_environment(work_dir: Path, base: Mapping[str, str] | None = None) -> dict[str, str]:
    """Environment for terraform: scripts/tf-env.sh's logic, for when the CLI is run directly."""
    env = dict(os.environ if base is None else base)
    env.setdefault("TF_IN_AUTOMATION", "1")
    env.setdefault("CHECKPOINT_DISABLE", "1")
    cache = Path(env.get("TF_PLUGIN_CACHE_DIR") or work_dir.parent / "plugin-cache")
    cache.mkdir(parents=True, exist_ok=True)
    env["TF_PLUGIN_CACHE_DIR"] = str(cache)
    configured = env.get("TF_CLI_CONFIG_FILE")
    if configured and Path(configured).is_file():
        return env
    env.pop("TF_CLI_CONFIG_FILE", None)
    mirror = Path(env.get("SERVERLESS_RETRY_TF_MIRROR", "/opt/tf-plugins"))
    if mirror.is_dir():
        rc = work_dir / "terraformrc"
        rc.parent.mkdir(parents=True, exist_ok=True)
        rc.write_text(
            "provider_installation {\n"
            f'  filesystem_mirror {{\n    path    = "{mirror}"\n'
            '    include = ["registry.terraform.io/hashicorp/*"]\n  }\n'
            '  direct {\n    exclude = ["registry.terraform.io/hashicorp/*"]\n  }\n}\n'
        )
        env["TF_CLI_CONFIG_FILE"] = str(rc)
    return env


def emulator_environment(work_dir: Path, emulator: Mapping[str, str]) -> dict[str, str]:
    """Environment for terraform against the local emulator: the caller's without any ``AWS_*``
    setting (no real credentials, profile or endpoint leak in), plus the emulator's."""
    base = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    return cli_environment(work_dir, {**base, **emulator})


@dataclass
class Terraform:
    root: Path
    work_dir: Path
    env: dict[str, str]
    printer: Printer | None = None
    timeout_seconds: float = 600.0
    # Another run's state file and TF_DATA_DIR (a running sandbox's, from its ready file); default
    # under work_dir.
    state_file: Path | None = None
    data_dir: Path | None = None

    def __post_init__(self) -> None:
        if shutil.which("terraform", path=self.env.get("PATH")) is None:
            raise TerraformError(
                "terraform is not on PATH (https://developer.hashicorp.com/terraform/install)"
            )
        self.work_dir.mkdir(parents=True, exist_ok=True)
        self.env = {**self.env, "TF_DATA_DIR": str(self.data_dir or self.work_dir / ".terraform")}
        self.state = self.state_file or self.work_dir / "terraform.tfstate"
        self.timings: dict[str, float] = {}

    def settings(self) -> dict[str, str]:
        """The environment a second terraform run on the same state needs: TF_DATA_DIR, and the CLI
        configuration and plugin cache when set."""
        names = ("TF_DATA_DIR", "TF_CLI_CONFIG_FILE", "TF_PLUGIN_CACHE_DIR")
        return {name: self.env[name] for name in names if self.env.get(name)}

    def _run(
        self, command: str, *args: str, ok_codes: tuple[int, ...] = (0,)
    ) -> subprocess.CompletedProcess[str]:
        log = self.work_dir / f"{command}.log"
        started = time.monotonic()
        with log.open("w", encoding="utf-8") as fh:
            proc = subprocess.Popen(
                ["terraform", f"-chdir={self.root}", command, "-no-color", *args],
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                env=self.env,
                text=True,
            )
            lines: list[str] = []
            assert proc.stdout is not None
            for line in proc.stdout:
                fh.write(line)
                lines.append(line)
                if self.printer is not None and _worth_showing(line):
                    self.printer(line.rstrip())
            try:
                code = proc.wait(timeout=max(1.0, self.timeout_seconds - (time.monotonic() - started)))
            except subprocess.TimeoutExpired:
                proc.kill()
                raise TerraformError(f"terraform {command} timed out; see {log}") from None
        self.timings[command] = self.timings.get(command, 0.0) + time.monotonic() - started
        output = "".join(lines)
        if code not in ok_codes:
            raise TerraformError(f"terraform {command} failed (exit {code}); see {log}\n{output[-3000:]}")
        return subprocess.CompletedProcess(proc.args, code, output, "")

    @staticmethod
    def _var_args(variables: Mapping[str, Any]) -> list[str]:
        out = []
        for name, value in variables.items():
            text = value if isinstance(value, str) else json.dumps(value)
            out.append(f"-var={name}={text}")
        return out

    def init(self) -> None:
        self._run("init", "-input=false")

    def apply(self, variables: Mapping[str, Any]) -> None:
        self._run(
            "apply", "-auto-approve", "-input=false", f"-state={self.state}", *self._var_args(variables)
        )

    def plan_is_empty(self, variables: Mapping[str, Any]) -> tuple[bool, str]:
        """(no changes?, plan output) via ``-detailed-exitcode``."""
        result = self._run(
            "plan",
            "-detailed-exitcode",
            "-input=false",
            f"-state={self.state}",
            *self._var_args(variables),
            ok_codes=(0, 2),
        )
        return result.returncode == 0, result.stdout

    def outputs(self) -> dict[str, Any]:
        result = self._run("output", "-json", f"-state={self.state}")
        return {k: v.get("value") for k, v in json.loads(result.stdout or "{}").items()}

    def destroy(self, variables: Mapping[str, Any], *, refresh: bool = True) -> None:
        """``refresh=False`` trusts the state (the emulator is ours and is about to go): ~10 s less."""
        flags = [] if refresh else ["-refresh=false"]
        self._run(
            "destroy",
            "-auto-approve",
            "-input=false",
            *flags,
            f"-state={self.state}",
            *self._var_args(variables),
        )


def _worth_showing(line: str) -> bool:
    text = line.strip()
    return (
        text.startswith(("Apply complete", "Destroy complete", "Error", "Plan:", "No changes"))
        or "Creation complete" in text
        or "Destruction complete" in text
    )
