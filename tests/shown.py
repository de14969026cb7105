"""What docs/integrations.md shows a user adding, against what a test's training script added (its `# kb` lines)."""

from __future__ import annotations

import re
from pathlib import Path

DOCS = Path(__file__).resolve().parent.parent / "docs" / "integrations.md"
MARK = "# kb"
_NAMES_KB = re.compile(r"ingest|Kb|\br\.")  # kb's modules, its classes, the run object `r`


def added_lines(script: Path) -> list[str]:
    return [line for line in script.read_text().splitlines() if line.rstrip().endswith(MARK)]


def shown_lines(section: str) -> list[str]:
    """The kb lines of the first code block under the heading `section`: those naming kb's API."""
    text = DOCS.read_text().split(f"\n## {section}\n", 1)[1].split("\n## ", 1)[0]
    block = text.split("```python\n", 1)[1].split("```", 1)[0]
    return [line for line in block.splitlines() if _NAMES_KB.search(line.split("#", 1)[0])]
