"""What the emulator and everything that talks to it agree on (ground floor: imports nothing of
``local``): the account and credentials it serves, the routes of its logical clock, the environment
line that aims a client at it, and how a ready file is written.

The emulator's child serves these routes and writes its ready file; the runtime, the sandbox and the
operator commands call the routes and read the file. Here, neither side imports the other for them.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

__all__ = [
    "ACCOUNT_ID",
    "ADVANCE_ROUTE",
    "CLOCK_ROUTE",
    "FAKE_CREDENTIALS",
    "HOLDS_ROUTE",
    "talk_environment",
    "write_json_atomically",
]

# moto's default account: every ARN the emulator hands out carries it.
ACCOUNT_ID = "123456789012"
# Credentials that only the emulator accepts; never the user's real ones.
FAKE_CREDENTIALS = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_SESSION_TOKEN": "testing",
    # ... and no profile from ~/.aws can add a real credential source or another endpoint.
    "AWS_CONFIG_FILE": os.devnull,
    "AWS_SHARED_CREDENTIALS_FILE": os.devnull,
}

# Where the emulator serves its clock (``{"epoch", "scale"}``) for a runtime given only the endpoint.
CLOCK_ROUTE = "/_serverless_retry/clock"
# Where a runtime declares what the clock waits for (see clock/clock_holds.py).
HOLDS_ROUTE = "/_serverless_retry/clock/holds"
# Where an operator's command or a test jumps logical time forward (``{"seconds": N}``).
ADVANCE_ROUTE = f"{CLOCK_ROUTE}/advance"


def talk_environment(endpoint: str, region: str) -> str:
    """``NAME=value`` pairs that aim the AWS CLI, boto3 and serverless-retry at the emulator.
    Both region variables: boto3 reads only ``AWS_DEFAULT_REGION`` (else NoRegionError), the AWS CLI
    v2 and most SDKs ``AWS_REGION``."""
    return (
        f"AWS_ENDPOINT_URL={endpoint} AWS_REGION={region} AWS_DEFAULT_REGION={region} "
        f"AWS_ACCESS_KEY_ID={FAKE_CREDENTIALS['AWS_ACCESS_KEY_ID']} "
        f"AWS_SECRET_ACCESS_KEY={FAKE_CREDENTIALS['AWS_SECRET_ACCESS_KEY']}"
    )


def write_json_atomically(path: Path, data: Any) -> None:
    """Written whole then renamed: a script polling for the file never reads half of it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    partial.write_text(json.dumps(data, indent=1, default=str))
    partial.replace(path)
