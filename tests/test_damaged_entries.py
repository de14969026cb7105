"""Entry files that are damaged or are not files at all: each is named as a problem, no command crashes or blocks."""

from __future__ import annotations

import os
import socket

import pytest
from conftest import run_kb, write_entry

from kb.store.knowledge_base import KnowledgeBase


def _running(kb: KnowledgeBase, entry_id: str, started: str) -> None:
    recorder = {"host": socket.gethostname(), "pid": 2**22 + 12345, "started": 1.0}  # a pid no process has
    write_entry(kb, entry_id, recorded="2026-01-02T00:00:00Z", status="running", recorder=recorder,
                timings={"started": started}, command={"argv": ["true"], "line": "true", "cwd": "/"})  # fmt: skip


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("timings.started", "2026-02-30T00:00:00Z"),
        ("recorded", "9999-99-99T99:99:99Z"),
        ("recorded", "2026-02-29T24:00:00Z"),
    ],
)
def test_an_impossible_time_is_a_problem_and_no_command_crashes(kb: KnowledgeBase, field: str, value: str) -> None:
    started = value if field == "timings.started" else "2026-01-02T00:00:00Z"
    _running(kb, "2026-01-02-damaged-000001", started)
    path = kb.entries_path / "2026-01-02-damaged-000001.md"
    if field == "recorded":
        path.write_text(path.read_text().replace("recorded: '2026-01-02T00:00:00Z'", f"recorded: '{value}'"))
        assert value in path.read_text()
    write_entry(kb, "2026-01-03-fine-000002", recorded="2026-01-03T00:00:00Z", status="completed")
    for args in (["ls"], ["search", "fine"], ["show", "2026-01-03-fine"]):
        result = run_kb(*args)
        assert "Traceback" not in result.stderr, result.stderr
        assert result.returncode == 0, result.stderr
        assert "fine" in result.stdout
    result = run_kb("check")
    assert "Traceback" not in result.stderr and result.returncode == 1
    assert f"{field}: '{value}' is not a real date and time" in result.stdout + result.stderr


def _outside_file(tmp_path) -> str:
    outside = tmp_path / "private.md"
    outside.write_text("---\nid: 2026-01-04-private-000004\ntitle: private words\nkind: note\nschema: 1\n"
                       "recorded: '2026-01-04T00:00:00Z'\n---\nnever to be shared\n")  # fmt: skip
    return str(outside)


@pytest.mark.parametrize("kind", ["fifo", "dev-zero", "outside", "huge"])
def test_a_name_that_is_no_regular_file_inside_the_base_is_reported_and_blocks_nothing(
    kb: KnowledgeBase, tmp_path, kind: str
) -> None:
    write_entry(kb, "2026-01-03-fine-000002", recorded="2026-01-03T00:00:00Z", status="completed")
    bad = kb.entries_path / "2026-01-05-odd-000005.md"
    if kind == "fifo":
        os.mkfifo(bad)
    elif kind == "dev-zero":
        bad.symlink_to("/dev/zero")
    elif kind == "outside":
        bad.symlink_to(_outside_file(tmp_path))
    else:
        bad.write_bytes(b"---\ntitle: x\n---\n" + b"y" * (17 * 1024 * 1024))
    for args in (["ls"], ["search", "fine"], ["show", "2026-01-03-fine"], ["site", "build"]):
        result = run_kb(*args, timeout=60)
        assert result.returncode == 0 and "Traceback" not in result.stderr, (args, result.stderr)
        assert "private words" not in result.stdout and "never to be shared" not in result.stdout
    result = run_kb("check", timeout=60)
    assert result.returncode == 1, result.stdout + result.stderr
    expected = {
        "fifo": "is a FIFO, not a regular file",
        "dev-zero": "is a link to a file outside the knowledge base",
        "outside": "is a link to a file outside the knowledge base",
        "huge": "is 17.0 MiB, over the 16 MiB an entry may have",
    }[kind]
    assert f"2026-01-05-odd-000005.md: {expected}" in result.stdout + result.stderr
    site = kb.root / "site"
    assert not any("never to be shared" in p.read_text("utf-8", "replace") for p in site.rglob("*.html"))


def test_a_link_to_an_entry_elsewhere_in_the_base_is_read(kb: KnowledgeBase) -> None:
    (kb.entries_path / "kept").mkdir()
    path = write_entry(kb, "2026-01-03-fine-000002", recorded="2026-01-03T00:00:00Z", status="completed")
    path.rename(kb.entries_path / "kept" / path.name)
    (kb.entries_path / "linked").mkdir()
    (kb.entries_path / "linked" / path.name).symlink_to(kb.entries_path / "kept" / path.name)
    result = run_kb("check")
    assert "outside the knowledge base" not in result.stdout + result.stderr


