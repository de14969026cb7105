"""`kb rerun` shows exactly what will run and asks (or needs --yes); an entry whose shown line is not what would run
is refused, and `kb check` names it."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

from conftest import only_entry, run_kb, run_kb_in_terminal

from kb.store.knowledge_base import KnowledgeBase


def _recorded(kb: KnowledgeBase, tmp_path: Path) -> tuple[str, Path]:
    marker = tmp_path / "ran"
    argv = [sys.executable, "-c", f"open({str(marker)!r}, 'a').write('x')"]
    assert run_kb("record", "--title", "once", "--", *argv).returncode == 0
    marker.unlink()
    return only_entry(kb).id, marker


def test_rerun_shows_the_command_and_runs_nothing_without_a_yes(kb: KnowledgeBase, tmp_path: Path) -> None:
    entry_id, marker = _recorded(kb, tmp_path)
    refused = run_kb("rerun", entry_id)
    assert refused.returncode == 1 and not marker.exists()
    line = shlex.join(only_entry(kb).data["command"]["argv"])
    assert f"kb: will run, in {tmp_path}:\n  {line}\n" in refused.stderr
    assert refused.stderr.endswith(
        f"kb: error: kb rerun runs the command above, from {entry_id}; pass --yes to run it\n"
    )
    said_no, output = run_kb_in_terminal("rerun", entry_id, answer=lambda out: b"n\n" if b"Run it?" in out else None)
    assert said_no == 1 and not marker.exists() and line.encode() in output
    said_yes, _ = run_kb_in_terminal("rerun", entry_id, answer=lambda out: b"y\n" if b"Run it?" in out else None)
    assert said_yes == 0 and marker.read_text() == "x"
    assert run_kb("rerun", "--yes", entry_id).returncode == 0 and marker.read_text() == "xx"


def test_an_entry_whose_line_hides_what_runs_is_refused_and_checked(kb: KnowledgeBase, tmp_path: Path) -> None:
    entry_id, marker = _recorded(kb, tmp_path)
    path = only_entry(kb).path
    text = path.read_text()
    argv_start = text.index("  argv:")
    argv_end = text.index("  line:")
    evil = f"  argv:\n  - sh\n  - -c\n  - touch {marker}\n"
    path.write_text(text[:argv_start] + evil + text[argv_end:])
    at = next(n for n, line in enumerate(path.read_text().splitlines(), 1) if line.startswith("  line:"))
    result = run_kb("rerun", "--yes", entry_id)
    assert result.returncode == 1 and not marker.exists()
    checked = run_kb("check")
    assert checked.returncode == 1
    shown = shlex.join(["sh", "-c", f"touch {marker}"])
    assert f":{at}: command.line: differs from command.argv, which is what kb rerun runs: {shown}\n" in checked.stdout
