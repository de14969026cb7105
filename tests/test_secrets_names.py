"""Names are a channel too: ids and file names made from titles, attachment and curve file names, run-folder file
and folder names, tags, setting keys, backend and mode names, and the site pages made from them. Every credential
of the independent corpus that masking finds in text is planted in them; none reaches a name or a byte. A file that
cannot be masked where it is (a name of 236 to 255 bytes) is kept masked under a short name, and the run's own
outcome stands."""

from __future__ import annotations

import json
import sys
from datetime import datetime, timezone
from pathlib import Path

import pytest
from conftest import run_kb
from data.secrets_corpus_independent import SECRETS as CORPUS
from test_secrets_held_out import TUNING_LEAKS

from kb.model.entry import Entry
from kb.model.ids import new_id
from kb.secrets.redact import MASK, redact_text
from kb.store.knowledge_base import KnowledgeBase, masked_name, safe_name

ONE_LINE = [s for s in CORPUS if s.id not in TUNING_LEAKS and "\n" not in s.text and "/" not in s.value]
NAMEABLE = [s for s in ONE_LINE if MASK in redact_text(s.value)]  # recognisable without the words around it


@pytest.mark.parametrize("secret", ONE_LINE, ids=[s.id for s in ONE_LINE])
def test_an_id_made_from_a_title_holds_no_credential(secret) -> None:
    entry_id = new_id(secret.text, datetime.now(timezone.utc))
    assert secret.probe.lower() not in entry_id and secret.value.lower() not in entry_id


@pytest.mark.parametrize("secret", NAMEABLE, ids=[s.id for s in NAMEABLE])
def test_a_file_name_holds_no_credential(secret) -> None:
    for name in (safe_name(f"{secret.value}.log"), masked_name(f"metric-{secret.value}.txt")):
        assert secret.probe not in name and secret.probe.lower() not in name.lower()


def test_a_name_too_long_to_mask_beside_is_bounded() -> None:
    name = "x" * 240 + ".log"
    short = masked_name(name)
    assert len(short.encode()) <= 200 and short.endswith(".log") and short != masked_name("y" * 240 + ".log")


WRITER = """\
import os, sys
run = os.environ["KB_RUN_DIR"]
secret, token = sys.argv[1], sys.argv[2]
open(os.path.join(run, "x" * 246 + ".log"), "w").write("the key: " + secret + "\\n")
open(os.path.join(run, "curve-" + token + ".txt"), "w").write("1\\n2\\n")
os.makedirs(os.path.join(run, "ckpt-" + token))
open(os.path.join(run, "ckpt-" + token, "notes.txt"), "w").write("saved\\n")
print("done")
"""


def _every_byte_and_name(root: Path) -> str:
    paths = sorted(p for p in root.rglob("*"))
    names = "\n".join(p.relative_to(root).as_posix() for p in paths)
    return names + "\n".join(p.read_bytes().decode("utf-8", "replace") for p in paths if p.is_file())


def test_credentials_in_names_leak_nowhere_and_a_long_name_fails_closed(kb: KnowledgeBase, tmp_path: Path) -> None:
    token = NAMEABLE[0].value
    title_secret, tag_secret, key_secret = (s.value for s in NAMEABLE[1:4])
    source = tmp_path / f"log-{token}.txt"
    source.write_text("plain log\n")
    done = run_kb(
        "record", "--title", f"eager {title_secret} run", "--tag", tag_secret, "--backend", title_secret,
        "--mode", key_secret, "--setting", f"{key_secret}=1",
        "--", sys.executable, "-c", WRITER, NAMEABLE[4].value, token,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr  # the run's own exit status, not a masking failure
    (entry,) = [Entry.read(p) for p in kb.entries_path.glob("*.md")]
    assert entry.data["status"] == "completed" and entry.data["command"]["exit_code"] == 0
    problems = " ".join(entry.data["provenance"]["capture_problems"])
    assert "renamed" in problems and "too long" in problems
    listed = [a["path"] for a in entry.data["attachments"]]
    assert any("/run/xxxx" in path and len(Path(path).name.encode()) <= 200 for path in listed)
    attached = run_kb("record", "--title", "t", "--no-edit", "--status", "completed", "--attach", str(source))
    assert attached.returncode == 0, attached.stderr
    for path in kb.entries_path.glob("*.md"):
        entry = Entry.read(path)
        assert all((path.parent / a["path"]).is_file() for a in entry.data["attachments"])  # listed = on disk
    assert run_kb("check").returncode == 0
    assert run_kb("site", "build").returncode == 0
    stored = _every_byte_and_name(kb.root)
    leaked = [s.id for s in NAMEABLE[:5] if s.probe in stored or s.probe.lower() in stored.lower()]
    assert leaked == [] and "redacted" in stored


def test_check_reports_an_attachment_the_entry_lists_that_is_not_there(kb: KnowledgeBase, tmp_path: Path) -> None:
    log = tmp_path / "train.log"
    log.write_text("ok\n")
    assert run_kb("record", "--title", "t", "--no-edit", "--status", "completed", "--attach", str(log)).returncode == 0
    (path,) = kb.entries_path.glob("*.md")
    (path.parent / path.stem / "train.log").unlink()
    done = run_kb("check", "--json")
    assert done.returncode == 1
    (problem,) = json.loads(done.stdout)["data"]["problems"]
    assert problem["field"] == "attachments" and "train.log" in problem["message"]
