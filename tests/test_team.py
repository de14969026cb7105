"""A team sharing one knowledge base through git: what kb init ignores, who signs what, releases recorded once,
and two clones that record, review, pull and merge without a conflict in anything kb wrote."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import json_data, run_kb

from kb.answers.decisions import reviews_of
from kb.model.entry import Entry
from kb.store.knowledge_base import KnowledgeBase


def git(repo: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["git", "-c", "commit.gpgsign=false", "-c", "init.defaultBranch=main", "-c", "pull.rebase=false", *args],
        cwd=repo,
        capture_output=True,
        text=True,
        check=check,
    )


@pytest.fixture(autouse=True)
def own_git_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """This machine's own git identity stays out: each test says who is at the keyboard."""
    config = tmp_path / "gitconfig"
    config.write_text("")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(config))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    for name in ("GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_COMMITTER_NAME", "GIT_COMMITTER_EMAIL"):
        monkeypatch.delenv(name, raising=False)
    return config


def kb_json(root: Path, command: str, *args: str) -> object:
    ran = run_kb("--kb", str(root), command, "--json", *args)
    assert ran.returncode == 0, ran.stderr
    return json_data(ran.stdout)


def kb_ok(root: Path, *args: str) -> str:
    ran = run_kb("--kb", str(root), *args)
    assert ran.returncode == 0, ran.stderr
    return ran.stdout


# --- kb init ----------------------------------------------------------------------------------------------------


def test_init_ignores_the_site_and_the_caches_keeping_the_gitignore(tmp_path: Path) -> None:
    target = tmp_path / "team-kb"
    target.mkdir()
    (target / ".gitignore").write_text("notes/scratch.txt")  # the team's own rule, without a final newline
    git(target, "init", "-q")
    assert run_kb("init", str(target)).returncode == 0
    assert (target / ".gitignore").read_text().splitlines() == [
        "notes/scratch.txt",
        "# Derived by kb from entries/, rebuilt in every clone: never committed (kb site build, kb index)",
        "/site/",
        "/.kb/",
    ]
    kb_ok(target, "site", "build")
    git(target, "add", "-A")
    staged = git(target, "diff", "--cached", "--name-only").stdout.split()
    assert sorted(staged) == [".gitignore", "kb.toml"]  # no page of the site, no index
    again = run_kb("init", str(target))
    assert again.stdout == f"Knowledge base already complete at {target}; nothing changed\n"


# --- authors ------------------------------------------------------------------------------------------------------


def test_runs_decisions_reviews_and_releases_are_signed_by_gits_identity(
    kb: KnowledgeBase, own_git_config: Path
) -> None:
    own_git_config.write_text("[user]\n\tname = Ada Lovelace\n\temail = ada@example.org\n")
    signed = "Ada Lovelace <ada@example.org>"
    run = kb_json(kb.root, "record", "--workload", "w", "--", sys.executable, "-c", "pass")
    decision = kb_json(kb.root, "decide", "--title", "Use CPU", "--question", "Which?", "--choice", "CPU")
    release = kb_json(kb.root, "release", "torch", "2.13.0")
    kb_ok(kb.root, "revisit", "--ack", decision["id"], "--note", "re-checked")
    own_git_config.write_text("[user]\n\tname = Grace Hopper\n\temail = grace@example.org\n")
    kb_ok(kb.root, "rerun", "--yes", run["id"])
    entries = [Entry.read(path) for path in kb.iter_entry_paths()]
    rerun = next(entry for entry in entries if (entry.data.get("links") or {}).get("rerun_of") == run["id"])
    assert rerun.data["author"] == "Grace Hopper <grace@example.org>"  # who ran it again, not who ran it first
    entries = {entry.id: entry for entry in entries}
    assert [entries[item["id"]].data.get("author") for item in (run, decision, release)] == [signed] * 3
    reviewed = Entry.read(kb.entries_path / decision["path"])
    assert [review["by"] for review in reviews_of(reviewed)] == [signed]


