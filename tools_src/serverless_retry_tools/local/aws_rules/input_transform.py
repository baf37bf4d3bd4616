"""What an EventBridge rule hands its target: Input, InputPath or InputTransformer (pure).

AWS's rules (EventBridge user guide, "Amazon EventBridge input transformation", and the
InputTransformer API reference):

- ``Input``: that constant JSON text, verbatim; ``InputPath``: the JSON at that path of the event;
  neither: the whole event as JSON.
- ``InputTransformer``: each ``<name>`` of ``InputPathsMap`` (or a predefined variable:
  ``aws.events.rule-arn``, ``aws.events.rule-name``, ``aws.events.event.ingestion-time``,
  ``aws.events.event`` (without ``detail``), ``aws.events.event.json``) in ``InputTemplate`` is
  replaced by its value. Inside a JSON string (between quotes) the value goes in as text, escaped
  for that string; outside quotes in a JSON template (one that starts with ``{`` or ``[``) it goes in
  as JSON (``<detail>`` becomes the detail object, a string value gets its quotes); in a plain-text
  template it goes in as text.
- Paths are JSONPath in dot notation with array indices and ``*`` (``$.detail.meta``,
  ``$.resources[0]``, ``$.detail.items[*].sku``).

A path that finds nothing becomes ``null`` in a JSON position and nothing inside a string (AWS does
not document this case; the emulator's choice).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

__all__ = ["MISSING", "json_path", "render_template", "target_input"]


class _Missing:
    def __repr__(self) -> str:
        return "MISSING"


MISSING: Any = _Missing()
_TOKEN = re.compile(r"\.(\*|[^.\[\]]+)|\[(\*|\d+)\]|\['([^']*)'\]")
_PLACEHOLDER = re.compile(r"<([A-Za-z0-9_.\-]+)>")


def json_path(document: Any, path: str) -> Any:
    """The value at ``path`` (``$``-rooted); a list when the path has a wildcard; MISSING if none."""
    path = path.strip()
    if not path.startswith("$"):
        raise ValueError(f"an input path starts with '$': {path!r}")
    rest = path[1:]
    nodes: list[Any] = [document]
    wildcard = False
    position = 0
    while position < len(rest):
        match = _TOKEN.match(rest, position)
        if match is None:
            raise ValueError(f"unsupported JSONPath syntax at {rest[position:]!r} in {path!r}")
        position = match.end()
        key = match.group(1) or match.group(3)
        index = match.group(2)
        found: list[Any] = []
        for node in nodes:
            if key == "*" or index == "*":
                wildcard = True
                found.extend(
                    node.values() if isinstance(node, Mapping) else node if isinstance(node, list) else []
                )
            elif index is not None:
                if isinstance(node, list) and int(index) < len(node):
                    found.append(node[int(index)])
            elif key is not None and isinstance(node, Mapping) and key in node:
                found.append(node[key])
        nodes = found
    if wildcard:
        return nodes
    return nodes[0] if nodes else MISSING


def _as_json(value: Any) -> str:
    return "null" if value is MISSING else json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _as_text(value: Any) -> str:
    if value is MISSING:
        return ""
    return value if isinstance(value, str) else _as_json(value)


def render_template(template: str, values: Mapping[str, Any]) -> str:
    """``template`` with each known ``<name>`` replaced as described in the module docstring."""
    json_template = template.lstrip()[:1] in ("{", "[")
    out: list[str] = []
    in_string = False
    i = 0
    while i < len(template):
        char = template[i]
        if char == "<":
            match = _PLACEHOLDER.match(template, i)
            if match is not None and match.group(1) in values:
                value = values[match.group(1)]
                if in_string:
                    out.append(json.dumps(_as_text(value), ensure_ascii=False)[1:-1])
                elif json_template:
                    out.append(_as_json(value))
                else:
                    out.append(_as_text(value))
                i = match.end()
                continue
        if char == "\\" and in_string and i + 1 < len(template):
            out.append(template[i : i + 2])
            i += 2
            continue
        if char == '"':
            in_string = not in_string
        out.append(char)
        i += 1
    return "".join(out)


def target_input(
    target: Mapping[str, Any],
    event: Mapping[str, Any],
    *,
    rule_arn: str,
    rule_name: str,
    ingestion_time: str,
) -> str:
    """The text a rule target receives for ``event`` (the event as EventBridge shows it)."""
    if target.get("Input") is not None:
        return str(target["Input"])
    if target.get("InputPath"):
        return _as_json(json_path(event, str(target["InputPath"])))
    transformer = target.get("InputTransformer")
    if not transformer:
        return _as_json(dict(event))
    values: dict[str, Any] = {
        name: json_path(event, path) for name, path in (transformer.get("InputPathsMap") or {}).items()
    }
    values.update(
        {
            "aws.events.rule-arn": rule_arn,
            "aws.events.rule-name": rule_name,
            "aws.events.event.ingestion-time": ingestion_time,
            "aws.events.event": {k: v for k, v in event.items() if k != "detail"},
            "aws.events.event.json": dict(event),
        }
    )
    return render_template(str(transformer.get("InputTemplate") or ""), values)
