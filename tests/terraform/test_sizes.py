"""The size relationship between the source and the retry-exhausted queue is one figure, stated once in
Python (what the terminal forms need around a body) and checked here against the Terraform module."""

from __future__ import annotations

from serverless_retry.config import DEFAULT_MAX_MESSAGE_BYTES
from serverless_retry.terminal import FRAME_OVERHEAD_BYTES

from tests.terraform.conftest import Workspace


def test_the_queue_module_keeps_the_terminal_frame_margin(workspace: Workspace) -> None:
    terraform = workspace.terraform
    queue = workspace.dir("modules/queue")
    assert terraform.console(queue, "local.exhausted_size_margin", {"name": "orders"}) == FRAME_OVERHEAD_BYTES


def test_the_default_source_size_leaves_the_margin_under_the_provider_limit(workspace: Workspace) -> None:
    terraform = workspace.terraform
    queue = workspace.dir("modules/queue")
    sizes = terraform.console(
        queue, "[var.max_message_size, local.exhausted_max_message_size]", {"name": "orders"}
    )
    assert isinstance(sizes, list)
    source, exhausted = sizes
    assert exhausted - source >= FRAME_OVERHEAD_BYTES
    # The consumer's default (no SERVERLESS_RETRY_MAX_MESSAGE_BYTES) is SQS's default; the modules
    # always set it, so the only requirement is that the module's default fits under it.
    assert source <= DEFAULT_MAX_MESSAGE_BYTES
