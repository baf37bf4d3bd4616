"""The integration tier drives examples/scheduled-retry as applied once for the whole run (shared
with the terraform tier: tests/terraform/stack.py); each test restores whatever it changes."""

from __future__ import annotations

import pytest

from tests.terraform.stack import Applied

Stack = Applied


@pytest.fixture(scope="session")
def stack(scheduled_retry_stack: Applied) -> Applied:
    return scheduled_retry_stack
