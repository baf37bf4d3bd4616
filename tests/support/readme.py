"""The README's quickstarts, as tests read them: each `<!-- quickstart:<pattern> -->` marker and the
```hcl block right after it."""

from __future__ import annotations

import re
from pathlib import Path

README = Path(__file__).resolve().parents[2] / "README.md"


def quickstarts() -> dict[str, str]:
    """The HCL of each quickstart, by pattern, exactly as the README shows it."""
    text = README.read_text(encoding="utf-8")
    return dict(re.findall(r"<!-- quickstart:([\w-]+) -->\n```hcl\n(.*?)```", text, re.DOTALL))
