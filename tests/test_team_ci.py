"""The team's CI recipe in examples/: its script records on a runner, pushes the entry past what other runners
pushed meanwhile, and builds the site; the workflow runs it and publishes that site on GitHub Pages."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from conftest import REPO, run_kb

from kb.model.entry import Entry
from kb.store.knowledge_base import KnowledgeBase

SCRIPT = REPO / "examples" / "team-record.sh"
WORKFLOW = REPO / "examples" / "team-record.yml"


def git(repo: Path, *args: str) -> str:
    ran = subprocess.run(
        ["git", "-c", "commit.gpgsign=false", "-c", "init.defaultBranch=main", *args],
        cwd=repo,
        capture_output=True,
        text=True,
        check=True,
    )
    return ran.stdout


@pytest.fixture
def team(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path, Path]:
    """The team's repository (bare, as on GitHub), a teammate's clone and a runner's clone, both behind nothing."""
    config = tmp_path / "gitconfig"
    config.write_text("[user]\n\tname = kb on runner-1\n\temail = kb-ci@example.org\n")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(config))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    origin = tmp_path / "origin.git"
    git(tmp_path, "init", "-q", "--bare", str(origin))
    teammate = tmp_path / "teammate"
    git(tmp_path, "clone", "-q", str(origin), str(teammate))
    assert run_kb("init", str(teammate)).returncode == 0
    git(teammate, "add", "-A")
    git(teammate, "commit", "-q", "-m", "a knowledge base")
    git(teammate, "push", "-q", "origin", "HEAD:main")
    runner = tmp_path / "runner"
    git(tmp_path, "clone", "-q", str(origin), str(runner))
    return origin, teammate, runner


def run_script(runner: Path, *command: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "WORKLOAD": "tiny-lm", "BACKEND": "cpu", "MODE": "eager", "CI_TAG": "nightly"}
    env["PATH"] = f"{Path(sys.executable).parent}:{env['PATH']}"  # kb and python of this environment
    env.pop("KB_HOME")  # the runner's clone is the knowledge base, as in CI
    return subprocess.run(
        ["bash", str(SCRIPT), "--", *command], capture_output=True, text=True, env=env, cwd=runner, timeout=600
    )


def pushed_entries(origin: Path, tmp_path: Path) -> list[Entry]:
    check = tmp_path / "check"
    git(tmp_path, "clone", "-q", str(origin), str(check))
    return [Entry.read(path) for path in KnowledgeBase(check).iter_entry_paths()]


@pytest.mark.parametrize(("code", "status"), [(0, "completed"), (3, "failed")])
def test_the_script_records_pushes_past_a_teammate_and_builds_the_site(
    team: tuple[Path, Path, Path], tmp_path: Path, code: int, status: str
) -> None:
    origin, teammate, runner = team
    # A teammate pushes a run after the runner cloned: the runner's push must still go through.
    assert run_kb("--kb", str(teammate), "record", "--workload", "tiny-lm", "--", "true").returncode == 0
    git(teammate, "add", "-A")
    git(teammate, "commit", "-q", "-m", "a teammate's run")
    git(teammate, "push", "-q", "origin", "HEAD:main")

    ran = run_script(runner, sys.executable, "-c", f"print('step 1'); raise SystemExit({code})")
    assert ran.returncode == code, ran.stdout + ran.stderr  # the run's own code, after the push and the site

    pushed = {entry.title: entry for entry in pushed_entries(origin, tmp_path)}
    recorded = pushed["tiny-lm cpu eager"]
    assert (recorded.status, recorded.data["tags"]) == (status, ["ci", "nightly"])
    assert recorded.data["author"] == "kb on runner-1 <kb-ci@example.org>"
    assert len(pushed) == 2  # the teammate's run too
    assert git(runner, "status", "--porcelain") == ""  # nothing kb wrote is left uncommitted or unignored
    site = (runner / "site" / "index.html").read_text()
    assert "tiny-lm" in site


def test_the_workflow_runs_the_script_publishes_the_site_and_uses_only_what_kb_has() -> None:
    workflow = yaml.safe_load(WORKFLOW.read_text())
    steps = workflow["jobs"]["record"]["steps"]
    runs = "\n".join(step.get("run", "") for step in steps)
    assert "bash examples/team-record.sh -- " in runs
    uploaded = next(step for step in steps if step.get("uses", "").startswith("actions/upload-pages-artifact"))
    assert uploaded["with"]["path"] == "site" and uploaded["if"] == "always()"
    published = workflow["jobs"]["publish"]
    assert published["needs"] == "record" and published["steps"][0]["uses"].startswith("actions/deploy-pages")
    assert workflow["permissions"] == {"contents": "write", "pages": "write", "id-token": "write"}
    for line in SCRIPT.read_text().splitlines():
        for name, options in re.findall(r"\bkb ([a-z-]+)((?: --?[a-z-]+)*)", line):
            helped = run_kb(name, "--help")
            assert helped.returncode == 0, f"kb {name} does not exist"
            for option in options.split():
                assert option in helped.stdout, f"kb {name} has no {option}"
