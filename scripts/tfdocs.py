"""Generate the inputs/outputs tables of Terraform module READMEs from their .tf files.

The terraform-docs binary cannot be installed here, so this does the part we use: between
<!-- BEGIN_TF_DOCS --> and <!-- END_TF_DOCS --> in a directory's README.md it writes the
requirements, an inputs table (name, description, type, default, required) and an outputs table.
Each module's README is also the documentation site's page of that module: docs/modules/<name>.md
is generated from it (its relative links rewritten for the site), with docs/modules/index.md.

    python scripts/tfdocs.py                 # rewrite every README that has the markers, and the pages
    python scripts/tfdocs.py --check         # exit 1 and name the files that are out of date
    python scripts/tfdocs.py modules/queue   # only these directories

Types and defaults are shown as written in the source, which is why this slices the source text
instead of using an HCL parser (python-hcl2 re-renders expressions, e.g. ${object({...})}). The
scanner understands what our .tf files use: strings with ``${}`` templates, heredocs, comments and
nested brackets. Anything it cannot read is an error that names the file, never a silent gap.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOCS_MODULES = ROOT / "docs" / "modules"
# Links to files outside docs/ point at the repository: the site can only serve docs/.
REPO_URL = "https://github.com/serverless-retry/serverless-retry"
_LINK = re.compile(r"\]\((?!https?://|mailto:|#)([^)\s]+)\)")
BEGIN = "<!-- BEGIN_TF_DOCS -->"
END = "<!-- END_TF_DOCS -->"
_BLOCK = re.compile(r'^(variable|output)\s+"([^"]+)"\s*\{', re.MULTILINE)
_ATTR = re.compile(r"^[ \t]*([A-Za-z_][A-Za-z0-9_-]*)[ \t]*=[ \t]*", re.MULTILINE)
_HEREDOC = re.compile(r"<<(-?)([A-Za-z_][A-Za-z0-9_]*)[ \t]*\n")
_REQUIRED_VERSION = re.compile(r'required_version\s*=\s*"([^"]+)"')
_PROVIDER = re.compile(
    r'(\w+)\s*=\s*\{[^{}]*?source\s*=\s*"([^"]+)"[^{}]*?version\s*=\s*"([^"]+)"', re.DOTALL
)


class TfDocsError(Exception):
    pass


@dataclass(frozen=True)
class Variable:
    name: str
    description: str
    type: str
    default: str | None  # source text; None = required

    @property
    def required(self) -> bool:
        return self.default is None


@dataclass(frozen=True)
class Output:
    name: str
    description: str


def _skip_string(text: str, i: int) -> int:
    """``text[i]`` is an opening quote; return the index after the closing one (templates nest)."""
    i += 1
    while i < len(text):
        c = text[i]
        if c == "\\":
            i += 2
            continue
        if c == '"':
            return i + 1
        if text.startswith("${", i) or text.startswith("%{", i):
            i = _skip_brackets(text, i + 1)
            continue
        if c == "\n":
            break
        i += 1
    raise TfDocsError(f"unterminated string at offset {i}")


def _skip_heredoc(text: str, i: int) -> int | None:
    """If a heredoc starts at ``i``, return the index after its closing marker."""
    m = _HEREDOC.match(text, i)
    if not m:
        return None
    end = re.compile(rf"^[ \t]*{re.escape(m.group(2))}[ \t]*$", re.MULTILINE).search(text, m.end())
    if not end:
        raise TfDocsError(f"unterminated heredoc {m.group(2)}")
    return end.end()


def _skip_brackets(text: str, i: int) -> int:
    """``text[i]`` is an opening bracket; return the index after its match."""
    pairs = {"{": "}", "[": "]", "(": ")"}
    stack = [pairs[text[i]]]
    i += 1
    while stack:
        if i >= len(text):
            raise TfDocsError("unbalanced brackets")
        c = text[i]
        if c == '"':
            i = _skip_string(text, i)
            continue
        heredoc_end = _skip_heredoc(text, i) if c == "<" else None
        if heredoc_end is not None:
            i = heredoc_end
            continue
        if c == "#" or text.startswith("//", i):
            i = text.find("\n", i) if "\n" in text[i:] else len(text)
            continue
        if text.startswith("/*", i):
            i = text.index("*/", i) + 2
            continue
        if c in pairs:
            stack.append(pairs[c])
        elif c in ")]}":
            expected = stack.pop()
            if c != expected:
                raise TfDocsError(f"mismatched {c!r} at offset {i}, expected {expected!r}")
        i += 1
    return i


def _expression_end(text: str, i: int) -> int:
    """The end of the expression starting at ``i``: the first newline outside brackets and strings."""
    while i < len(text):
        c = text[i]
        if c == "\n":
            return i
        if c == '"':
            i = _skip_string(text, i)
        elif c in "{[(":
            i = _skip_brackets(text, i)
        elif c == "<" and (end := _skip_heredoc(text, i)) is not None:
            return end
        elif c == "#" or text.startswith("//", i):
            return i
        else:
            i += 1
    return i


def _top_level_attributes(body: str) -> dict[str, str]:
    """Attributes set directly in a block body (nested blocks such as ``validation`` are skipped)."""
    attrs: dict[str, str] = {}
    i = 0
    while i < len(body):
        m = _ATTR.match(body, i)
        if m:
            end = _expression_end(body, m.end())
            attrs[m.group(1)] = body[m.end() : end].rstrip()
            i = end
            continue
        line_end = body.find("\n", i)
        line = body[i : len(body) if line_end < 0 else line_end]
        brace = _first_code_brace(line)
        if brace is not None:  # a nested block: skip it whole
            i = _skip_brackets(body, i + brace)
            continue
        i = len(body) if line_end < 0 else line_end + 1
    return attrs


def _first_code_brace(line: str) -> int | None:
    j = 0
    while j < len(line):
        if line[j] == '"':
            j = _skip_string(line, j)
            continue
        if line[j] == "#" or line.startswith("//", j):
            return None
        if line[j] == "{":
            return j
        j += 1
    return None


def _string_value(expr: str, where: str) -> str:
    """The text of a description: a quoted string or a heredoc."""
    expr = expr.strip()
    m = _HEREDOC.match(expr + ("\n" if "\n" not in expr else ""))
    if m:
        lines = expr[m.end() :].splitlines()[:-1]
        if m.group(1):  # <<- strips the common indentation
            indent = min((len(x) - len(x.lstrip()) for x in lines if x.strip()), default=0)
            lines = [x[indent:] for x in lines]
        return " ".join(x.strip() for x in lines if x.strip())
    if expr.startswith('"') and expr.endswith('"'):
        try:
            return str(json.loads(expr))
        except json.JSONDecodeError as exc:
            raise TfDocsError(f"{where}: cannot read the description string: {exc}") from None
    raise TfDocsError(f"{where}: description must be a string literal or a heredoc")


def parse_module(directory: Path) -> tuple[list[Variable], list[Output]]:
    variables: list[Variable] = []
    outputs: list[Output] = []
    for path in sorted(directory.glob("*.tf")):
        text = path.read_text(encoding="utf-8")
        for m in _BLOCK.finditer(text):
            kind, name = m.group(1), m.group(2)
            where = f"{path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}: {kind} {name!r}"
            try:
                end = _skip_brackets(text, m.end() - 1)
            except TfDocsError as exc:
                raise TfDocsError(f"{where}: {exc}") from None
            attrs = _top_level_attributes(text[m.end() : end - 1])
            description = _string_value(attrs["description"], where) if "description" in attrs else ""
            if not description:
                raise TfDocsError(f"{where}: has no description")
            if kind == "variable":
                variables.append(Variable(name, description, attrs.get("type", "any"), attrs.get("default")))
            else:
                outputs.append(Output(name, description))
    return sorted(variables, key=lambda v: (not v.required, v.name)), sorted(outputs, key=lambda o: o.name)


def _requirements(directory: Path) -> list[tuple[str, str]]:
    text = "\n".join(p.read_text(encoding="utf-8") for p in sorted(directory.glob("*.tf")))
    rows: list[tuple[str, str]] = []
    if m := _REQUIRED_VERSION.search(text):
        rows.append(("terraform", m.group(1)))
    rows += [(f"{name} ({source})", version) for name, source, version in _PROVIDER.findall(text)]
    return rows


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def _code(text: str) -> str:
    """A type or default in a table cell: inline code, or a <pre> block for multi-line values."""
    if "\n" not in text:
        return f"`{_cell(text)}`"
    lines = text.splitlines()
    indent = min((len(x) - len(x.lstrip()) for x in lines[1:] if x.strip()), default=0)
    shown = [lines[0]] + [x[indent:] for x in lines[1:]]
    escaped = "<br/>".join(x.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;") for x in shown)
    return f"<pre>{_cell(escaped)}</pre>"


def render(directory: Path) -> str:
    variables, outputs = parse_module(directory)
    out = [BEGIN, "## Requirements", "", "| Name | Version |", "|------|---------|"]
    out += [f"| {name} | `{_cell(version)}` |" for name, version in _requirements(directory)]
    out += ["", "## Inputs", ""]
    if variables:
        out += [
            "| Name | Description | Type | Default | Required |",
            "|------|-------------|------|---------|:--------:|",
        ]
        for v in variables:
            default = "n/a" if v.default is None else _code(v.default)
            required = "yes" if v.required else "no"
            out.append(f"| {v.name} | {_cell(v.description)} | {_code(v.type)} | {default} | {required} |")
    else:
        out.append("No inputs.")
    out += ["", "## Outputs", ""]
    if outputs:
        out += ["| Name | Description |", "|------|-------------|"]
        out += [f"| {o.name} | {_cell(o.description)} |" for o in outputs]
    else:
        out.append("No outputs.")
    out.append(END)
    return "\n".join(out)


def update(readme: Path, *, check: bool) -> bool:
    """Rewrite the generated section of ``readme``; return True when it was (or would be) changed."""
    text = readme.read_text(encoding="utf-8")
    start, stop = text.find(BEGIN), text.find(END)
    if start < 0 or stop < start:
        raise TfDocsError(f"{readme}: needs the markers {BEGIN} and {END}")
    new = text[:start] + render(readme.parent) + text[stop + len(END) :]
    if new == text:
        return False
    if not check:
        readme.write_text(new, encoding="utf-8")
    return True


def _site_link(module_dir: Path, target: str) -> str:
    """A README's relative link, as the generated page under docs/modules/ must write it."""
    path, _, anchor = target.partition("#")
    anchor = f"#{anchor}" if anchor else ""
    resolved = (module_dir / path).resolve()
    docs = ROOT / "docs"
    if resolved.is_relative_to(docs) and resolved.suffix == ".md":
        return Path(_relative(resolved, DOCS_MODULES)).as_posix() + anchor
    if resolved.name == "README.md":
        resolved = resolved.parent
    readme = resolved / "README.md"
    # A private module has no page on the site (update_docs): its link goes to the repository.
    if (
        resolved.parent == ROOT / "modules"
        and readme.exists()
        and "<!-- private" not in readme.read_text(encoding="utf-8")
    ):
        return f"{resolved.name}.md{anchor}"
    if not resolved.is_relative_to(ROOT):
        raise TfDocsError(f"{module_dir}/README.md: link {target!r} leaves the repository")
    kind = "tree" if resolved.is_dir() else "blob"
    return f"{REPO_URL}/{kind}/main/{resolved.relative_to(ROOT).as_posix()}{anchor}"


