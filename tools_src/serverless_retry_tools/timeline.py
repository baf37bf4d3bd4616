"""A PNG of a message's retries: attempts on a time axis, each wait coloured by its transport, the
budget (max attempts, max age) as lines. Needs matplotlib, the ``plot`` extra."""

from __future__ import annotations

import importlib.util
from collections.abc import Sequence
from pathlib import Path

from serverless_retry_tools.attempt_rows import AttemptRow

__all__ = ["PLOT_NEEDS", "TRANSPORT_COLOURS", "plot_available", "plot_timeline", "wait_segments"]

PLOT_NEEDS = "--plot needs matplotlib: pip install 'serverless-retry[plot]'"

TRANSPORT_COLOURS = {
    "sqs-delay": "#1f77b4",
    "scheduler": "#ff7f0e",
    "visibility": "#2ca02c",
    "sqs-hops": "#9467bd",
    "native": "#8c564b",
}
FINAL_COLOUR = "#d62728"
WIDTH_IN, HEIGHT_IN, DPI = 8.0, 4.5, 100  # 800 x 450 pixels


def plot_available() -> bool:
    """matplotlib is an optional extra (kept out of the Lambda zip): say so before any output."""
    return importlib.util.find_spec("matplotlib") is not None


def _unit(span: float) -> tuple[float, str]:
    for size, name in ((86_400, "days"), (3600, "hours"), (60, "minutes")):
        if span >= 3 * size:
            return float(size), name
    return 1.0, "seconds"


def wait_segments(rows: Sequence[AttemptRow]) -> list[tuple[str, list[float], list[int]]]:
    """Each wait as (transport, seconds, attempts): a message waits, then runs, so a wait is a flat
    line at its attempt and the next attempt a step up at the moment it runs (a diagonal would show
    progress where there is none). Native retry's last wait ends where SQS moves it to the DLQ."""
    segments: list[tuple[str, list[float], list[int]]] = []
    for index, row in enumerate(rows):
        following = rows[index + 1] if index + 1 < len(rows) else None
        if following is None and not (row.transport == "native" and row.delay_seconds):
            break
        end = following.at_seconds if following is not None else row.at_seconds + row.delay_seconds
        xs, ys = [row.at_seconds, end], [row.attempt, row.attempt]
        if following is not None:
            xs.append(end)
            ys.append(following.attempt)
        segments.append((row.transport or "sqs-delay", xs, ys))
    return segments


def plot_timeline(
    rows: Sequence[AttemptRow],
    path: str | Path,
    *,
    max_attempts: int | None = None,
    max_age_seconds: float | None = None,
    title: str = "retry timeline",
    budget_label: str = "max_attempts",
) -> Path:
    """Draw ``rows`` to ``path`` (PNG, 800 x 450) and return the path. ``budget_label`` names the
    attempt budget's line (native retry's is maxReceiveCount)."""
    if not rows:
        raise ValueError("no attempts to draw")
    if not plot_available():
        raise RuntimeError(PLOT_NEEDS)
    import matplotlib

    matplotlib.use("Agg")  # files only: no display needed
    import matplotlib.pyplot as plt

    timeline = max([r.at_seconds + (r.delay_seconds if not r.retried else 0) for r in rows] + [1.0])
    # max_age is drawn when it is near enough to matter; a budget of a day would flatten a
    # two-minute timeline into one line, so a far one is only named in the legend.
    age_on_chart = max_age_seconds is not None and max_age_seconds <= 2 * timeline
    span = max(timeline, max_age_seconds or 0.0) if age_on_chart else timeline
    size, unit = _unit(span)
    fig, ax = plt.subplots(figsize=(WIDTH_IN, HEIGHT_IN), dpi=DPI)
    try:
        used: set[str] = set()
        for transport, xs, ys in wait_segments(rows):
            label = transport if transport not in used else None
            used.add(transport)
            colour = TRANSPORT_COLOURS.get(transport, "#7f7f7f")
            ax.plot([x / size for x in xs], ys, color=colour, linewidth=2.5, label=label)
        ax.scatter(
            [r.at_seconds / size for r in rows], [r.attempt for r in rows], color="black", zorder=3, s=18
        )
        last = rows[-1]
        if not last.retried:
            # Native retry: SQS moves the message one visibility timeout after the last receive.
            ended = last.at_seconds + (last.delay_seconds if last.transport == "native" else 0)
            ax.scatter(
                [ended / size],
                [last.attempt],
                color=FINAL_COLOUR,
                zorder=4,
                s=60,
                marker="X",
                label=last.action,
            )
        if max_attempts is not None:
            ax.axhline(
                max_attempts,
                color="#555555",
                linestyle="--",
                linewidth=1,
                label=f"{budget_label} {max_attempts}",
            )
        if max_age_seconds is not None and age_on_chart:
            ax.axvline(
                max_age_seconds / size,
                color="#555555",
                linestyle=":",
                linewidth=1.2,
                label=f"max_age {max_age_seconds:g} s",
            )
        elif max_age_seconds is not None:
            ax.plot([], [], " ", label=f"max_age {max_age_seconds:g} s (beyond the chart)")
        ax.set_xlabel(f"time since the first delivery ({unit})")
        ax.set_ylabel("attempt")
        ax.set_yticks(range(1, max([r.attempt for r in rows] + [max_attempts or 0]) + 1))
        ax.set_title(title)
        ax.grid(alpha=0.3)
        ax.legend(loc="lower right", fontsize=8)
        fig.tight_layout()
        target = Path(path)
        fig.savefig(target, format="png", dpi=DPI)
    finally:
        plt.close(fig)
    return target
