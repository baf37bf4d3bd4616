"""A function's layers as Lambda mounts them: each layer version's zip (GetLayerVersion's
``Content.Location``, served by the emulator's ``lambda_layer_content_unreachable`` patch) extracted
in the function's order into one directory standing for ``/opt``, a later layer's file replacing an
earlier one's. The worker puts that directory's ``python/lib/pythonX.Y/site-packages`` and
``python/`` on ``sys.path`` right after the function's own code, as the Lambda Python runtime does
(``/var/task`` first, then ``/opt``, then the runtime's own packages such as boto3).

A layer version the emulator does not hold (deleted, another account's such as AWS's public
Powertools layer, or a malformed ARN) fails the function's start with AWS's message for an unknown
layer version, instead of running the handler without the code it expects.
"""

from __future__ import annotations

import hashlib
import io
import re
import shutil
import tempfile
import threading
import urllib.request
import zipfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from serverless_retry_tools.local.runtime.complete_trees import is_complete, publish

__all__ = ["LayerError", "mount"]

# arn:<partition>:lambda:<region>:<account>:layer:<name>:<version> (Lambda's own pattern for Layers).
_LAYER_ARN = re.compile(r"^arn:[a-zA-Z0-9-]+:lambda:([a-z0-9-]+):(\d{12}):layer:([a-zA-Z0-9_-]+):([0-9]+)$")
_FUNCTION_ARN = re.compile(r"^arn:[a-zA-Z0-9-]+:lambda:([a-z0-9-]+):(\d{12}):function:")
_lock = threading.Lock()


class LayerError(RuntimeError):
    """A layer of the function cannot be mounted (Lambda would refuse the configuration)."""


def _unknown(arn: str, why: str = "") -> LayerError:
    # AWS's InvalidParameterValueException message for a layer version it does not hold.
    return LayerError(f"Layer version {arn} does not exist." + (f" ({why})" if why else ""))


def _content_of(lambda_client: Any, function_arn: str, arn: str) -> tuple[str, str]:
    """(CodeSha256, download URL) of one layer version, read through the Lambda API."""
    found, function = _LAYER_ARN.match(arn), _FUNCTION_ARN.match(function_arn)
    if found is None:
        raise _unknown(arn, "not a layer version ARN")
    region, account, name, version = found.groups()
    if function is not None and (region, account) != function.groups():
        raise _unknown(
            arn, f"the emulator holds only layers published to {function.group(2)} in {function.group(1)}"
        )
    try:
        content = lambda_client.get_layer_version(LayerName=name, VersionNumber=int(version))["Content"]
    except lambda_client.exceptions.ResourceNotFoundException:
        raise _unknown(arn) from None
    location = str(content.get("Location") or "")
    if not location.startswith(("http://", "https://")):
        raise LayerError(
            f"layer {arn}: GetLayerVersion gave no downloadable Content.Location ({location!r}); "
            "is the emulator's lambda_layer_content_unreachable patch on?"
        )
    return str(content.get("CodeSha256") or location), location


def _download(location: str) -> bytes:
    with urllib.request.urlopen(location, timeout=30) as response:
        return bytes(response.read())


def mount(lambda_client: Any, function_arn: str, arns: Sequence[str], root: Path) -> Path:
    """The ``/opt`` of a function with these layers (in this order), under ``root``: built once per
    list of layer contents and renamed into place complete, so workers starting together never see a
    half-extracted tree."""
    contents = [_content_of(lambda_client, function_arn, arn) for arn in arns]
    key = hashlib.sha256("\n".join(sha for sha, _ in contents).encode())
    target = root / f"opt-{key.hexdigest()[:32]}"
    with _lock:
        if is_complete(target):
            return target
        root.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=root))
        try:
            for _, location in contents:  # in the function's order: a later layer's file wins
                with zipfile.ZipFile(io.BytesIO(_download(location))) as zf:
                    zf.extractall(staging)
            publish(staging, target, "\n".join(arns))
        finally:
            shutil.rmtree(staging, ignore_errors=True)
    return target