def _relative(path: Path, start: Path) -> str:
    import os

    return os.path.relpath(path, start)


def docs_page(module_dir: Path, readme_text: str) -> str:
    """The site's page of a module: its README with links rewritten for docs/modules/."""
    name = module_dir.name
    body = _LINK.sub(lambda m: f"]({_site_link(module_dir, m.group(1))})", readme_text)
    notice = (
        f"<!-- generated by scripts/tfdocs.py from modules/{name}/README.md: edit that file, then run"
        " python scripts/tfdocs.py -->\n"
    )
    return notice + body


def _summary(readme_text: str) -> str:
    """The first sentence of a README's first paragraph (after the title), for the modules index."""
    paragraphs = [p for p in readme_text.split("\n\n") if p.strip() and not p.lstrip().startswith("#")]
    first = " ".join(paragraphs[0].split()) if paragraphs else ""
    first = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", first)  # links: keep their text
    first = re.sub(r"\s*\([^()]*\)", "", first)  # asides, e.g. "(see concepts)"
    end = re.search(r"[.:](\s|$)", first)
    return (first[: end.start()] if end else first).rstrip(".") + "."


def docs_index(module_dirs: list[Path]) -> str:
    lines = [
        "<!-- generated by scripts/tfdocs.py from the module READMEs: run python scripts/tfdocs.py -->",
        "# Modules",
        "",
        "Each page is the module's README, with its inputs and outputs generated from its .tf files.",
        "Pin a module to a release in your own root:",
        "",
        "```hcl",
        'source = "git::https://github.com/serverless-retry/serverless-retry.git//modules/<name>?ref=v0.2.0"',
        "```",
        "",
        "| module | what it is |",
        "|---|---|",
    ]
    for directory in module_dirs:
        summary = _summary((directory / "README.md").read_text(encoding="utf-8"))
        lines.append(f"| [{directory.name}]({directory.name}.md) | {_cell(summary)} |")
    return "\n".join(lines) + "\n"


