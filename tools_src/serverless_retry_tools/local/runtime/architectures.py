"""Which machine a function's compiled code is built for, and what the emulator must do about it.

Lambda runs a function on the instruction set its ``Architectures`` names (x86_64 or arm64; AWS's
"Selecting and configuring an instruction set architecture for your Lambda function" page), and a
compiled extension in its zip or layers loads only when it is built for that machine. The emulator
runs on whatever this host is. So for each compiled extension module in a code tree this reads the
machine of every build of it (the ELF header's ``e_machine``; the file name's ``-aarch64-linux-gnu``
when the file is not ELF), finds the distribution that owns it (``*.dist-info``: ``RECORD``, else
``top_level.txt``), and :func:`plan` decides:

- built for the declared machine but not the host's: the emulator substitutes the host's build of
  that distribution (:mod:`serverless_retry_tools.local.runtime.host_builds`), since on AWS it would load;
- not built for the declared machine: on AWS it would not load. The emulator says so and changes
  nothing (it does not fake AWS's failure when the host can load it, nor hide it when it cannot).
"""

from __future__ import annotations

import csv
import platform
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from email.parser import HeaderParser
from pathlib import Path

__all__ = [
    "LAMBDA_MACHINES",
    "Distribution",
    "Plan",
    "declared_machine",
    "elf_machine",
    "host_machine",
    "plan",
    "scan",
]

# Lambda's architecture names -> the machine names wheels and Python's extension suffixes use.
LAMBDA_MACHINES = {"x86_64": "x86_64", "arm64": "aarch64"}
_LAMBDA_NAMES = {machine: name for name, machine in LAMBDA_MACHINES.items()}
# ELF e_machine values (the System V ABI's registry) of the machines Lambda runs, and a few others
# a wheel may carry, so a report names them rather than a number.
_ELF_MACHINES = {62: "x86_64", 183: "aarch64", 3: "i686", 40: "armv7l", 21: "ppc64le", 22: "s390x"}
_SUFFIX_MACHINE = re.compile(r"-(x86_64|aarch64|i686|armv7l|ppc64le|s390x)-linux-gnu\.so$")
_EXTENSION = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)\..*\.so$|^([A-Za-z_][A-Za-z0-9_]*)\.so$")
_ELF_MAGIC = b"\x7fELF"


def host_machine() -> str:
    """This host's machine as wheels name it (macOS reports arm64, Windows AMD64)."""
    machine = platform.machine().lower()
    return {"amd64": "x86_64", "arm64": "aarch64"}.get(machine, machine)


def declared_machine(architectures: Sequence[str]) -> str:
    """The machine a function declaring ``Architectures`` runs on (Lambda's default is x86_64)."""
    name = architectures[0] if architectures else "x86_64"
    return LAMBDA_MACHINES.get(name, name)


def elf_machine(path: Path) -> str | None:
    """The machine an ELF file is built for, from its header; the file name's tag when it is not
    ELF (None when neither says)."""
    try:
        with path.open("rb") as handle:
            header = handle.read(20)
    except OSError:
        header = b""
    if len(header) == 20 and header[:4] == _ELF_MAGIC:
        number = int.from_bytes(header[18:20], "little" if header[5] == 1 else "big")
        return _ELF_MACHINES.get(number, f"elf-machine-{number}")
    found = _SUFFIX_MACHINE.search(path.name)
    return found.group(1) if found else None


@dataclass(frozen=True)
class Distribution:
    """One installed distribution in a code tree, from its ``.dist-info``."""

    name: str
    version: str
    site: str  # its site directory, relative to the tree ("." for a function zip's root)
    dist_info: str  # the .dist-info directory's name
    tags: tuple[str, ...]  # WHEEL's Tag lines, e.g. cp312-cp312-manylinux_2_26_aarch64
    top_level: tuple[str, ...]  # the top-level names it installs (RECORD, else top_level.txt)

    @property
    def label(self) -> str:
        return f"{self.name} {self.version}"


@dataclass(frozen=True)
class Module:
    """One compiled extension module (all its builds: one file per Python version and machine)."""

    name: str  # relative to the tree, without suffix: "re2/_re2"
    machines: frozenset[str]
    owner: Distribution | None


@dataclass(frozen=True)
class Plan:
    """What the emulator does with one code tree."""

    substitute: tuple[Distribution, ...] = ()  # take the host's build of these
    notes: tuple[str, ...] = ()  # what differs from AWS and is left as it is
    machines: frozenset[str] = field(default_factory=frozenset)  # every machine its extensions target

    def summary(self, declared: str, host: str, where: str) -> str:
        """The one line the emulator logs for a substitution."""
        names = ", ".join(d.label for d in self.substitute)
        arch = _LAMBDA_NAMES.get(declared, declared)
        return (
            f"emulator: {where} holds compiled code for {arch} ({declared}), as the function declares, and this "
            f"host is {host}: running this host's build of {names} in place of the {declared} one, as "
            f"Lambda on {arch} would load that; the rest of the code runs as deployed"
        )


