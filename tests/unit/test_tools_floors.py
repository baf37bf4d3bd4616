"""docs/architecture.md's floors of serverless_retry_tools, checked: each module imports only from its
own wing or the floors below, and no import circle anywhere in the package. Every import counts (at
the top, inside a function, under TYPE_CHECKING), so a module can always be read, imported and tested
on its own. The emulator and the runtime are two wings of one floor: neither imports the other; what
both need (the account, the clock's routes, the logical clock, AWS's rules) lives on the ground floor
below them. A new module must be placed on a floor here (by its package or its name) and on the page.

The two circles there once were: the patch registry and its member modules (now sharing
patch_types.py), the runtime and its pipe and async runners (now handed RunnerServices)."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "tools_src" / "serverless_retry_tools"

GROUND, TOOLS, WINGS, SANDBOX, DEMOS, ENTRY, COMMAND = range(7)
# (floor, wing) of each package or module, relative to serverless_retry_tools; a module takes the
# entry of its longest dotted prefix. An import may point to a lower floor, or within its own wing.
FLOORS: dict[str, tuple[int, str]] = {
    # the ground of the local runtime: imports nothing of local/ above it
    "local": (GROUND, "ground"),  # the package's docstring only
    "local.emulator_contract": (GROUND, "ground"),
    "local.clock": (GROUND, "ground"),
    "local.aws_rules": (GROUND, "ground"),
    # the operator tools, on the same helpers as the emulator (help_text, commands.archive_location)
    **dict.fromkeys(
        [
            "__init__", "attempt_rows", "backlog", "capacity", "console", "cost", "help_text",
            "ops_sandbox", "policy_input", "routing", "timeline", "bundling", "commands",
        ],
        (TOOLS, "tools"),
    ),
    "local.emulator": (WINGS, "emulator"),
    "local.runtime": (WINGS, "runtime"),
    "local.sandbox": (SANDBOX, "sandbox"),
    "local.demos": (DEMOS, "demos"),
    "local.cli": (ENTRY, "local.cli"),
    "aws_tier": (ENTRY, "aws_tier"),
    "cli": (COMMAND, "cli"),
}  # fmt: skip


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _graph() -> dict[str, set[str]]:
    modules = {_module_name(p): p for p in PACKAGE.rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        deps: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    anchor = package.split(".")
                    anchor = anchor[: len(anchor) - node.level + 1]
                    base = ".".join([*anchor, *([base] if base else [])])
                for alias in node.names:
                    full = f"{base}.{alias.name}"
                    deps.add(full if full in modules else base)
            elif isinstance(node, ast.Import):
                deps.update(alias.name for alias in node.names)
        graph[name] = {d for d in deps if d in modules and d != name}
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def _floor(module: str) -> tuple[int, str] | None:
    parts = module.removeprefix("serverless_retry_tools").removeprefix(".").split(".")
    if parts == [""]:
        parts = ["__init__"]
    for n in range(len(parts), 0, -1):
        if ".".join(parts[:n]) in FLOORS:
            return FLOORS[".".join(parts[:n])]
    return None


def test_every_module_is_on_a_floor() -> None:
    graph = _graph()
    unplaced = sorted(m for m in graph if _floor(m) is None)
    assert not unplaced, f"place these on a floor (here and in docs/architecture.md): {unplaced}"
    modules = {m.removeprefix("serverless_retry_tools.") for m in graph}
    gone = [f for f in FLOORS if f != "__init__" and f not in modules]
    assert not gone, f"floors of modules that no longer exist: {gone}"


def _wrong_imports(graph: dict[str, set[str]]) -> list[str]:
    """Each import that points to a higher floor, or to another wing of its own floor."""
    wrong = []
    for module, imports in sorted(graph.items()):
        here = _floor(module)
        for target in sorted(imports):
            there = _floor(target)
            if here is None or there is None or not (there[0] < here[0] or there == here):
                wrong.append(f"{module} {here} imports {target} {there}")
    return wrong


def test_an_import_never_points_up_nor_across_wings() -> None:
    graph = _graph()
    # the check has something to see: the runtime does import the ground floor
    assert (
        "serverless_retry_tools.local.clock.held_clock"
        in graph["serverless_retry_tools.local.runtime.runtime"]
    )
    wrong = _wrong_imports(graph)
    assert not wrong, "\n".join(wrong)


def test_the_floor_check_finds_an_import_up_and_one_across_wings() -> None:
    local = "serverless_retry_tools.local"
    up = {f"{local}.clock.held_clock": {f"{local}.runtime.runtime"}, f"{local}.runtime.runtime": set()}
    across = {f"{local}.runtime.runtime": {f"{local}.emulator.emulator"}, f"{local}.emulator.emulator": set()}
    down = {f"{local}.demos.demo_frame": {f"{local}.runtime.runtime"}, f"{local}.runtime.runtime": set()}
    assert len(_wrong_imports(up)) == 1
    assert len(_wrong_imports(across)) == 1
    assert _wrong_imports(down) == []
    assert _floor(f"{local}.runtime.streams.runner") == (WINGS, "runtime")
    assert _floor("serverless_retry_tools") == (TOOLS, "tools")


def test_the_cycle_finder_finds_a_circle() -> None:
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_no_module_of_the_tools_imports_itself_through_others() -> None:
    graph = _graph()
    assert (
        "serverless_retry_tools.local.runtime.runtime"
        in graph["serverless_retry_tools.local.demos.demo_frame"]
    )
    assert _cycles(graph) == []


@pytest.mark.parametrize(
    "module",
    [
        "emulator.async_patches",
        "emulator.events_patches",
        "emulator.moto_patches",
        "runtime.pipes",
        "runtime.async_runner",
        "runtime.runtime",
    ],
)
def test_each_former_member_of_a_circle_imports_first_in_a_fresh_interpreter(module: str) -> None:
    name = f"serverless_retry_tools.local.{module}"
    result = subprocess.run(
        [sys.executable, "-c", f"import {name}"], capture_output=True, text=True, timeout=120, check=False
    )
    assert result.returncode == 0, result.stderr
