"""Help texts are plain text.

The module docstrings that serve as argparse descriptions are written for readers of the source, in
reStructuredText (double-backquoted literals, roles such as :mod: and :class:); a terminal would show
that markup literally. ``plain_parser`` rewrites a parser's description, epilog and every help string
(its subcommands' included) to plain text once the parser is built.
"""

from __future__ import annotations

import argparse
import re

__all__ = ["plain", "plain_parser"]

# :role:`target`, :role:`~a.b.Name` (the tilde shows the last component only), :role:`text <target>`.
_ROLE = re.compile(r":(?:[a-z]+:)?(?:mod|class|func|meth|attr|data|exc|obj|const|ref|doc):`([^`]+)`")
_LITERAL = re.compile(r"``(.+?)``", re.DOTALL)


def _role_text(match: re.Match[str]) -> str:
    target = match.group(1)
    if labelled := re.fullmatch(r"(.+?)\s*<[^>]+>", target, re.DOTALL):
        return labelled.group(1)
    if target.startswith("~"):
        return target[1:].rsplit(".", 1)[-1]
    return target


def plain(text: str) -> str:
    """``text`` without reStructuredText literals and roles: what they enclose stays."""
    return _LITERAL.sub(r"\1", _ROLE.sub(_role_text, text))


def plain_parser(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """Make every text ``parser`` prints plain, recursively through its subcommands."""
    if parser.description:
        parser.description = plain(parser.description)
    if parser.epilog:
        parser.epilog = plain(parser.epilog)
    for action in parser._actions:
        if action.help and action.help != argparse.SUPPRESS:
            action.help = plain(action.help)
        if isinstance(action, argparse._SubParsersAction):
            for listed in action._choices_actions:  # the subcommand list of the parent's help
                if listed.help:
                    listed.help = plain(listed.help)
            for subparser in action.choices.values():
                plain_parser(subparser)
    return parser
