"""The git commit an entry names is the code's, found from the command's script, never the knowledge base's own."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from conftest import git, json_data, run_kb

from kb.model.entry import Entry
from kb.store.knowledge_base import KnowledgeBase


def repository(where: Path, files: dict[str, str]) -> str:
    """A git repository at where with files committed; its commit."""
    where.mkdir(parents=True, exist_ok=True)
    git(where, "init", "-q", "-b", "main")
    for name, text in files.items():
        (where / name).write_text(text)
    git(where, "add", ".")
    git(where, "commit", "-q", "-m", "first")
    return git(where, "rev-parse", "HEAD")


@pytest.fixture
def kb_in_git(kb: KnowledgeBase) -> KnowledgeBase:
    """The knowledge base as a team keeps it: its own git repository, with a commit."""
    repository(kb.root, {"README.md": "evidence\n"})
    return kb


def record(kb: KnowledgeBase, *args: str, cwd: Path) -> Entry:
    ran = run_kb("record", "--json", *args, cwd=cwd)
    assert ran.returncode == 0, ran.stderr
    return Entry.read(kb.entries_path / json_data(ran.stdout[ran.stdout.index("{") :], "record")["path"])


def test_the_scripts_repository_not_the_knowledge_bases(kb_in_git: KnowledgeBase, tmp_path: Path) -> None:
    code = tmp_path / "code"
    commit = repository(code, {"train.py": "print('trained')\n"})
    entry = record(kb_in_git, "--", sys.executable, str(code / "train.py"), cwd=kb_in_git.root)
    assert entry.data["git"] == {
        "commit": commit,
        "branch": "main",
        "dirty": False,
        "repository": str(code.resolve()),
        "found_from": "the command's file train.py",
    }


def test_the_working_folders_repository(kb_in_git: KnowledgeBase, tmp_path: Path) -> None:
    code = tmp_path / "code"
    commit = repository(code, {"train.py": "print('trained')\n"})
    entry = record(kb_in_git, "--", sys.executable, "-c", "print(1)", cwd=code)
    assert (entry.data["git"]["commit"], entry.data["git"]["found_from"]) == (commit, "the working folder")


def test_code_dir_names_the_repository(kb_in_git: KnowledgeBase, tmp_path: Path) -> None:
    code = tmp_path / "code"
    commit = repository(code, {"train.py": "print('trained')\n"})
    (code / "train.py").write_text("print('changed')\n")
    entry = record(kb_in_git, "--code-dir", str(code), "--", sys.executable, "-c", "print(1)", cwd=kb_in_git.root)
    git_section = entry.data["git"]
    assert (git_section["commit"], git_section["dirty"], git_section["found_from"]) == (commit, True, "--code-dir")
    diff = (kb_in_git.attachments_path(entry).parent / git_section["diff"]).read_text()
    assert "+print('changed')" in diff


def test_no_repository_is_said_not_the_knowledge_bases_named(kb_in_git: KnowledgeBase, tmp_path: Path) -> None:
    script = tmp_path / "loose" / "train.py"
    script.parent.mkdir()
    script.write_text("print('trained')\n")
    entry = record(kb_in_git, "--", sys.executable, str(script), cwd=kb_in_git.root)
    git_section = entry.data["git"]
    assert git_section["commit"] is None and git_section["dirty"] is None
    assert git_section["none"].startswith("no git repository holds the command's files or its working folder")


def test_code_dir_outside_a_repository_is_said(kb: KnowledgeBase, tmp_path: Path) -> None:
    entry = record(kb, "--code-dir", str(tmp_path), "--", sys.executable, "-c", "print(1)", cwd=tmp_path)
    assert entry.data["git"]["none"] == f"--code-dir {tmp_path.resolve()} is not in a git repository"


def test_code_dir_must_exist(kb: KnowledgeBase, tmp_path: Path) -> None:
    ran = run_kb("record", "--code-dir", str(tmp_path / "nowhere"), "--", "true", cwd=tmp_path)
    assert (ran.returncode, ran.stderr.strip()) == (
        1,
        f"kb: error: --code-dir {tmp_path / 'nowhere'}: no such folder; name the folder of the code that runs",
    )
    assert list(kb.iter_entry_paths()) == []


def test_a_rerun_compares_the_codes_repository_not_the_working_folders(
    kb_in_git: KnowledgeBase, tmp_path: Path
) -> None:
    code = tmp_path / "code"
    first = repository(code, {"train.py": "print('trained')\n"})
    entry = record(kb_in_git, "--", sys.executable, str(code / "train.py"), cwd=kb_in_git.root)
    unchanged = run_kb("rerun", "--yes", entry.id, cwd=kb_in_git.root)
    assert unchanged.returncode == 0 and "the code changed" not in unchanged.stderr, unchanged.stderr
    (code / "train.py").write_text("print('trained again')\n")
    git(code, "commit", "-q", "-am", "second")
    changed = run_kb("rerun", "--yes", entry.id, cwd=kb_in_git.root)
    now = git(code, "rev-parse", "HEAD")
    assert f"the code changed: {entry.id} ran at commit {first[:12]}, {code.resolve()} is now at {now[:12]}" in (
        changed.stderr
    )