def _write(path: Path, text: str, *, check: bool) -> bool:
    if path.exists() and path.read_text(encoding="utf-8") == text:
        return False
    if not check:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return True


def update_docs(*, check: bool) -> list[Path]:
    """Write docs/modules/: a page per module README, an index, nothing stale; return what changed."""
    # A private module (its README says "<!-- private", e.g. modules/function) is no user's entry point.
    module_dirs = [
        d.parent
        for d in sorted((ROOT / "modules").glob("*/README.md"))
        if "<!-- private" not in d.read_text(encoding="utf-8")
    ]
    changed = []
    wanted = {DOCS_MODULES / "index.md": docs_index(module_dirs)}
    for directory in module_dirs:
        readme = directory / "README.md"
        text = readme.read_text(encoding="utf-8")
        start, stop = text.find(BEGIN), text.find(END)
        if start >= 0 and stop > start:  # the page shows the tables as they will be, even under --check
            text = text[:start] + render(directory) + text[stop + len(END) :]
        wanted[DOCS_MODULES / f"{directory.name}.md"] = docs_page(directory, text)
    for path, text in wanted.items():
        if _write(path, text, check=check):
            changed.append(path)
    for stale in sorted(DOCS_MODULES.glob("*.md")) if DOCS_MODULES.exists() else []:
        if stale not in wanted:  # a module that is gone
            changed.append(stale)
            if not check:
                stale.unlink()
    return changed


def default_targets() -> list[Path]:
    """Every module or example README that carries the markers."""
    found = []
    for base in ("modules", "examples"):
        for readme in sorted((ROOT / base).glob("*/README.md")):
            if BEGIN in readme.read_text(encoding="utf-8"):
                found.append(readme.parent)
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "directories", nargs="*", type=Path, help="module directories (default: all with markers)"
    )
    parser.add_argument("--check", action="store_true", help="change nothing; exit 1 when a README is stale")
    args = parser.parse_args(argv)
    directories = [d.resolve() for d in args.directories] or default_targets()
    stale: list[Path] = []
    try:
        for directory in directories:
            if update(directory / "README.md", check=args.check):
                stale.append(directory / "README.md")
        stale += update_docs(check=args.check)
    except TfDocsError as exc:
        print(f"tfdocs: {exc}", file=sys.stderr)
        return 2
    for path in stale:
        shown = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path
        verb = "is out of date (run: python scripts/tfdocs.py)" if args.check else "updated"
        print(f"{shown} {verb}", file=sys.stderr if args.check else sys.stdout)
    return 1 if args.check and stale else 0


if __name__ == "__main__":
    sys.exit(main())
