"""`terraform validate` of each example: valid, and without a warning.

In a file of its own so that the suite queues it early in its tier (tests/scheduling.py's ``spread``
orders each tier by file): the niced validates took up to ~9 s of wall on a busy machine, and at the end
of test_static.py, the tier's last file, they were among the last tests of a run.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from tests.terraform.conftest import EXAMPLES, Runs, Workspace

# The examples: each module is validated by its own `terraform test` (test_native.py), which
# validates the configuration before any run and is checked there for warnings too; a validate
# more would cost each module ~1 s of CPU for nothing new.
VALIDATED = EXAMPLES


# Session-scoped: under xdist its tests spread across workers (see tests/conftest.py).
@pytest.fixture(scope="session")
def validations(workspace: Workspace) -> Iterator[Runs[str, dict[str, Any]]]:
    def validate(relative: str) -> dict[str, Any]:
        result = workspace.terraform.run(["validate", "-json", "-no-color"], workspace.dir(relative))
        report: dict[str, Any] = json.loads(result.stdout)
        return report

    runs = Runs(validate, VALIDATED)
    yield runs
    runs.close()


@pytest.mark.parametrize("relative", VALIDATED)
def test_validate(validations: Runs[str, dict[str, Any]], relative: str) -> None:
    report = validations[relative]
    assert report["valid"] is True, json.dumps(report["diagnostics"], indent=2)
    warnings = [d for d in report["diagnostics"] if d["severity"] == "warning"]
    assert warnings == [], json.dumps(warnings, indent=2)
