"""The README's quickstarts are valid Terraform against the modules as they are: each block after a
`<!-- quickstart:<pattern> -->` marker, its pinned git source pointed at this checkout's module, in
one root with placeholder zips, passes `terraform validate`. A module input renamed or removed
without the README following fails here. (The scheduled-retry quickstart is also applied, literally
but for its source, on the emulator from a user's root outside the checkout:
tests/integration/test_outside_the_repository.py.)"""

from __future__ import annotations

import json
import re
import shutil

from tests.support.readme import quickstarts
from tests.terraform.conftest import ROOT, Workspace, init

PINNED_SOURCE = re.compile(
    r'"git::https://github\.com/serverless-retry/serverless-retry\.git//modules/([\w-]+)\?ref=[^"]+"'
)
EMPTY_ZIP = ROOT / "tests" / "terraform" / "fixtures" / "empty.zip"


def test_the_readme_quickstarts_validate_against_the_modules(workspace: Workspace) -> None:
    blocks = quickstarts()
    assert len(blocks) == 3
    root = workspace.root / "readme-quickstarts"
    (root / "build").mkdir(parents=True)
    hcl = "\n".join(blocks.values())
    for zip_path in set(re.findall(r'"\$\{path\.module\}/(build/[\w-]+\.zip)"', hcl)):
        shutil.copyfile(EMPTY_ZIP, root / zip_path)
    # The release's modules are this checkout's: the workspace holds them beside this root.
    (root / "main.tf").write_text(PINNED_SOURCE.sub(r'"../modules/\1"', hcl), encoding="utf-8")
    (root / "providers.tf").write_text('provider "aws" {\n  region = "us-east-1"\n}\n', encoding="utf-8")
    lock = workspace.root / "examples" / "native-retry" / ".terraform.lock.hcl"
    if lock.is_file():  # spares init hashing the provider again
        shutil.copyfile(lock, root / ".terraform.lock.hcl")

    initialised = init(workspace.terraform, root, "-backend=false")
    assert initialised.returncode == 0, initialised.stdout + initialised.stderr
    result = workspace.terraform.run(["validate", "-json", "-no-color"], root)
    report = json.loads(result.stdout)
    assert report["valid"] is True, json.dumps(report["diagnostics"], indent=2)
