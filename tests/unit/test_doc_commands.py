"""Every command the documentation gives a user is checked against the real thing.

The commands are the shell lines of README.md's and docs/**/*.md's code blocks (every line of a
``bash``/``sh`` block, the ``$ `` lines of a ``text``/``console`` block, continuation lines joined,
``&&``, ``;``, ``|`` and ``$(...)`` split into their commands), the ``serverless-retry``, ``./build.sh``
and ``python -m`` commands written inline, and the examples of every ``serverless-retry ... --help``.
Each is, by its program:

- ``serverless-retry``: parsed by the CLI's own parser (every option must exist and take its value);
  then ``simulate`` is run (it needs no AWS), and ``inspect``, ``redrive``, ``discard``, ``retries`` and
  ``move-tasks`` run up to their first AWS client, so the checks they make before AWS (redrive's
  options, discard's archive, ...) hold too; ``package``, ``demo`` and ``local`` are parsed only (pip,
  Terraform). A command that changes a queue or a schedule must carry ``--yes``: without it the CLI
  asks on a terminal and, in a script, refuses (``commands/confirm.py``), so the example would not do
  what its text says. An inline span that is no whole command (``serverless-retry redrive
  --to-function``) must name a real subcommand and real options.
- ``./build.sh``: a verb the script dispatches (``demo``'s arguments through the CLI's parser).
- ``python -m MODULE`` / ``python scripts/X.py``: the module's own argparse parser, stopped right after
  it parsed (nothing runs).
- ``aws``, ``terraform``, ``pip``, ``git``: they need a real AWS account or the network; listed in
  ``NEEDS_THE_OUTSIDE`` with the reason (the operator Lambda's payload is still checked by the
  Lambda's own option parser). Shell plumbing (``cd``, ``export``, ``for``, ``kill``, ...) is not ours.

Anything else fails the test until it is checked here or listed with a reason."""

from __future__ import annotations

import argparse
import contextlib
import importlib
import importlib.util
import inspect
import io
import json
import re
import shlex
import shutil
import sys
import zipfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn

import pytest
from serverless_retry.errors import PolicyError
from serverless_retry.handlers.redrive_queue import ENV_FROM_QUEUE_URLS, ENV_TO_QUEUE_URL, options_for
from serverless_retry.redrive.options import OptionsError
from serverless_retry_tools import cli
from serverless_retry_tools.commands import aws
from serverless_retry_tools.commands.args import UsageError
from serverless_retry_tools.commands.confirm import confirm
from serverless_retry_tools.policy_input import PolicyFileError

from tests.support.wheels import make_wheel

ROOT = Path(__file__).resolve().parents[2]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
CLI_NAMES = ("serverless-retry", ".venv/bin/serverless-retry")
PYTHONS = ("python", "python3", ".venv/bin/python")
# A queue URL for every $VARIABLE, $(...) and <placeholder> the examples use, one per name (a redrive
# from a queue to itself is refused).
URL = "https://sqs.us-east-1.amazonaws.com/123456789012/doc-example"


def _url(name: str) -> str:
    return f"{URL}-{re.sub(r'[^a-z0-9]+', '-', name.lower()).strip('-')}"


NEEDS_THE_OUTSIDE = {
    "aws": "the AWS CLI against a real account (the operator Lambda's payload is checked below)",
    "terraform": "deploys to a real AWS account; tests/terraform runs the modules' own roots",
    "pip": "installs from GitHub or PyPI over the network; tests/functional/test_release.py installs the built wheel",
    "git": "clones from GitHub over the network",
}
SHELL = {"cd", "export", "eval", "for", "do", "done", "break", "sleep", "seq", "kill", "mkdir", "jq", "["}
# Blocks whose every line is a command; in the others only `$ ` lines are (the rest is output).
SCRIPT_BLOCKS = {"bash", "sh", "shell"}
# A command that changes a queue or a schedule: the CLI asks first (commands/confirm.py).
CHANGES = {
    "redrive": lambda a: not a.dry_run,
    "discard": lambda a: not a.dry_run,
    "retries": lambda a: bool(a.cancel or a.run_now),
    "move-tasks": lambda a: bool(a.cancel),
}
# Commands that talk to AWS: run up to their first client. Parsed only: pip, the emulator, Terraform.
TO_AWS = {"inspect", "redrive", "discard", "retries", "move-tasks"}


