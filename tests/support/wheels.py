"""Tiny pure-Python wheels written by hand, for pip to install from a --find-links directory offline."""

from __future__ import annotations

import base64
import hashlib
import zipfile
from collections.abc import Mapping, Sequence
from pathlib import Path


def make_wheel(
    directory: Path,
    name: str,
    version: str,
    requires: Sequence[str] = (),
    files: Mapping[str, str] | None = None,
) -> Path:
    """``name``-``version``-py3-none-any.whl in ``directory``: a package named like the distribution
    (``files`` overrides its contents), with ``requires`` as its Requires-Dist."""
    module = name.replace("-", "_").lower()
    dist = f"{name.replace('-', '_')}-{version}"
    contents = dict(files or {f"{module}/__init__.py": f"NAME = {name!r}\n"})
    metadata = [f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}"]
    metadata += [f"Requires-Dist: {r}" for r in requires]
    contents[f"{dist}.dist-info/METADATA"] = "\n".join(metadata) + "\n"
    contents[f"{dist}.dist-info/WHEEL"] = (
        "Wheel-Version: 1.0\nGenerator: tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
    )
    contents[f"{dist}.dist-info/top_level.txt"] = module + "\n"
    record = []
    for path, text in contents.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=").decode()
        record.append(f"{path},sha256={digest},{len(text.encode())}")
    record.append(f"{dist}.dist-info/RECORD,,")
    contents[f"{dist}.dist-info/RECORD"] = "\n".join(record) + "\n"
    directory.mkdir(parents=True, exist_ok=True)
    wheel = directory / f"{dist}-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as zf:
        for path, text in contents.items():
            zf.writestr(path, text)
    return wheel
