"""scripts/py-env.sh (sourced by build.sh): our runs cache bytecode under build/pycache, also where
the environment says not to write it beside the sources."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "py-env.sh"


def _sourced(env: dict[str, str]) -> tuple[str, str]:
    out = subprocess.run(
        [
            "bash",
            "-c",
            'source "$1" && printf "%s\\n%s\\n" "${PYTHONPYCACHEPREFIX-unset}" "${PYTHONDONTWRITEBYTECODE-unset}"',
            "py-env",
            str(SCRIPT),
        ],
        env=env,
        capture_output=True,
        text=True,
        check=True,
        timeout=30,
    ).stdout.splitlines()
    return out[0], out[1]


def test_bytecode_is_cached_under_build_even_where_writing_it_was_turned_off() -> None:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPYCACHEPREFIX"}
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    assert _sourced(env) == (str(ROOT / "build" / "pycache"), "unset")


def test_a_callers_cache_prefix_wins() -> None:
    env = {**os.environ, "PYTHONPYCACHEPREFIX": "/tmp/elsewhere"}
    assert _sourced(env)[0] == "/tmp/elsewhere"