@dataclass(frozen=True)
class DocCommand:
    where: str  # file:line, or the --help it is an example of
    argv: tuple[str, ...]
    whole: bool = True  # False: an inline span, which may be a fragment of a command

    def __str__(self) -> str:
        return f"{self.where}: {shlex.join(self.argv)}".replace(URL + "-", "URL:")


_FENCE = re.compile(r"^\s*(`{3,}|~{3,})\s*([\w-]*)")
_SUBSTITUTION = re.compile(r"\$\(([^()]*)\)")
_PLACEHOLDER = re.compile(r"<[A-Za-z][^<>]*>")
_REDIRECT = re.compile(r"(?<=\s)\d?>>?\s*(?:/dev/null|&\d)")
_VARIABLE = re.compile(r"\$\{?(\w+)\}?")
_ASSIGNMENT = re.compile(r"^\w+=")
_INLINE = re.compile(r"`((?:serverless-retry|\./build\.sh|python -m) [^`]+)`")
_OPERATORS = {";", "&&", "||", "|", "&"}


def _split(line: str) -> list[list[str]]:
    """The commands of one shell line: its $(...) first, then each one between operators."""
    found = [argv for inner in _SUBSTITUTION.findall(line) for argv in _split(inner)]
    line = _SUBSTITUTION.sub(lambda m: _url(m[1].split()[-1]), line)
    line = _REDIRECT.sub(" ", _PLACEHOLDER.sub(lambda m: _url(m[0]), line))
    lexer = shlex.shlex(line, posix=True, punctuation_chars=";&|")
    lexer.whitespace_split = True
    current: list[str] = []
    for token in [*lexer, ";"]:
        if token in _OPERATORS:
            while current and _ASSIGNMENT.match(current[0]):
                current.pop(0)  # VAR=value before a command
            if current:
                found.append(
                    [
                        _VARIABLE.sub(lambda m: _url(m[1]) if "URL" in m[1] else "doc-example", t)
                        for t in current
                    ]
                )
            current = []
        else:
            current.append(token)
    return found


def _block_lines(lines: list[str]) -> Iterator[tuple[int, str]]:
    """(line number, logical command line) of every fenced shell or output block."""
    fence: str | None = None
    language = ""
    pending: tuple[int, str] | None = None
    for number, line in enumerate(lines, 1):
        match = _FENCE.match(line)
        if match and (fence is None or match[1] == fence):
            fence, language = (match[1], match[2].lower()) if fence is None else (None, "")
            continue
        if fence is None or language in {"hcl", "python", "json", "yaml", "mermaid", "terraform"}:
            continue
        text = line.strip()
        if pending is not None:
            pending = (pending[0], pending[1] + " " + text.rstrip("\\"))
        elif language in SCRIPT_BLOCKS and text and not text.startswith("#"):
            pending = (number, text.rstrip("\\"))
        elif text.startswith("$ "):
            pending = (number, text[2:].rstrip("\\"))
        if pending is not None and not text.endswith("\\"):
            yield pending
            pending = None


def _doc_commands() -> list[DocCommand]:
    found = []
    for path in DOCS:
        name = str(path.relative_to(ROOT))
        lines = path.read_text(encoding="utf-8").splitlines()
        for number, line in _block_lines(lines):
            found += [DocCommand(f"{name}:{number}", tuple(argv)) for argv in _split(line)]
        fence: str | None = None
        for number, line in enumerate(lines, 1):
            match = _FENCE.match(line)
            if match and (fence is None or match[1] == fence):
                fence = match[1] if fence is None else None
            elif fence is None:
                for span in _INLINE.findall(line):
                    found += [
                        DocCommand(f"{name}:{number}", tuple(argv), whole=False) for argv in _split(span)
                    ]
    return found


def _parsers(
    parser: argparse.ArgumentParser, path: tuple[str, ...] = ()
) -> Iterator[tuple[tuple[str, ...], Any]]:
    yield path, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _parsers(sub, (*path, name))


def _help_examples() -> list[DocCommand]:
    """The examples of every --help (a terminal's documentation)."""
    found = []
    for path, parser in _parsers(cli.build_parser()):
        logical = re.sub(r"\\\n\s*", " ", parser.epilog or "")
        for line in logical.splitlines():
            if line.strip().startswith("serverless-retry "):
                where = f"serverless-retry {' '.join(path)} --help"
                found += [DocCommand(where, tuple(argv)) for argv in _split(line.strip())]
    return found


