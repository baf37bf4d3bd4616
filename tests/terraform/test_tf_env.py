"""scripts/tf-env.sh's Go runtime settings for Terraform and the provider: set for our own runs, and
never over a value the caller chose."""

from __future__ import annotations

import os
import subprocess

from tests.terraform.conftest import ROOT

SCRIPT = ROOT / "scripts" / "tf-env.sh"


def _sourced(env: dict[str, str], *names: str) -> list[str]:
    script = 'source "$1" >/dev/null && printf "%s\\n" ' + " ".join(f'"${{{n}-unset}}"' for n in names)
    out = subprocess.run(
        ["bash", "-c", script, "tf-env", str(SCRIPT)],
        env=env,
        capture_output=True,
        text=True,
        check=True,
        timeout=30,
    )
    return out.stdout.splitlines()


def test_garbage_collection_is_tuned_with_a_memory_cap() -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("GOGC", "GOMEMLIMIT")}
    assert _sourced(env, "GOGC", "GOMEMLIMIT") == ["400", "1GiB"]


def test_the_callers_go_settings_win() -> None:
    env = {**os.environ, "GOGC": "150", "GOMEMLIMIT": "512MiB"}
    assert _sourced(env, "GOGC", "GOMEMLIMIT") == ["150", "512MiB"]
