"""Names that try to leave the knowledge base: `../`, absolute paths, NUL bytes, very long names.

They come in through every door: `kb record` and `kb add` options, file names and the contents of
imported files, `--to`, and entry files written by hand (attachments the site build copies). Every command
either does its job or fails with one line; and the files on disk show that nothing was written outside the
knowledge-base folder, and that no file from outside it was copied into the site.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from pathlib import Path

import pytest
from conftest import run_kb, write_entry

from kb.store.knowledge_base import KnowledgeBase

SECRET = "kb-outside-secret-7f3a"
LONG = "a" * 10_000


def hostile_names(tmp_path: Path) -> list[str]:
    """Names aimed outside: relative climbs, absolute paths (into this test's folder, and /tmp), long ones."""
    marker = f"escaped-{os.getpid()}"
    return [
        f"../../{marker}",
        "../" * 30 + f"tmp/{marker}",
        str(tmp_path / marker),
        "a\\..\\..\\" + marker,
        LONG,
    ]


def snapshot(root: Path, skip: Path) -> dict[str, str]:
    """Every file under root but outside `skip`, with a digest of its bytes."""
    files = {}
    for path in sorted(root.rglob("*")):
        if path.is_relative_to(skip) or not path.is_file() or path.is_symlink():
            continue
        files[str(path.relative_to(root))] = hashlib.sha256(path.read_bytes()).hexdigest()
    return files


def escaped(tmp_path: Path) -> list[Path]:
    """Anything named like the markers where a climb or an absolute path could have put it."""
    marker = f"escaped-{os.getpid()}"
    places = [tmp_path, tmp_path.parent, Path("/tmp"), Path.cwd()]
    return [path for place in places for path in place.glob(f"*{marker}*")]


def assert_clean_exit(result, *, allowed: tuple[int, ...] = (0, 1), one_line: bool = True) -> None:
    stderr = re.sub(r"(.)\1{40,}", r"\1…", result.stderr)  # LONG echoed back, shortened for reading
    assert result.returncode in allowed, (result.returncode, stderr[-3000:])
    assert "Traceback" not in stderr, stderr[-3000:]
    if result.returncode == 1 and one_line:
        lines = stderr.splitlines()  # one line per problem, each a whole message
        assert lines and all(line.startswith("kb: error: ") for line in lines), stderr[:1000]


def assert_every_entry_reads(kb: KnowledgeBase) -> None:
    problems: list = []
    entries = list(kb.iter_entries(problems))
    assert problems == []
    for entry in entries:
        assert entry.path.resolve().is_relative_to(kb.entries_path.resolve())


@pytest.fixture
def outside(tmp_path: Path, kb: KnowledgeBase) -> Path:
    """A folder beside the knowledge base with a secret in it, which no command may copy in or change."""
    folder = tmp_path / "outside"
    folder.mkdir()
    (folder / "secret.txt").write_text(SECRET + "\n")
    return folder


def test_record_and_add_options_stay_inside(kb: KnowledgeBase, tmp_path: Path, outside: Path) -> None:
    before = snapshot(tmp_path, kb.root)
    names = hostile_names(tmp_path)
    for name in names:
        recorded = run_kb(
            "record", "--no-edit", "--status", "completed", "--title", name, "--workload", name, "--backend", name,
            "--mode", name, "--author", name, "--setting", f"key={name}", "--note", name,
            "--attach", str(outside / "secret.txt"), "--tag", "t",
        )  # fmt: skip
        assert_clean_exit(recorded, allowed=(0,))
        added = run_kb(
            "add", "--title", name, "--publisher", name, "--date", "unknown", "--measured", name, "--model", name,
            "--workload", name, "--hardware", name, "--caveat", name, "--version", f"torch={name}",
        )  # fmt: skip
        assert_clean_exit(added, allowed=(0,))
    # Tags are checked (letters, digits, ._:+/-, 64 at most): the hostile ones are refused, nothing written.
    tags = [arg for name in names for arg in ("--tag", name)]
    refused = run_kb("record", "--no-edit", "--status", "completed", "--title", "tags", *tags)
    assert_clean_exit(refused, allowed=(1,))
    assert snapshot(tmp_path, kb.root) == before
    assert escaped(tmp_path) == []
    assert_every_entry_reads(kb)
    ids = [path.stem for path in kb.iter_entry_paths()]
    assert len(ids) == 2 * len(names) and all(len(entry_id) < 100 for entry_id in ids)


def test_attachment_file_names_stay_in_their_entry_folder(kb: KnowledgeBase, tmp_path: Path, outside: Path) -> None:
    names = ["..a", ".hidden", "-rf", "a b", "new\nline", "x" * 255, "x" * 200 + ".tar.gz", "tab\there", "é.log"]
    for name in names:
        (outside / name).write_text(f"attached {name!r}\n")
    before = snapshot(tmp_path, kb.root)
    args = [arg for name in names for arg in ("--attach", str(outside / name))]
    result = run_kb("record", "--no-edit", "--status", "completed", "--title", "attachments", *args)
    assert_clean_exit(result, allowed=(0,))
    assert snapshot(tmp_path, kb.root) == before
    (entry_path,) = kb.iter_entry_paths()
    folder = entry_path.with_suffix("")
    copied = [path for path in folder.rglob("*") if path.is_file()]
    assert len(copied) >= len(names)
    assert all(path.parent == folder and len(path.name) <= 128 and not path.name.startswith(".") for path in copied)


def test_imported_files_and_to_stay_inside(kb: KnowledgeBase, tmp_path: Path, outside: Path) -> None:
    climb = "../" * 12 + f"escaped-{os.getpid()}"
    junit = outside / "..results.xml"
    junit.write_text(
        f'<testsuites><testsuite name="{climb}"><testcase classname="{climb}" name="/abs/{LONG}">'
        f'<skipped message="{climb}"/></testcase></testsuite></testsuites>'
    )
    trace = outside / ".trace.json"
    events = [{"ph": "X", "cat": "cpu_op", "name": climb, "ts": 1, "dur": 2, "pid": climb, "tid": 1}]
    trace.write_text(json.dumps({"schemaVersion": 1, "traceName": climb, "traceEvents": events}))
    stranger = outside / "2026-11-30-stranger-000000.md"
    write_entry(kb, "2026-11-30-stranger-000000", recorded="2026-11-30T00:00:00Z", status="completed")
    (kb.entries_path / "2026-11-30-stranger-000000.md").rename(stranger)
    before = snapshot(tmp_path, kb.root)

    assert_clean_exit(run_kb("ingest", "junit", str(junit), "--title", climb, "--tag", "t"), allowed=(0,))
    assert_clean_exit(run_kb("ingest", "profile", str(trace), "--title", LONG), allowed=(0,))
    to_outside = run_kb("ingest", "profile", str(trace), "--to", str(stranger))  # an entry file outside the kb
    assert_clean_exit(to_outside, allowed=(1,))
    assert "kb adds only to its own entries" in to_outside.stderr

    assert snapshot(tmp_path, kb.root) == before
    assert not stranger.with_suffix("").exists()
    assert escaped(tmp_path) == []
    assert_every_entry_reads(kb)
    placed = [path.name for path in kb.entries_path.rglob("*") if path.is_file() and path.suffix != ".md"]
    assert {"results.xml", "trace.json", "cases.tsv"} <= set(placed)


# Attachment paths are relative to the entry file's folder (entries/), as kb writes them: <id>/<name>. The schema
# refuses those that climb with '..'; these pass it and must still lead nowhere outside.
HAND_WRITTEN_ATTACHMENTS = [
    "a\n../../../outside/secret.txt",  # '..' on the second line of the value
    "{id}/link/secret.txt",  # a symbolic link inside the attachment folder, to the folder outside
    "{id}/nested/inside.txt",
]


def test_hand_written_entries_never_lead_outside(kb: KnowledgeBase, tmp_path: Path, outside: Path) -> None:
    entry_id = "2026-11-30-hand-written-000000"
    attachments = [{"path": path.format(id=entry_id)} for path in HAND_WRITTEN_ATTACHMENTS]
    write_entry(kb, entry_id, recorded="2026-11-30T00:00:00Z", status="completed", attachments=attachments,
                tags=["x/../../y"], workload={"name": "../../escaped"}, backend="/etc")  # fmt: skip
    folder = kb.entries_path / entry_id
    (folder / "nested").mkdir(parents=True)
    (folder / "nested" / "inside.txt").write_text("inside\n")
    (folder / "link").symlink_to(outside)
    # Entries the schema refuses: attachments that climb, at absolute paths or with NUL; ids that climb; long names.
    (kb.entries_path / "bad-absolute.md").write_text(
        "---\nschema: 1\nid: 2026-11-30-bad-000001\nkind: note\ntitle: t\nrecorded: 2026-11-30T00:00:00Z\n"
        f'attachments: [{{path: "{outside}/secret.txt"}}, {{path: "a\\0b"}}, {{path: ../../outside/secret.txt}},'
        " {path: ok/../../../outside/secret.txt}]\n---\n"
    )
    (kb.entries_path / "bad-id.md").write_text(
        "---\nschema: 1\nid: ../../escaped\nkind: note\ntitle: t\nrecorded: 2026-11-30T00:00:00Z\n---\n"
    )
    (kb.entries_path / ("n" * 250 + ".md")).write_text(f"---\nschema: 1\nid: {LONG}\n---\n")
    before = snapshot(tmp_path, kb.root)

    check = run_kb("check")
    assert_clean_exit(check, allowed=(1,), one_line=False)  # every problem, one per line
    assert "bad-absolute.md" in check.stderr + check.stdout and "bad-id.md" in check.stderr + check.stdout
    for command in (["ls"], ["show", entry_id], ["search", "secret"], ["index", "--rebuild"]):
        assert_clean_exit(run_kb(*command))
    built = run_kb("site", "build")
    assert_clean_exit(built, allowed=(0,))

    assert snapshot(tmp_path, kb.root) == before
    assert escaped(tmp_path) == []
    site = kb.root / "site"
    assert (site / "entries" / entry_id / "nested" / "inside.txt").read_text() == "inside\n"
    copied = [path for path in site.rglob("*") if path.is_file() and not path.is_symlink()]
    assert not any(SECRET.encode() in path.read_bytes() for path in copied)
    assert all(path.resolve().is_relative_to(site.resolve()) for path in site.rglob("*"))


# The file system refuses names this long (ENAMETOOLONG): each command must say so in one line.
@pytest.mark.parametrize(
    "args",
    [
        ["show", LONG],
        ["record", "--no-edit", "--status", "completed", "--reference", LONG],
        ["ingest", "profile", LONG],
        ["ingest", "compile-trace", LONG],
        ["show", f"{LONG}.md"],
        ["record", "--no-edit", "--attach", LONG],
        ["record", "--no-edit", "--log", LONG],
        ["record", "--no-edit", "--from", LONG],
    ],
    ids=lambda args: " ".join(arg[:12] for arg in args),
)
def test_names_too_long_for_the_file_system_fail_in_one_line(args: list[str]) -> None:
    result = run_kb(*args)
    assert_clean_exit(result, allowed=(1,))


def test_an_attachment_name_too_long_leaves_the_site_build_going(kb: KnowledgeBase) -> None:
    entry_id = "2026-11-30-long-name-000000"
    write_entry(kb, entry_id, recorded="2026-11-30T00:00:00Z", status="completed", attachments=[{"path": LONG}])
    assert_clean_exit(run_kb("site", "build"), allowed=(0,))
    assert (kb.root / "site" / "entries" / f"{entry_id}.html").is_file()


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        (["ingest", "junit"], "a JUnit XML file, e.g. from pytest --junitxml"),
        (["ingest", "profile"], "the trace torch.profiler wrote (.json or .json.gz)"),
        (["ingest", "tensorboard"], "a TensorBoard log folder or event file"),
        (["record", "--title", "t", "--no-edit", "--log"], "a file to attach"),
    ],
)
def test_a_fifo_given_to_an_import_is_named_at_once(
    kb: KnowledgeBase, tmp_path: Path, command: list[str], expected: str
) -> None:
    fifo = tmp_path / "events.out.tfevents.1"
    os.mkfifo(fifo)  # opened for reading, it waits for a writer for good
    result = run_kb(*command, str(fifo), timeout=60)
    assert result.returncode == 1
    assert result.stderr == f"kb: error: {fifo}: a FIFO, not a regular file; expected {expected}\n"
    assert list(kb.iter_entries()) == []


def test_event_files_and_trace_logs_found_in_a_folder_are_read_only_when_regular(
    kb: KnowledgeBase, tmp_path: Path, outside: Path
) -> None:
    logs = tmp_path / "tb" / "run"
    logs.mkdir(parents=True)
    os.mkfifo(logs / "events.out.tfevents.1.pipe")
    result = run_kb("ingest", "tensorboard", str(tmp_path / "tb"), timeout=60)
    assert result.returncode == 1
    assert "no TensorBoard event files (events.out.tfevents.*) in it or below" in result.stderr
    trace = tmp_path / "trace"
    trace.mkdir()
    (outside / "dedicated_log_torch_trace_secret.log").write_text("not the run's\n")
    (trace / "dedicated_log_torch_trace_rank_0.log").symlink_to(outside / "dedicated_log_torch_trace_secret.log")
    result = run_kb("ingest", "compile-trace", str(trace), timeout=60)
    assert result.returncode == 1
    assert "no TORCH_TRACE logs" in result.stderr
    assert "(1 links or other files that are not regular files, not read)" in result.stderr
    assert list(kb.iter_entries()) == []