COMMANDS = _doc_commands()
EXAMPLES = _help_examples()


class _Parsed(Exception):
    """Raised by ArgumentParser.parse_args once it parsed: the program stops before doing anything."""


class _ReachedAws(Exception):
    """Raised where a command creates its first AWS client: everything before it passed."""


def _fail(command: DocCommand, why: str) -> NoReturn:
    pytest.fail(f"{command}\n  {why}", pytrace=False)


def _parse(argv: Sequence[str]) -> tuple[argparse.Namespace | None, str]:
    errors = io.StringIO()
    try:
        with contextlib.redirect_stderr(errors), contextlib.redirect_stdout(io.StringIO()):
            return cli.build_parser().parse_args(list(argv)), ""
    except SystemExit as exc:
        return None, errors.getvalue().strip() or f"exit {exc.code}"


def _options_of(argv: Sequence[str]) -> tuple[tuple[str, ...], set[str]]:
    """The subcommand path an inline fragment names and the options its parser knows."""
    by_path = dict(_parsers(cli.build_parser()))
    path: tuple[str, ...] = ()
    for word in argv:
        if (*path, word) in by_path:
            path = (*path, word)
        elif not word.startswith("-"):
            break
    return path, {o for a in by_path[path]._actions for o in a.option_strings}


def _check_fragment(command: DocCommand) -> str:
    path, known = _options_of(command.argv[1:])
    if not path:
        _fail(command, "names no subcommand of serverless-retry")
    unknown = [w for w in command.argv if w.startswith("-") and w.split("=")[0] not in known]
    if unknown:
        _fail(command, f"serverless-retry {' '.join(path)} has no option {', '.join(unknown)}")
    return "fragment"


def _run_to_aws(command: DocCommand, args: argparse.Namespace, monkeypatch: pytest.MonkeyPatch) -> None:
    def reached(*_: object) -> NoReturn:
        raise _ReachedAws

    monkeypatch.setattr(aws, "_client", reached)
    try:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            args.func(args)
    except _ReachedAws:
        return
    except (UsageError, OptionsError, PolicyError, PolicyFileError) as exc:
        _fail(command, f"refused before it reached AWS: {exc}")
    _fail(command, "finished without an AWS client")


def _run_simulate(command: DocCommand, args: argparse.Namespace, tmp_path: Path) -> None:
    # In a directory of its own: the example's --plot must not rewrite the pictures under docs/.
    (tmp_path / "docs").mkdir()
    policy = ROOT / "docs" / "example-policy.json"
    shutil.copy(policy, tmp_path / "docs" / policy.name)
    shutil.copy(policy, tmp_path / "policy.json")  # README's: the user's own policy file
    try:
        with contextlib.chdir(tmp_path), contextlib.redirect_stdout(io.StringIO()) as out:
            code = args.func(args)
    except (UsageError, PolicyError, PolicyFileError) as exc:
        _fail(command, f"refused: {exc}")
    if code != 0:
        _fail(command, f"exit status {code}:\n{out.getvalue()}")


