"""Split a module's `terraform test` files into parts that run as separate, concurrent processes.

Terraform 1.11 runs a test file's run blocks one after the other in one process (~2.5 s a plan
here), so the consumer module's 40 runs took ~100 s, the longest single test of the suite. Each
part keeps the file's other blocks (mock providers, overrides, file-level variables) and a share of
its run blocks, in their order; every run block lands in exactly one part. A file whose runs refer
to each other (``run.<name>.``) is never split.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

_RUN_HEADER = re.compile(r'^run\s+"[^"]+"\s*\{', re.MULTILINE)
_RUN_REFERENCE = re.compile(r"\brun\.[A-Za-z_][A-Za-z0-9_-]*\.")
_HEREDOC = re.compile(r"<<-?([A-Za-z_][A-Za-z0-9_]*)[ \t]*\n")


@dataclass(frozen=True)
class Part:
    files: dict[str, str]  # file name -> text
    runs: int  # run blocks in it

    def write(self, directory: Path) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        for name, text in self.files.items():
            (directory / name).write_text(text, encoding="utf-8")


def top_level_blocks(text: str) -> list[str]:
    """``text`` cut after each top-level block's closing brace (and the rest of that line); the
    pieces, joined, are ``text``. Braces inside strings, templates, comments and heredocs do not
    count."""
    blocks: list[str] = []
    start = depth = i = 0
    # Contexts below the top: "s" a string, an int the brace depth of a ${...}/%{...} in a string.
    stack: list[str | int] = []
    n = len(text)
    while i < n:
        c = text[i]
        top = stack[-1] if stack else None
        if top == "s":
            if c == "\\":
                i += 2
                continue
            if c == '"':
                stack.pop()
            elif c in "$%" and text.startswith("{", i + 1) and not text.startswith(c, i - 1):
                stack.append(0)
                i += 1
            i += 1
            continue
        # Code: the top level or inside a template interpolation.
        if c == '"':
            stack.append("s")
        elif c == "#" or text.startswith("//", i):
            i = text.find("\n", i)
            i = n if i < 0 else i
            continue
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            i = n if end < 0 else end + 2
            continue
        elif heredoc := _HEREDOC.match(text, i):
            end = re.compile(rf"^[ \t]*{re.escape(heredoc.group(1))}[ \t]*$", re.MULTILINE).search(
                text, heredoc.end()
            )
            i = n if end is None else end.end()
            continue
        elif c == "{":
            if isinstance(top, int):
                stack[-1] = top + 1
            else:
                depth += 1
        elif c == "}":
            if isinstance(top, int):
                if top == 0:
                    stack.pop()  # back in the string
                else:
                    stack[-1] = top - 1
            else:
                depth -= 1
                if depth == 0:
                    eol = text.find("\n", i)
                    end = n if eol < 0 else eol + 1
                    blocks.append(text[start:end])
                    start = i = end
                    continue
        i += 1
    if start < n:
        blocks.append(text[start:])
    assert "".join(blocks) == text
    return blocks


def _is_run(block: str) -> bool:
    return _RUN_HEADER.search(block) is not None


def split(tests_dir: Path, count: int) -> list[Part]:
    """The ``*.tftest.hcl`` files of ``tests_dir`` as ``count`` parts of about as many run blocks
    (fewer parts when there are fewer runs)."""
    preambles: dict[str, str] = {}
    units: list[tuple[str, str, int]] = []  # (file, run blocks, how many), in file order
    for path in sorted(tests_dir.glob("*.tftest.hcl")):
        text = path.read_text(encoding="utf-8")
        blocks = top_level_blocks(text)
        runs = [b for b in blocks if _is_run(b)]
        assert len(runs) == len(_RUN_HEADER.findall(text)), f"{path}: run blocks not all found"
        preambles[path.name] = "".join(b for b in blocks if not _is_run(b))
        if any(_RUN_REFERENCE.search(run) for run in runs):
            units.append((path.name, "".join(runs), len(runs)))  # kept together, in order
        else:
            units += [(path.name, run, 1) for run in runs]
    total = sum(weight for _, _, weight in units)
    count = max(1, min(count, total))
    size = -(-total // count)
    parts: list[dict[str, list[str]]] = [{} for _ in range(count)]
    filled = [0] * count
    k = 0
    for name, runs, weight in units:
        if filled[k] and filled[k] + weight > size and k + 1 < count:
            k += 1
        parts[k].setdefault(name, []).append(runs)
        filled[k] += weight
    out = [
        Part({name: preambles[name] + "\n" + "".join(runs) for name, runs in part.items()}, filled[k])
        for k, part in enumerate(parts)
        if part
    ]
    assert sum(p.runs for p in out) == total
    return out