def _record_top_level(dist_info: Path) -> tuple[str, ...]:
    """The top-level names a distribution installed, from its RECORD (a zip built by
    ``serverless-retry package`` leaves RECORD out: then top_level.txt says)."""
    record = dist_info / "RECORD"
    if not record.is_file():
        return ()
    names: set[str] = set()
    with record.open(encoding="utf-8", errors="replace", newline="") as handle:
        for row in csv.reader(handle):
            path = row[0] if row else ""
            first = path.split("/", 1)[0]
            if not first or first.startswith("..") or first.endswith((".dist-info", ".data")):
                continue
            if first in ("__pycache__", "bin"):
                continue
            names.add(first if "/" in path else first.split(".", 1)[0])
    return tuple(sorted(names))


def _distribution(site: str, dist_info: Path) -> Distribution:
    metadata = dist_info / "METADATA"
    headers = None
    if metadata.is_file():
        headers = HeaderParser().parsestr(metadata.read_text(encoding="utf-8", errors="replace"))
    stem = dist_info.name[: -len(".dist-info")]
    guessed_name, _, guessed_version = stem.partition("-")
    wheel = dist_info / "WHEEL"
    tags: tuple[str, ...] = ()
    if wheel.is_file():
        parsed = HeaderParser().parsestr(wheel.read_text(encoding="utf-8", errors="replace"))
        tags = tuple(parsed.get_all("Tag") or ())
    top_level = _record_top_level(dist_info)
    listed = dist_info / "top_level.txt"
    if not top_level and listed.is_file():
        top_level = tuple(sorted(n.strip() for n in listed.read_text().splitlines() if n.strip()))
    return Distribution(
        name=(headers.get("Name") if headers else None) or guessed_name,
        version=(headers.get("Version") if headers else None) or guessed_version,
        site=site,
        dist_info=dist_info.name,
        tags=tags,
        top_level=top_level,
    )


def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "_", name).lower()


def _owner(relative: Path, dists: Iterable[Distribution]) -> Distribution | None:
    first = relative.parts[0].split(".", 1)[0]
    for dist in dists:
        if first in dist.top_level or _normal(first) == _normal(dist.name):
            return dist
    return None


def scan(tree: Path, sites: Sequence[str] = (".",)) -> list[Module]:
    """The compiled extension modules under each site directory of ``tree`` (relative paths; "."
    for a function zip, ``python`` and ``python/lib/pythonX.Y/site-packages`` for a layer's /opt).
    A site directory inside another is scanned for itself only."""
    roots = [(site, tree / site) for site in sites if (tree / site).is_dir()]
    found: dict[str, tuple[set[str], Distribution | None]] = {}
    for site, site_dir in roots:
        nested = [other for _, other in roots if other != site_dir and site_dir in other.parents]
        dists = [_distribution(site, d) for d in sorted(site_dir.glob("*.dist-info")) if d.is_dir()]
        for path in sorted(site_dir.rglob("*.so")):
            if any(n == path or n in path.parents for n in nested) or not path.is_file():
                continue
            relative = path.relative_to(site_dir)
            if relative.parts[0].endswith(".libs"):
                continue  # a wheel's vendored shared libraries go with its extension modules
            match = _EXTENSION.match(path.name)
            machine = elf_machine(path)
            if match is None or machine is None:
                continue
            stem = match.group(1) or match.group(2)
            key = str(Path(site) / relative.parent / stem) if site != "." else str(relative.parent / stem)
            found.setdefault(key, (set(), _owner(relative, dists)))[0].add(machine)
    return [Module(name, frozenset(m), owner) for name, (m, owner) in sorted(found.items())]


def plan(modules: Sequence[Module], *, declared: str, host: str, where: str) -> Plan:
    """What to substitute (built for ``declared`` only, not for ``host``), and what to say."""
    substitute: dict[str, Distribution] = {}
    notes: list[str] = []
    machines = frozenset(m for module in modules for m in module.machines)
    for module in modules:
        of = f"{module.owner.label}'s " if module.owner else ""
        built = "/".join(sorted(module.machines))
        if declared not in module.machines:
            notes.append(
                f"{where}: {of}compiled module {module.name} is built for {built} only but the function "
                f"declares {declared}: on AWS it would not load"
                + (" (it loads here, on this host)" if host in module.machines else "")
            )
        elif host not in module.machines:
            if module.owner is None:
                notes.append(
                    f"{where}: compiled module {module.name} is built for {built}, not for this host "
                    f"({host}), and no .dist-info names it: the emulator cannot supply a host build"
                )
            else:
                substitute[_normal(module.owner.name)] = module.owner
    return Plan(tuple(substitute[k] for k in sorted(substitute)), tuple(notes), machines)