def _check_cli(
    command: DocCommand, argv: Sequence[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> str:
    args, error = _parse(argv)
    if args is None:
        if not command.whole:
            return _check_fragment(command)
        _fail(command, f"the CLI's parser refuses it: {error}")
    if args.command in CHANGES and CHANGES[args.command](args) and not args.yes:
        _fail(
            command,
            f"{args.command} changes something here: from a script it needs --yes (it asks otherwise)",
        )
    if not command.whole:  # inline: maybe a name in a sentence (`serverless-retry simulate`), not a run
        return "parsed"
    if args.command == "simulate":
        _run_simulate(command, args, tmp_path)
        return "run"
    if args.command in TO_AWS:
        _run_to_aws(command, args, monkeypatch)
        return "run up to AWS"
    return "parsed"


def _build_verbs() -> set[str]:
    return set(re.findall(r"^\s*([\w-]+)\) shift; cmd_", (ROOT / "build.sh").read_text(), re.MULTILINE))


def _check_build_sh(command: DocCommand, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> str:
    verb, *rest = command.argv[1:] or [""]
    if verb not in _build_verbs():
        _fail(command, f"./build.sh has no verb {verb!r}: {sorted(_build_verbs())}")
    if verb == "demo":  # cmd_demo runs: serverless-retry demo --work-dir build/demo/<time> "$@"
        return _check_cli(command, ["demo", "--work-dir", "build/demo/x", *rest], monkeypatch, tmp_path)
    return "parsed"


def _parse_main(command: DocCommand, main: Any, argv: list[str], monkeypatch: pytest.MonkeyPatch) -> str:
    original = argparse.ArgumentParser.parse_args

    def stop(self: argparse.ArgumentParser, args: Any = None, namespace: Any = None) -> NoReturn:
        original(self, args, namespace)
        raise _Parsed

    monkeypatch.setattr(argparse.ArgumentParser, "parse_args", stop)
    errors = io.StringIO()
    try:
        with contextlib.redirect_stderr(errors):
            if inspect.signature(main).parameters:
                main(argv)
            else:
                monkeypatch.setattr(sys, "argv", [command.argv[1], *argv])
                main()
    except _Parsed:
        return "parsed"
    except SystemExit as exc:
        _fail(command, f"its parser refuses it (exit {exc.code}): {errors.getvalue().strip()}")
    _fail(command, "its main() returned without parsing arguments")


def _check_python(command: DocCommand, monkeypatch: pytest.MonkeyPatch) -> str:
    if command.argv[1:2] == ("-m",):
        name, argv = command.argv[2], list(command.argv[3:])
        spec = importlib.util.find_spec(name)
        if spec is None or spec.origin is None:
            _fail(command, f"no module {name}")
        if "argparse" not in Path(spec.origin).read_text(encoding="utf-8"):
            _fail(command, f"{name} parses no arguments with argparse: check it another way, or list it")
        return _parse_main(command, importlib.import_module(name).main, argv, monkeypatch)
    script = ROOT / command.argv[1]
    if script.suffix != ".py" or not script.is_file():
        _fail(command, f"no script {command.argv[1]} in the repository")
    spec = importlib.util.spec_from_file_location(f"_doc_{script.stem}", script)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, spec.name, module)
    spec.loader.exec_module(module)
    return _parse_main(command, module.main, list(command.argv[2:]), monkeypatch)


def _check_aws_cli(command: DocCommand) -> str:
    argv = list(command.argv)
    if argv[1:3] == ["lambda", "invoke"] and "--payload" in argv:
        payload = json.loads(argv[argv.index("--payload") + 1])
        environment = {ENV_FROM_QUEUE_URLS: URL, ENV_TO_QUEUE_URL: URL + "-source"}
        try:
            options_for(payload, environment)  # what the operator redrive Lambda does with its event
        except OptionsError as exc:
            _fail(command, f"the operator Lambda refuses this payload: {exc}")
    return "needs the outside"


def check(command: DocCommand, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> str:
    """How the command was checked; fails the test when it is wrong or unknown."""
    for variable in ("AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_SQS"):
        monkeypatch.delenv(variable, raising=False)  # "now" from the system clock: no emulator asked
    program = command.argv[0]
    if program in CLI_NAMES:
        return _check_cli(command, command.argv[1:], monkeypatch, tmp_path)
    if program == "./build.sh":
        return _check_build_sh(command, monkeypatch, tmp_path)
    if program in PYTHONS:
        return _check_python(command, monkeypatch)
    if program == "aws":
        return _check_aws_cli(command)
    if program in NEEDS_THE_OUTSIDE:
        return "needs the outside"
    if program in SHELL:
        return "shell"
    _fail(command, f"{program}: a command this test cannot check; check it here or list it with a reason")


@pytest.mark.parametrize("command", COMMANDS, ids=str)
def test_every_command_in_the_docs_does_what_it_says(
    command: DocCommand, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    check(command, monkeypatch, tmp_path)


@pytest.mark.parametrize("command", EXAMPLES, ids=str)
def test_every_example_of_the_cli_help_parses(
    command: DocCommand, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    check(command, monkeypatch, tmp_path)


def test_the_extraction_finds_the_commands_of_each_kind_of_block() -> None:
    """A guard on the extraction itself: a change of markup must not make the checks above vacuous."""
    where = {c.where.split(":")[0] for c in COMMANDS}
    assert {"README.md", "docs/operations.md", "docs/packaging.md", "docs/local-emulator.md"} <= where
    shown = {shlex.join(c.argv) for c in COMMANDS}
    assert "./build.sh demo self-healing" in shown  # a bash block, its comment cut
    assert any(
        s.startswith("serverless-retry inspect --queue-url") and "--oldest 3" in s for s in shown
    )  # `$ ` line
    assert any(
        "--outcome exhausted --error-type TimeoutError --dry-run" in s for s in shown
    )  # continued line
    assert "python -m serverless_retry_tools.ops_sandbox" in shown  # inside eval "$(...)"
    assert "aws sqs get-queue-url --queue-name orders-exhausted --query QueueUrl --output text" in shown
    assert any(not c.whole for c in COMMANDS)
    assert len(EXAMPLES) >= 10


def test_a_redrive_without_yes_in_a_script_changes_nothing(capsys: pytest.CaptureFixture[str]) -> None:
    """Why CHANGES requires --yes: the CLI refuses such a command when stdin is not a terminal."""
    argv = ["redrive", "--from-queue-url", URL, "--to-queue-url", URL + "-source"]
    args, _ = _parse(argv)
    assert args is not None
    assert CHANGES["redrive"](args)
    assert not args.yes
    with pytest.raises(UsageError, match="give --yes"):
        confirm(args, "move?", stdin=io.StringIO())
    assert _parse([*argv, "--dry-run"])[0] is not None


@pytest.fixture
def wheels(tmp_path: Path) -> Path:
    """Stand-ins for serverless-retry's dependencies: pip resolves offline."""
    d = tmp_path / "wheels"
    d.mkdir()
    make_wheel(d, "jmespath", "1.0.1")
    make_wheel(d, "aws-lambda-powertools", "3.0.0", ["jmespath"], {"aws_lambda_powertools/__init__.py": ""})
    make_wheel(d, "google-re2", "1.1.20250722", [], {"re2/__init__.py": ""})
    return d


def test_the_self_healing_zip_of_the_packaging_page_holds_the_modules_handlers(
    wheels: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """docs/packaging.md's self-healing zip, built as written (offline: --find-links to stand-in
    wheels): an empty source directory and serverless_retry, whose handlers the module runs."""
    (built,) = [c for c in COMMANDS if c.where.startswith("docs/packaging.md") and "build/heal.zip" in c.argv]
    (mkdir,) = [c for c in COMMANDS if c.where.startswith("docs/packaging.md") and c.argv[0] == "mkdir"]
    monkeypatch.chdir(tmp_path)
    Path(mkdir.argv[-1]).mkdir(parents=True)
    argv = [*built.argv[1:], "--find-links", str(wheels), "--no-index"]
    with contextlib.redirect_stdout(io.StringIO()):
        assert cli.main(argv) == 0
    names = zipfile.ZipFile(tmp_path / "build" / "heal.zip").namelist()
    assert "serverless_retry/handlers/enrichment.py" in names
    assert "serverless_retry/handlers/redrive.py" in names
    assert "aws_lambda_powertools/__init__.py" in names
    assert not [n for n in names if n.startswith("build/")]


# Where each subcommand of `serverless-retry --help` is documented, beside README's list of them.
PAGES = {"package": "docs/packaging.md", "demo": "docs/local-emulator.md", "local": "docs/local-emulator.md"}


def test_every_subcommand_is_in_the_readme_and_has_its_page() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    operations = (ROOT / "docs" / "operations.md").read_text(encoding="utf-8")
    subcommands = [path[0] for path, _ in _parsers(cli.build_parser()) if len(path) == 1]
    assert {"discard", "retries", "move-tasks"} <= set(subcommands)
    for name in subcommands:
        assert f"`{name}`" in readme or f"serverless-retry {name}" in readme, (
            f"README.md does not name {name}"
        )
        if name in PAGES:  # demo: `./build.sh demo` runs `serverless-retry demo`
            page = (ROOT / PAGES[name]).read_text(encoding="utf-8")
            assert f"serverless-retry {name}" in page or f"./build.sh {name}" in page, name
        else:
            assert f"### `serverless-retry {name}`" in operations, (
                f"docs/operations.md has no section on {name}"
            )