def test_without_a_git_identity_the_login_signs(kb: KnowledgeBase, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LOGNAME", "ada")
    decision = kb_json(kb.root, "decide", "--title", "Use CPU", "--question", "Which?", "--choice", "CPU")
    assert Entry.read(kb.entries_path / decision["path"]).data["author"] == "ada"


def test_an_author_given_is_kept(kb: KnowledgeBase, own_git_config: Path) -> None:
    own_git_config.write_text("[user]\n\tname = Ada Lovelace\n")
    run = kb_json(kb.root, "record", "--author", "Grace", "--", sys.executable, "-c", "pass")
    assert Entry.read(kb.entries_path / run["path"]).data["author"] == "Grace"


# --- releases -----------------------------------------------------------------------------------------------------


def test_a_release_recorded_twice_is_refused_with_the_first_id(kb: KnowledgeBase) -> None:
    first = kb_json(kb.root, "release", "torch-neuronx", "2.28.0")
    again = run_kb("--kb", str(kb.root), "release", "torch_neuronx", "2.28")  # the same package and version
    assert (again.returncode, again.stderr) == (
        1,
        f"kb: error: torch_neuronx 2.28 is already recorded as {first['id']}; nothing written\n",
    )
    assert len(list(kb.iter_entry_paths())) == 1
    kb_json(kb.root, "release", "torch-neuronx", "2.28.1")  # a newer one is recorded
    assert len(list(kb.iter_entry_paths())) == 2


# --- two clones ---------------------------------------------------------------------------------------------------


def clone(origin: Path, where: Path, name: str) -> Path:
    git(where.parent, "clone", "-q", str(origin), where.name)
    git(where, "config", "user.name", name)
    git(where, "config", "user.email", f"{name.lower()}@example.org")
    return where


def share(repo: Path, message: str) -> None:
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", message)
    git(repo, "push", "-q", "origin", "HEAD:main")


def record_and_review(repo: Path, decision: str, who: str) -> None:
    kb_ok(repo, "record", "--workload", "tiny-lm", "--backend", "cpu", "--", sys.executable, "-c", f"print('{who}')")
    kb_ok(repo, "revisit", "--ack", decision, "--note", f"re-checked by {who}")


def answers(repo: Path) -> tuple[object, object]:
    return kb_json(repo, "ls", "--limit", "0"), kb_json(repo, "board")


@pytest.mark.parametrize(
    "same_decision",
    [False, True],
    ids=["each-reviews-a-decision", "both-review-one-decision"],
)
def test_two_clones_record_review_pull_and_merge(tmp_path: Path, same_decision: bool) -> None:
    origin = tmp_path / "origin.git"
    git(tmp_path, "init", "-q", "--bare", str(origin))
    alice = clone(origin, tmp_path / "alice", "Alice")
    assert run_kb("init", str(alice)).returncode == 0
    first = kb_json(alice, "decide", "--title", "Use CPU", "--question", "Which?", "--choice", "CPU")["id"]
    second = kb_json(alice, "decide", "--title", "Use bf16", "--question", "Which?", "--choice", "bf16")["id"]
    kb_ok(alice, "site", "build")
    share(alice, "a knowledge base")
    bob = clone(origin, tmp_path / "bob", "Bob")

    record_and_review(alice, first, "alice")
    kb_ok(alice, "site", "build")
    share(alice, "alice's run")
    record_and_review(bob, first if same_decision else second, "bob")
    kb_ok(bob, "site", "build")
    git(bob, "add", "-A")
    git(bob, "commit", "-q", "-m", "bob's run")
    git(bob, "pull", "-q", "--no-edit", "origin", "main")  # a merge: raises on a conflict
    git(bob, "push", "-q", "origin", "HEAD:main")
    git(alice, "pull", "-q", "--no-edit", "origin", "main")

    assert git(bob, "status", "--porcelain").stdout == ""  # nothing kb wrote is left out of git or in conflict
    assert answers(alice) == answers(bob)
    merged = [Entry.read(path) for path in KnowledgeBase(bob).iter_entry_paths()]
    authors = [entry.data["author"] for entry in merged if entry.kind == "run"]
    reviews = [review["by"] for entry in merged if entry.kind == "decision" for review in reviews_of(entry)]
    signed = ["Alice <alice@example.org>", "Bob <bob@example.org>"]
    assert (sorted(authors), sorted(reviews)) == (signed, signed)
    assert json.dumps(answers(bob)).count("tiny-lm") > 0
