"""Distributions a function's zip need not carry: what the Lambda runtime (or a layer) provides.

The Python runtimes come with boto3 (and botocore, s3transfer): bundling them pulls ~20 MB into every
zip and pins an SDK the runtime keeps current. They are left out unless the requirements name them
(a team that wants a newer SDK than the runtime's lists boto3 itself). Whatever only they needed
(jmespath, python-dateutil, urllib3, six) goes with them; whatever the user's code also needs stays.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable

from packaging.markers import Marker, default_environment
from packaging.requirements import InvalidRequirement, Requirement

from serverless_retry_tools.bundling.installs import Installed, normalize
from serverless_retry_tools.bundling.targets import Target

RUNTIME_PROVIDED = frozenset({"boto3", "botocore", "s3transfer"})
POWERTOOLS = "aws-lambda-powertools"


def marker_environment(target: Target) -> dict[str, str]:
    """The values PEP 508 markers see on ``target``'s Lambda runtime (Linux, CPython)."""
    env: dict[str, str] = {key: str(value) for key, value in default_environment().items()}
    return {
        **env,
        **{
            "python_version": target.python,
            "python_full_version": f"{target.python}.0",
            "platform_machine": target.machine,
            "sys_platform": "linux",
            "platform_system": "Linux",
            "os_name": "posix",
            "implementation_name": "cpython",
            "platform_python_implementation": "CPython",
            "extra": "",
        },
    }


def _dependencies(item: Installed, env: dict[str, str]) -> set[str]:
    out: set[str] = set()
    for text in item.requires_dist:
        try:
            req = Requirement(text)
        except InvalidRequirement:
            continue
        if req.marker is None or Marker(str(req.marker)).evaluate(env):
            out.add(normalize(req.name))
    return out


def left_out(
    installed: Iterable[Installed],
    target: Target,
    provided: Collection[str] = RUNTIME_PROVIDED,
    dropped: Collection[str] = (),
) -> set[str]:
    """The normalized names of the installed distributions to leave out of the zip.

    What stays is what the requirements named (but ``dropped``) and everything it needs, except that
    a dependency on a ``provided`` distribution (boto3's family) is not followed from outside that
    family: a library needing boto3 gets the runtime's, while boto3 named in the requirements comes
    with the botocore it needs. Whatever is not reached that way (a ``provided`` distribution nobody
    named, ``dropped``, and what only they needed) is left out."""
    items = {normalize(item.name): item for item in installed}
    env = marker_environment(target)
    deps = {name: _dependencies(item, env) & items.keys() for name, item in items.items()}
    stack = [name for name, item in items.items() if item.requested and name not in dropped]
    kept: set[str] = set()
    while stack:
        name = stack.pop()
        if name in kept:
            continue
        kept.add(name)
        stack += [
            need for need in deps[name] if need not in dropped and (need not in provided or name in provided)
        ]
    return set(items) - kept
