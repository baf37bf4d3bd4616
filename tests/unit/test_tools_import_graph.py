"""No import circle in the operator tools and the emulator: every import counts (at the top, inside a
function, under TYPE_CHECKING), so a module can always be read, imported and tested on its own. The
two circles there were: the patch registry and its member modules (now sharing patch_types.py), the
runtime and its pipe and async runners (now handed RunnerServices)."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "tools_src" / "serverless_retry_tools"


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
