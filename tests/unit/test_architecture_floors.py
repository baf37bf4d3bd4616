"""docs/architecture.md's floors of serverless_retry, checked: each module imports only from its own
floor or the floors below, and the core imports no AWS SDK and no Powertools, so every decision is
tested without AWS. A new module must be placed on a floor here and on the page."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "lambda_src" / "serverless_retry"
CORE, EDGE, ORCHESTRATION, ENTRY = 1, 2, 3, 4
FLOORS = {
    **dict.fromkeys(
        [
            "errors", "clock", "frozen_clock", "scaled_clock", "backoff", "regex", "policy", "envelope", "terminal", "planning", "message", "exhausted",
            "consumer.unhandled_records", "retry_log", "signing", "async_processor", "consumer.record_reader", "consumer.verdicts",
            "redrive.options", "environment", "config", "selfheal.types", "selfheal.state",
            "selfheal.records", "selfheal.rules", "selfheal.decorator",
            "selfheal.config", "payload_pointer",
            "streams.records", "streams.dynamodb_json", "streams.stream_message", "streams.reader",
            "streams.adapter", "streams.settings", "streams.__init__", "archive.record", "archive.settings",
        ],
        CORE,
    ),
    **dict.fromkeys(
        [
            "aws", "consumer.delivery", "consumer.claims", "observability", "selfheal.metrics", "selfheal.function",
            "consumer.idempotency", "consumer.batch_state", "payload_store", "archive.store", "archive.metrics",
            "selfheal.stored",
        ],
        EDGE,
    ),
    **dict.fromkeys(
        [
            "consumer.retrying_consumer", "consumer.admission", "consumer.record_gate", "consumer.final_copies", "consumer.retry_copies", "consumer.batch_response",
            "redrive.queue", "redrive.native", "selfheal.enrichment", "selfheal.redrive",
            "selfheal.reinvoke", "streams.handoff", "streams.consumer", "archive.archiver",
        ],
        ORCHESTRATION,
    ),
    **dict.fromkeys(
        [
            "handlers.consumer", "handlers.enrichment", "handlers.redrive", "handlers.redrive_queue", "batch",
            "handlers.stream", "handlers.archive",
        ],
        ENTRY,
    ),
}  # fmt: skip
# The public API and the helpers for users' own tests may import from any floor.
OUTSIDE_FLOORS = {
    "__init__", "selfheal.__init__", "handlers.__init__", "testing", "archive.__init__", "consumer.__init__",
    "redrive.__init__",
    "queue_redrive",  # 0.2's import path of redrive.queue, re-exported for operators' scripts
}  # fmt: skip
AWS_LIBRARIES = ("boto3", "botocore", "aws_lambda_powertools")
# The one Powertools import the core may make: Message.sqs_record hands the processor Powertools'
# SQSRecord, a plain dict wrapper (no AWS call, no decision), imported on first read only.
CORE_VIEWS = {("message", "aws_lambda_powertools.utilities.data_classes.sqs_event")}


def _modules() -> list[str]:
    return sorted(".".join(path.relative_to(PACKAGE).with_suffix("").parts) for path in PACKAGE.rglob("*.py"))


def _imports(module: str) -> set[str]:
    tree = ast.parse((PACKAGE / (module.replace(".", "/") + ".py")).read_text(encoding="utf-8"))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
    return found


def test_every_module_is_on_a_floor() -> None:
    unplaced = [m for m in _modules() if m not in FLOORS and m not in OUTSIDE_FLOORS]
    assert not unplaced, f"place these on a floor (here and in docs/architecture.md): {unplaced}"
    gone = [m for m in FLOORS if m not in _modules()]
    assert not gone, f"modules that no longer exist: {gone}"


@pytest.mark.parametrize("module", sorted(FLOORS))
def test_a_module_imports_only_its_floor_and_below(module: str) -> None:
    floor = FLOORS[module]
    for name in _imports(module):
        if name.startswith("serverless_retry."):
            target = name.removeprefix("serverless_retry.")
            target_floor = FLOORS.get(target, FLOORS.get(target + ".__init__", CORE))
            if target in ("selfheal", "handlers", "consumer"):
                target_floor = ENTRY  # the packages' __init__ re-export from every floor
            assert target_floor <= floor, f"{module} (floor {floor}) imports {target} (floor {target_floor})"
        if floor == CORE and (module, name) not in CORE_VIEWS:
            assert not name.startswith(AWS_LIBRARIES), f"{module} is core but imports {name}"


def _import_graph() -> dict[str, set[str]]:
    """Each module's imports of other modules of the package, at any depth of the file (an import
    inside a function, or under TYPE_CHECKING, still makes the two depend on each other)."""
    modules = set(_modules())
    graph: dict[str, set[str]] = {}
    for module in modules:
        tree = ast.parse((PACKAGE / (module.replace(".", "/") + ".py")).read_text(encoding="utf-8"))
        targets: set[str] = set()
        for node in ast.walk(tree):
            names: list[str] = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names = [node.module] + [f"{node.module}.{alias.name}" for alias in node.names]
            for name in names:
                target = name.removeprefix("serverless_retry.")
                if not name.startswith("serverless_retry."):
                    continue
                if target not in modules:
                    target = f"{target}.__init__"  # a package: its __init__
                if target in modules and target != module:
                    targets.add(target)
        graph[module] = targets
    return graph


def test_no_import_circle() -> None:
    """No module reaches itself through its imports: the package is a stack of floors, each readable
    with only what is below it in mind."""
    graph = _import_graph()
    circles: list[list[str]] = []
    for start in sorted(graph):
        # Depth-first from each module, bounded by the number of modules; a path back to the start
        # is a circle (each is reported from its first module in order).
        stack: list[tuple[str, list[str]]] = [(start, [start])]
        seen: set[str] = set()
        while stack:
            module, path = stack.pop()
            for target in sorted(graph[module]):
                if target == start:
                    circles.append([*path, start])
                elif target not in seen and target > start:
                    seen.add(target)
                    stack.append((target, [*path, target]))
    assert not circles, f"import circles: {circles}"
