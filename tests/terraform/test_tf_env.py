"""scripts/tf-env.sh's Go runtime settings for Terraform and the provider: set for our own runs, and
never over a value the caller chose."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

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


def test_the_cli_configuration_is_replaced_whole_and_only_when_it_changes(tmp_path: Path) -> None:
    """Every test process sources the script while other processes' Terraform reads the file: once
    rewritten in place, it was read empty (no mirror), and a workspace's init asked the public
    registry, offline, and failed. A copy of the script in a scratch root writes its own file."""
    script = tmp_path / "scripts" / "tf-env.sh"
    script.parent.mkdir()
    shutil.copyfile(SCRIPT, script)
    rc = tmp_path / "build" / "terraform" / "terraformrc"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TF_", "SERVERLESS_RETRY_TF"))}

    def source(mirror: Path) -> None:
        mirror.mkdir(exist_ok=True)
        out = subprocess.run(
            ["bash", "-c", 'source "$1" && printf "%s" "$TF_CLI_CONFIG_FILE"', "tf-env", str(script)],
            env={**env, "SERVERLESS_RETRY_TF_MIRROR": str(mirror), "TF_PLUGIN_CACHE_DIR": str(tmp_path / "cache")},
            capture_output=True, text=True, check=True, timeout=30,
        )  # fmt: skip
        assert out.stdout == str(rc)

    source(tmp_path / "mirror-a")
    before = tmp_path / "before"
    os.link(rc, before)  # the file a reader holds open
    source(tmp_path / "mirror-a")
    assert os.path.samefile(rc, before)  # unchanged: not written again
    source(tmp_path / "mirror-b")
    assert f'path    = "{tmp_path / "mirror-b"}"' in rc.read_text()
    # Replaced by a rename: what a reader had open still holds the whole previous configuration.
    assert f'path    = "{tmp_path / "mirror-a"}"' in before.read_text()
    assert sorted(p.name for p in rc.parent.iterdir()) == ["terraformrc"]  # no temporary file left
