"""``pip install`` done by uv, with pip's own configuration (used by build.sh).

    python scripts/uv_install.py --uv .venv/bin/uv --python .venv/bin/python -- -e ".[dev]"

uv installs a fresh .venv in ~4 s where pip takes ~20 s of one busy core (resolving and unpacking
~100 wheels), the largest step before the first test of a fresh clone. But uv does not read pip's
configuration (pip.conf files, PIP_* variables), and a machine's package index, wheel directories,
constraints and certificates live there. So this reads them with ``pip config list`` and passes each
one uv's way. A setting it cannot carry over exactly exits 3 without installing anything, and
build.sh then installs with pip, as before: uv is a shortcut, never a different install.

Standard library only: it runs before anything is installed.
"""

from __future__ import annotations

import argparse
import ast
import os
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

UNTRANSLATABLE = 3
# Precedence for `pip install`: the [global] section, then [install], then PIP_* variables.
_SCOPES = ("global", "install", ":env:")
# Settings about pip's own output and habits: nothing about what gets installed from where.
_IGNORED = frozenset(
    {
        "disable-pip-version-check",
        "no-compile",
        "compile",
        "progress-bar",
        "quiet",
        "verbose",
        "no-cache-dir",
        "cache-dir",
        "root-user-action",
        "no-color",
        "no-input",
        "retries",
        "require-virtualenv",
        "python-version-check",
    }
)
_LISTS = {"extra-index-url": "--extra-index-url", "find-links": "--find-links", "constraint": "--constraint"}


class Untranslatable(ValueError):
    """A pip setting that uv would not honour the same way."""


@dataclass
class UvCall:
    options: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)


def parse_config_list(text: str) -> dict[str, str]:
    """``pip config list`` output (``scope.key='value'`` lines) as key -> value for `pip install`,
    the higher scope winning."""
    found: dict[tuple[int, str], str] = {}
    for line in text.splitlines():
        name, sep, raw = line.partition("=")
        if not sep:
            continue
        scope, _, key = name.rpartition(".")
        if scope not in _SCOPES:
            continue  # another command's section, e.g. [freeze]
        value = ast.literal_eval(raw.strip())
        found[(_SCOPES.index(scope), key.replace("_", "-"))] = str(value)
    merged: dict[str, str] = {}
    for (_, key), value in sorted(found.items()):
        merged[key] = value
    return merged


def translate(config: Mapping[str, str]) -> UvCall:
    """uv's options and environment for pip's ``config``; Untranslatable for anything else."""
    call = UvCall(options=["--index-strategy", "unsafe-best-match"])  # pip weighs all indexes alike
    for key, value in config.items():
        if key in _IGNORED:
            continue
        if key == "index-url":
            call.options += ["--index-url", value]
        elif key == "no-index":
            if value.lower() in ("1", "true", "yes", "on"):
                call.options.append("--no-index")
        elif key in _LISTS:
            for item in value.split():
                call.options += [_LISTS[key], item]
        elif key == "trusted-host":
            for host in value.split():
                call.options += ["--allow-insecure-host", host]
        elif key == "cert":
            call.env["SSL_CERT_FILE"] = value
        elif key in ("timeout", "default-timeout"):
            call.env["UV_HTTP_TIMEOUT"] = str(int(float(value)))
        elif key == "proxy":
            call.env["HTTPS_PROXY"] = call.env["HTTP_PROXY"] = value
        else:
            raise Untranslatable(f"pip setting {key}={value!r}")
    return call


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--uv", required=True, help="the uv executable")
    parser.add_argument("--python", required=True, help="the virtualenv's Python to install into")
    parser.add_argument(
        "--config-from",
        default=sys.executable,
        help="the Python whose pip reads the configuration (default: this one; the target may have no pip)",
    )
    parser.add_argument("args", nargs="+", help="what to install, as pip's arguments (after --)")
    args = parser.parse_args(argv)
    listed = subprocess.run(
        [args.config_from, "-m", "pip", "config", "list"], capture_output=True, text=True, check=False
    )
    if listed.returncode != 0:
        print(f"uv_install: pip config list failed: {listed.stderr.strip()}", file=sys.stderr)
        return UNTRANSLATABLE
    try:
        call = translate(parse_config_list(listed.stdout))
    except (Untranslatable, ValueError, SyntaxError) as exc:
        print(f"uv_install: installing with pip instead: {exc}", file=sys.stderr)
        return UNTRANSLATABLE
    command = [args.uv, "pip", "install", "--quiet", "--python", args.python, *call.options, *args.args]
    return subprocess.run(command, env={**os.environ, **call.env}, check=False).returncode


if __name__ == "__main__":
    sys.exit(main())
