"""Write an entry's notes in $EDITOR, the way `git commit` asks for a message."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from kb.errors import KbError

SECTIONS = ("Notes", "Adaptations", "Failure explanation")
TEMPLATE = """\
<!-- kb: notes for "{title}".
     Write Markdown under the headings; a heading left empty is dropped. Save and close to record.
     "Adaptations": what had to change to make it run (code, config, kernels) and the effort it took.
     "Failure explanation": why it failed, in your words; it is stored with the failure. -->

## Notes

{notes}

## Adaptations


## Failure explanation

"""
_COMMENT = re.compile(r"<!--.*?-->", re.S)


@dataclass
class Written:
    notes: str
    adaptations: str
    explanation: str

    def body(self) -> str:
        parts = [self.notes] if self.notes else []
        if self.adaptations:
            parts.append(f"## Adaptations\n\n{self.adaptations}")
        return "\n\n".join(parts) + "\n" if parts else ""


def editor_command() -> list[str]:
    return shlex.split(os.environ.get("VISUAL") or os.environ.get("EDITOR") or "vi")


def edit(title: str, notes: str = "") -> Written:
    """Open the editor on the template and read back what was written."""
    with tempfile.TemporaryDirectory(prefix="kb-edit-") as folder:
        path = Path(folder, "KB_NOTES.md")
        path.write_text(TEMPLATE.format(title=title.replace("-->", "- ->"), notes=notes), "utf-8")
        command = [*editor_command(), str(path)]
        try:
            result = subprocess.run(command, check=False)
        except OSError as exc:
            raise KbError(
                f"cannot start the editor {command[0]!r}: {exc.strerror}; set $EDITOR, or pass --note or --no-edit"
            ) from None
        if result.returncode != 0:
            raise KbError(f"the editor {command[0]!r} exited with code {result.returncode}; nothing was recorded")
        return parse(path.read_text("utf-8"))


def parse(text: str) -> Written:
    text = _COMMENT.sub("", text)
    found = {name: "" for name in SECTIONS}
    current = "Notes"
    lines: dict[str, list[str]] = {name: [] for name in SECTIONS}
    for line in text.splitlines():
        heading = line[3:].strip() if line.startswith("## ") else None
        if heading in found:
            current = heading
            continue
        lines[current].append(line)
    for name in SECTIONS:
        found[name] = "\n".join(lines[name]).strip()
    return Written(found["Notes"], found["Adaptations"], found["Failure explanation"])
