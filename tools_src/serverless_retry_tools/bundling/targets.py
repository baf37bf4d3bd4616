"""The Lambda runtimes a package is built for, and the wheels each can load."""

from __future__ import annotations

import re
from dataclasses import dataclass

# The Python runtimes the modules accept, each with the newest glibc minor its OS has: python3.11 runs
# on Amazon Linux 2 (glibc 2.26), python3.12 and python3.13 on Amazon Linux 2023 (glibc 2.34).
RUNTIMES = {"3.11": 26, "3.12": 34, "3.13": 34}
# Lambda's architecture names, and the machine names wheels use for them.
ARCHITECTURES = {"x86_64": "x86_64", "arm64": "aarch64"}
# What a package is built for unless told: the modules' defaults (``runtime = "python3.12"``,
# ``architectures = ["arm64"]`` in modules/consumer/variables.tf; a test reads them from there), so a
# zip built with no options runs on a function deployed with none.
DEFAULT_PYTHON = "3.12"
DEFAULT_ARCH = "arm64"


class TargetError(ValueError):
    """A Python version or architecture Lambda does not run."""


@dataclass(frozen=True, order=True)
class Target:
    python: str  # "3.12"
    machine: str  # "x86_64" or "aarch64", as in wheel tags

    @property
    def label(self) -> str:
        arch = next(name for name, machine in ARCHITECTURES.items() if machine == self.machine)
        return f"python{self.python} {arch}"


def parse_python(value: str) -> str:
    """A runtime's Python, "3.12" or "python3.12", as "3.12"; anything else is an error naming what
    Lambda runs."""
    match = re.fullmatch(r"(?:python)?(3\.\d+)", value.strip())
    if match is None or match.group(1) not in RUNTIMES:
        allowed = ", ".join(RUNTIMES)
        raise TargetError(f"Python version {value!r}: Lambda runtimes supported here are {allowed}")
    return match.group(1)


def parse_arch(value: str) -> str:
    """A Lambda architecture (x86_64, arm64; aarch64 accepted) -> the wheels' machine name."""
    name = "arm64" if value == "aarch64" else value
    if name not in ARCHITECTURES:
        raise TargetError(f"architecture {value!r}: Lambda runs x86_64 or arm64")
    return ARCHITECTURES[name]


def platform_tags(machine: str, glibc_minor: int) -> list[str]:
    """Every manylinux tag a system with glibc 2.<glibc_minor> loads, newest first: pip's --platform
    takes tags literally, it does not widen manylinux_2_34 to the older tags that also run there."""
    tags = [f"manylinux_2_{minor}_{machine}" for minor in range(glibc_minor, 16, -1)]
    return [*tags, f"manylinux2014_{machine}"]


def pip_target_args(target: Target) -> list[str]:
    """pip's options choosing wheels for ``target``'s runtime, not for the machine that builds."""
    platforms = [
        arg for tag in platform_tags(target.machine, RUNTIMES[target.python]) for arg in ("--platform", tag)
    ]
    return [
        *platforms,
        "--implementation",
        "cp",
        "--python-version",
        target.python,
        "--only-binary=:all:",
    ]
