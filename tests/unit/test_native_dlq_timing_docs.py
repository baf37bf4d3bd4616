"""Every page that says when native retry dead-letters a failing message says what the emulator
measures (tests/integration/test_native_ops_on_emulator.py): about maxReceiveCount x the visibility
timeout after its first receive, 15 minutes with the defaults (5 x 180 s), not the 12 minutes of
(maxReceiveCount - 1) x visibility, which is when its last receive comes."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PAGES = [
    ROOT / "README.md",
    *sorted((ROOT / "docs").rglob("*.md")),
    *sorted(ROOT.glob("examples/*/README.md")),
]
# "reaches/lands in the DLQ ... (maxReceiveCount - 1) x" within a sentence, or the old 12 minutes.
WRONG = re.compile(
    r"(DLQ[^.]{0,80}\(`?maxReceiveCount`?\s*[-\u2212]\s*1\)\s*[x\u00d7])|(12 minutes with the defaults)",
    re.IGNORECASE,
)


def test_no_page_gives_the_old_dlq_timing() -> None:
    wrong = {
        str(page.relative_to(ROOT)): match.group(0)
        for page in PAGES
        for match in WRONG.finditer(" ".join(page.read_text(encoding="utf-8").split()))
    }
    assert wrong == {}


def test_the_native_retry_pages_give_15_minutes() -> None:
    for page in ("docs/patterns/native-retry.md", "docs/operations.md", "examples/native-retry/README.md"):
        text = " ".join((ROOT / page).read_text(encoding="utf-8").split())
        assert "15 minutes with the defaults" in text, page
