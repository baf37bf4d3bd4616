"""Metrics in CloudWatch embedded metric format (EMF) log lines, as CloudWatch Logs extracts them.

A line is a JSON object whose ``_aws.CloudWatchMetrics`` lists directives: a Namespace, Dimensions
(a list of dimension sets, each a list of keys of the object) and Metrics (``{"Name", "Unit"}``);
each metric's value (a number, or a list of numbers) is the object's member of that name, and each
dimension set makes one metric with those members' values ("Specification: Embedded metric format"
in the CloudWatch user guide). A line that is not such an object yields nothing.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

__all__ = ["EmfDatum", "parse_emf"]


@dataclass(frozen=True)
class EmfDatum:
    namespace: str
    name: str
    dimensions: tuple[tuple[str, str], ...]  # sorted
    value: float
    unit: str | None
    timestamp_ms: int | None  # _aws.Timestamp as the function wrote it


def _numbers(value: Any) -> list[float]:
    items = value if isinstance(value, list) else [value]
    return [float(v) for v in items if isinstance(v, int | float) and not isinstance(v, bool)]


def parse_emf(line: str) -> list[EmfDatum]:
    text = line.strip()
    if not text.startswith("{") or "CloudWatchMetrics" not in text:
        return []
    try:
        blob = json.loads(text)
    except ValueError:
        return []
    meta = blob.get("_aws") if isinstance(blob, dict) else None
    if not isinstance(meta, dict) or not isinstance(meta.get("CloudWatchMetrics"), list):
        return []
    stamp = meta.get("Timestamp")
    timestamp_ms = int(stamp) if isinstance(stamp, int | float) else None
    out: list[EmfDatum] = []
    for directive in meta["CloudWatchMetrics"]:
        if not isinstance(directive, dict) or not isinstance(directive.get("Namespace"), str):
            continue
        sets = directive.get("Dimensions") or [[]]
        for metric in directive.get("Metrics") or []:
            name = metric.get("Name") if isinstance(metric, dict) else None
            if not isinstance(name, str) or name not in blob:
                continue
            for keys in sets:
                if not isinstance(keys, list) or any(str(blob.get(k, "")) == "" for k in keys):
                    continue
                dimensions = tuple(sorted((str(k), str(blob[k])) for k in keys))
                for value in _numbers(blob[name]):
                    out.append(
                        EmfDatum(
                            directive["Namespace"], name, dimensions, value, metric.get("Unit"), timestamp_ms
                        )
                    )
    return out