@pytest.mark.parametrize(
    ("text", "line", "message"),
    [
        (b"---\ntitle: x\ntags: [a, b\nkind: note\n---\nbody\n", 3, "did not find expected ',' or ']' (while parsing a "
         "flow sequence begun on this line)"),
        (b"---\nschema: 1\ntitle: caf\xe9\n---\n", 3, "not UTF-8 text (byte 24); save it as UTF-8"),
        (b"---\nschema: 1\ntitle: a\x00b\n---\n", 3, "front matter holds the control character #x0000"),
    ],
    ids=["unclosed-bracket", "latin-1", "nul"],
)  # fmt: skip
def test_kb_check_names_the_line_of_a_broken_entry_in_one_line(
    kb: KnowledgeBase, text: bytes, line: int, message: str
) -> None:
    path = kb.entries_path / "2026-01-07-broken-000007.md"
    path.write_bytes(text)
    result = run_kb("check")
    assert result.returncode == 1 and "Traceback" not in result.stderr
    (shown,) = [out for out in result.stdout.splitlines() if "broken" in out]
    assert shown.startswith(f"{path}:{line}: ") and message in shown, result.stdout


def test_a_fence_with_trailing_blanks_opens_and_closes_the_front_matter(kb: KnowledgeBase) -> None:
    path = write_entry(kb, "2026-01-03-fine-000002", recorded="2026-01-03T00:00:00Z", status="completed")
    text = path.read_text()
    path.write_text(text.replace("---\n", "---  \n", 1).replace("\n---\n", "\n--- \t\n", 1))
    result = run_kb("check")
    assert result.returncode == 0, result.stdout + result.stderr


def test_a_duplicate_id_names_the_other_file_with_its_folder(kb: KnowledgeBase) -> None:
    path = write_entry(kb, "2026-01-03-fine-000002", recorded="2026-01-03T00:00:00Z", status="completed")
    (kb.entries_path / "team").mkdir()
    copy = kb.entries_path / "team" / "copy.md"
    copy.write_text(path.read_text())
    result = run_kb("check")
    assert result.returncode == 1
    assert f"is also used by {path}; give this one a new id" in result.stdout or (
        f"is also used by {copy}; give this one a new id" in result.stdout
    ), result.stdout


def test_a_title_of_megabytes_is_a_short_problem_and_stays_out_of_listings(kb: KnowledgeBase) -> None:
    write_entry(kb, "2026-01-03-fine-000002", recorded="2026-01-03T00:00:00Z", status="completed")
    write_entry(kb, "2026-01-08-long-000008", title="t" * 10_000_000, recorded="2026-01-08T00:00:00Z")
    result = run_kb("check")
    assert result.returncode == 1
    assert "title: 10,000,000 characters, over the 20,000 it may have" in result.stdout
    assert len(result.stdout) < 2000
    assert run_kb("site", "build").returncode == 0
    assert max(p.stat().st_size for p in (kb.root / "site").rglob("*.html")) < 1_000_000


def test_a_backend_and_failure_message_of_megabytes_are_problems_and_listings_stay_small(kb: KnowledgeBase) -> None:
    write_entry(kb, "2026-01-03-fine-000002", title="w" * 5_000, recorded="2026-01-03T00:00:00Z", status="completed")
    write_entry(
        kb, "2026-01-09-huge-000009", recorded="2026-01-09T00:00:00Z", status="completed", backend="b" * 10_000_000
    )
    failure = {"class": "crash", "message": "m" * 10_000_000}
    write_entry(kb, "2026-01-10-huge-000010", recorded="2026-01-10T00:00:00Z", status="failed", failure=failure)
    result = run_kb("check")
    assert result.returncode == 1
    line = _line_starting(kb, "2026-01-09-huge-000009", "backend:")
    assert f"huge-000009.md:{line}: backend: 10,000,000 characters, over the 20,000 it may have" in result.stdout
    line = _line_starting(kb, "2026-01-10-huge-000010", "  message:")
    assert f"huge-000010.md:{line}: failure.message: 10,000,000 characters, over the 20,000" in result.stdout
    assert len(result.stdout) < 2000
    built = run_kb("site", "build")
    assert built.returncode == 0
    assert "2 broken entry files left out (kb check lists them)" in " ".join((built.stderr + built.stdout).split())
    site = kb.root / "site"
    assert max(p.stat().st_size for p in site.rglob("*.html") if "entries" not in p.parts) < 1_000_000
    home = (site / "index.html").read_text()
    assert "2026-01-09-huge-000009.md" in home and "backend: 10,000,000 characters" in home  # named, nothing lost
    assert "2026-01-10-huge-000010.md" in home and "failure.message: 10,000,000 characters" in home
    # A title within its bound but long: the lists show its start, the entry page all of it.
    listing = (site / "list" / "index.html").read_text()
    assert "w" * 199 + "…" in listing and "w" * 201 not in listing
    assert "w" * 5_000 in (site / "entries" / "2026-01-03-fine-000002.html").read_text()


def _line_starting(kb: KnowledgeBase, entry_id: str, start: str) -> int:
    lines = (kb.entries_path / f"{entry_id}.md").read_text().splitlines()
    return next(number for number, line in enumerate(lines, 1) if line.startswith(start))
