"""The accounting of a queue demo, printed: one row per message sent, then the totals and the verdict
(shared by the scheduled-retry and native-retry demos; see :mod:`.accounting`)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from serverless_retry_tools.local.demos.accounting import Accounting, MessageFate
from serverless_retry_tools.local.demos.demo_frame import ProgressLines

__all__ = ["print_fates", "print_totals"]


def print_fates(accounting: Accounting, out: ProgressLines, *, label_order: Sequence[str] = ()) -> None:
    """One row per message: by label in ``label_order`` (others last), then by order id."""
    rank = {label: n for n, label in enumerate(label_order)}
    rows = sorted(accounting.fates, key=lambda f: (rank.get(f.sent.label, 99), f.sent.order_id))
    width = 26 if accounting.archived else 17  # "archived: non-retryable"
    out(
        f"{'order':<9} {'behaviour':<18} {'outcome':<{width}} {'attempts':>8}  {'transports used':<32} evidence",
        stamp=False,
    )
    for fate in rows:
        transports = _compact(fate.transports)
        extra = f" ({fate.deliveries} deliveries)" if fate.deliveries > 1 else ""
        flag = (
            ""
            if not fate.sent.expected or fate.sent.expected == fate.outcome
            else "   <-- expected " + fate.sent.expected
        )
        out(
            f"{fate.sent.order_id:<9} {fate.sent.label:<18} {_outcome(fate):<{width}} {fate.attempts:>8}  "
            f"{transports:<32} {fate.evidence}{extra}{flag}",
            stamp=False,
        )


def _outcome(fate: MessageFate) -> str:
    """The outcome, and where it is kept when that is the archive: "archived: exhausted"."""
    return f"archived: {fate.outcome}" if fate.evidence == "archive" else fate.outcome


def _compact(transports: tuple[str, ...]) -> str:
    if not transports:
        return "-"
    parts: list[str] = []
    for name, count in _runs(transports):
        parts.append(f"{name} x{count}" if count > 1 else name)
    return " > ".join(parts)


def _runs(items: tuple[str, ...]) -> list[tuple[str, int]]:
    runs: list[tuple[str, int]] = []
    for item in items:
        if runs and runs[-1][0] == item:
            runs[-1] = (item, runs[-1][1] + 1)
        else:
            runs.append((item, 1))
    return runs


def print_totals(accounting: Accounting, sent: int, out: ProgressLines) -> bool:
    """The totals, anything unaccounted, in two places or unexpected; True when there is none."""
    exhausted = accounting.exhausted_by_reason
    totals = accounting.totals
    by_reason = ", ".join(f"{k} {v}" for k, v in exhausted.items()) or "none"
    out(stamp=False)
    out(
        f"sent {sent} = processed {accounting.processed} + retry-exhausted {sum(exhausted.values())} "
        f"({by_reason}) + DLQ {accounting.dlq}",
        stamp=False,
    )
    archived = accounting.archived
    if archived:
        out(
            f"archived {sum(archived.values())} of them (the archiver took them from the queues): "
            + ", ".join(f"{k} {v}" for k, v in sorted(archived.items())),
            stamp=False,
        )
    evidence = Counter(f.evidence for f in accounting.fates if f.outcome == "processed")
    out(
        "processed evidence: "
        + (", ".join(f"{k} {v}" for k, v in sorted(evidence.items())) or "none")
        + f"; consumer EMF Processed total {accounting.emf_processed}",
        stamp=False,
    )
    transports = Counter(t for f in accounting.fates for t in f.transports)
    out(
        "retries by transport: " + (", ".join(f"{k} {v}" for k, v in sorted(transports.items())) or "none"),
        stamp=False,
    )
    mismatched = [f for f in accounting.fates if f.sent.expected and f.sent.expected != f.outcome]
    ok = accounting.balanced and not mismatched
    if totals["unaccounted"]:
        out(f"UNACCOUNTED: {totals['unaccounted']} message(s) are in no final place", stamp=False)
    if totals["conflict"]:
        out(f"CONFLICT: {totals['conflict']} message(s) are in more than one final place", stamp=False)
    if accounting.unknown_finals:
        out(f"UNKNOWN: {len(accounting.unknown_finals)} final message(s) that were never sent", stamp=False)
        for final in accounting.unknown_finals[:5]:  # their ids say why (e.g. unsigned: a chain apart)
            out(f"  {final.place}: {final.id} ({final.outcome}, attempt {final.attempt})", stamp=False)
    if mismatched:
        out(
            f"UNEXPECTED: {len(mismatched)} message(s) ended otherwise than the example's policy says",
            stamp=False,
        )
    out(("OK: every message is accounted for" if ok else "FAILED: see above"), stamp=False)
    return ok
