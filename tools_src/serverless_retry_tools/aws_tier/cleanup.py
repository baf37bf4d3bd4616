"""Every resource of one run, found by its name prefix: listed (:func:`inventory`) and deleted
(:func:`sweep`).

``terraform destroy`` removes what the state knows; the sweep is the second line for what it does
not: an apply interrupted before its state was written, a destroy that failed half way, the log
groups Lambda creates on its own, a probe the fidelity checks left. Names are matched by prefix
(``srt-<8 hex>``, unique per run), so a sweep never touches another run's resources or anything of
the account's own. Each deletion is tried once per pass; a sweep makes a few passes because some
deletions wait on others (a role's policies, a function's event source mappings).
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterator
from typing import Any

from serverless_retry_tools.aws_tier.targets import Target

__all__ = ["PREFIX_PATTERN", "inventory", "sweep"]

PREFIX_PATTERN = re.compile(r"^srt-[0-9a-f]{8}$")
Found = dict[str, list[str]]


def _pages(client: Any, operation: str, key: str, **kwargs: Any) -> Iterator[Any]:
    if client.can_paginate(operation):
        for page in client.get_paginator(operation).paginate(**kwargs):
            yield from page.get(key, [])
    else:
        yield from getattr(client, operation)(**kwargs).get(key, [])


def _listers(target: Target, prefix: str) -> dict[str, Callable[[], list[str]]]:
    def queues() -> list[str]:
        urls = target.client("sqs").list_queues(QueueNamePrefix=prefix).get("QueueUrls", [])
        return sorted(str(u) for u in urls)

    def functions() -> list[str]:
        names = (f["FunctionName"] for f in _pages(target.client("lambda"), "list_functions", "Functions"))
        return sorted(n for n in names if n.startswith(prefix))

    def layers() -> list[str]:
        names = (x["LayerName"] for x in _pages(target.client("lambda"), "list_layers", "Layers"))
        return sorted(n for n in names if n.startswith(prefix))

    def tables() -> list[str]:
        names = _pages(target.client("dynamodb"), "list_tables", "TableNames")
        return sorted(str(n) for n in names if str(n).startswith(prefix))

    def roles() -> list[str]:
        names = (r["RoleName"] for r in _pages(target.client("iam"), "list_roles", "Roles"))
        return sorted(n for n in names if n.startswith(prefix))

    def log_groups() -> list[str]:
        names = (g["logGroupName"] for g in _pages(target.client("logs"), "describe_log_groups", "logGroups"))
        return sorted(n for n in names if prefix in n)

    def schedule_groups() -> list[str]:
        names = (
            g["Name"] for g in _pages(target.client("scheduler"), "list_schedule_groups", "ScheduleGroups")
        )
        return sorted(n for n in names if n.startswith(prefix))

    def schedules() -> list[str]:
        found = _pages(target.client("scheduler"), "list_schedules", "Schedules", NamePrefix=prefix)
        return sorted(f"{s.get('GroupName', 'default')}/{s['Name']}" for s in found)

    def topics() -> list[str]:
        arns = (t["TopicArn"] for t in _pages(target.client("sns"), "list_topics", "Topics"))
        return sorted(a for a in arns if a.rsplit(":", 1)[-1].startswith(prefix))

    def buses() -> list[str]:
        found = target.client("events").list_event_buses(NamePrefix=prefix).get("EventBuses", [])
        return sorted(str(b["Name"]) for b in found)

    def rules() -> list[str]:
        events = target.client("events")
        out: list[str] = []
        for bus in ["default", *buses()]:
            found = events.list_rules(NamePrefix=prefix, EventBusName=bus).get("Rules", [])
            out.extend(f"{bus}/{r['Name']}" for r in found)
        return sorted(out)

    def pipes() -> list[str]:
        found = _pages(target.client("pipes"), "list_pipes", "Pipes", NamePrefix=prefix)
        return sorted(str(p["Name"]) for p in found)

    def alarms() -> list[str]:
        found = _pages(target.client("cloudwatch"), "describe_alarms", "MetricAlarms", AlarmNamePrefix=prefix)
        return sorted(str(a["AlarmName"]) for a in found)

    def dashboards() -> list[str]:
        found = _pages(
            target.client("cloudwatch"), "list_dashboards", "DashboardEntries", DashboardNamePrefix=prefix
        )
        return sorted(str(d["DashboardName"]) for d in found)

    return {
        "pipes": pipes,
        "rules": rules,
        "schedules": schedules,
        "schedule groups": schedule_groups,
        "functions": functions,
        "layers": layers,
        "queues": queues,
        "tables": tables,
        "topics": topics,
        "event buses": buses,
        "alarms": alarms,
        "dashboards": dashboards,
        "roles": roles,
        "log groups": log_groups,
    }


def inventory(target: Target, prefix: str) -> tuple[Found, list[str]]:
    """What exists under ``prefix``, by kind (only kinds with something), and the kinds that could
    not be listed (with the error)."""
    found: Found = {}
    errors = []
    for kind, lister in _listers(target, prefix).items():
        try:
            names = lister()
        except Exception as exc:
            errors.append(f"{kind}: {type(exc).__name__}: {str(exc)[:200]}")
            continue
        if names:
            found[kind] = names
    return found, errors


def _delete(target: Target, kind: str, name: str) -> None:
    if kind == "pipes":
        target.client("pipes").delete_pipe(Name=name)
    elif kind == "rules":
        bus, rule = name.split("/", 1)
        events = target.client("events")
        ids = [t["Id"] for t in events.list_targets_by_rule(Rule=rule, EventBusName=bus).get("Targets", [])]
        if ids:
            events.remove_targets(Rule=rule, EventBusName=bus, Ids=ids, Force=True)
        events.delete_rule(Name=rule, EventBusName=bus, Force=True)
    elif kind == "schedules":
        group, schedule = name.split("/", 1)
        target.client("scheduler").delete_schedule(Name=schedule, GroupName=group)
    elif kind == "schedule groups":
        target.client("scheduler").delete_schedule_group(Name=name)
    elif kind == "functions":
        lam = target.client("lambda")
        for mapping in _pages(lam, "list_event_source_mappings", "EventSourceMappings", FunctionName=name):
            lam.delete_event_source_mapping(UUID=mapping["UUID"])
        lam.delete_function(FunctionName=name)
    elif kind == "layers":
        lam = target.client("lambda")
        for version in _pages(lam, "list_layer_versions", "LayerVersions", LayerName=name):
            lam.delete_layer_version(LayerName=name, VersionNumber=version["Version"])
    elif kind == "queues":
        target.client("sqs").delete_queue(QueueUrl=name)
    elif kind == "tables":
        target.client("dynamodb").delete_table(TableName=name)
    elif kind == "topics":
        target.client("sns").delete_topic(TopicArn=name)
    elif kind == "event buses":
        target.client("events").delete_event_bus(Name=name)
    elif kind == "alarms":
        target.client("cloudwatch").delete_alarms(AlarmNames=[name])
    elif kind == "dashboards":
        target.client("cloudwatch").delete_dashboards(DashboardNames=[name])
    elif kind == "roles":
        iam = target.client("iam")
        for policy in _pages(iam, "list_attached_role_policies", "AttachedPolicies", RoleName=name):
            iam.detach_role_policy(RoleName=name, PolicyArn=policy["PolicyArn"])
        for policy_name in _pages(iam, "list_role_policies", "PolicyNames", RoleName=name):
            iam.delete_role_policy(RoleName=name, PolicyName=policy_name)
        iam.delete_role(RoleName=name)
    elif kind == "log groups":
        target.client("logs").delete_log_group(logGroupName=name)
    else:  # pragma: no cover - every lister has a deleter
        raise ValueError(kind)


def sweep(target: Target, prefix: str, *, passes: int = 4, out: Callable[[str], None] = print) -> Found:
    """Delete everything under ``prefix``; returns what is left after the last pass (nothing, normally).

    Refuses a prefix that is not a run's (``srt-`` and 8 hex digits), so a mistyped one cannot
    match resources that are not the tier's."""
    if not PREFIX_PATTERN.match(prefix):
        raise ValueError(f"{prefix!r} is not a prefix of this tier (srt- and 8 hex digits)")
    left: Found = {}
    for n in range(passes):
        left, errors = inventory(target, prefix)
        for error in errors:
            out(f"cleanup: cannot list {error}")
        if not left:
            return {}
        for kind, names in left.items():
            for name in names:
                try:
                    _delete(target, kind, name)
                    out(f"cleanup: deleted ({kind}) {name}")
                except Exception as exc:
                    out(f"cleanup: {kind} {name}: {type(exc).__name__}: {str(exc)[:200]}")
        if n + 1 < passes:
            time.sleep(min(30.0, 2.0 * target.poll_seconds))
    left, _ = inventory(target, prefix)
    return left
