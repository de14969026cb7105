"""`kb check --secrets` finds a credential that reached a knowledge base by hand (an edited entry, a copied log, a
gzip attachment), names file, line and rule and never the value, and fails; `kb site build` refuses to publish it
unless told to, naming the entry; the pre-commit hook runs the same check."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import yaml
from conftest import REPO, run_kb

from kb.store.knowledge_base import KnowledgeBase

TOKEN = "ghp_" + "Zx9Yw8Vu7Ts6Rq5Po4Nm3Lk2Ji1Hg0FeDcBa"
SHAPELESS = "Qm7" + "xT2vLp9Rw4Zk8Yb"


def _recorded(kb: KnowledgeBase, title: str) -> Path:
    done = run_kb("record", "--title", title, "--no-edit", "--status", "completed")
    assert done.returncode == 0, done.stderr
    return next(p for p in kb.entries_path.glob("*.md") if title.replace(" ", "-") in p.name)


def test_a_clean_base_passes_and_a_credential_put_there_by_hand_is_found(kb: KnowledgeBase) -> None:
    clean = _recorded(kb, "clean run")
    assert run_kb("check", "--secrets").returncode == 0
    edited = _recorded(kb, "edited run")
    edited.write_text(edited.read_text() + f"\nthe push used {TOKEN}\n")
    folder = edited.with_suffix("")
    folder.mkdir(exist_ok=True)
    (folder / "copied.log").write_text(f"step 1\nstep 2\ncurl -H 'Authorization: SSWS {SHAPELESS}'\n")
    (folder / "trace.log.gz").write_bytes(gzip.compress(f"a\nb\nc\nexport DB_PASSWORD={SHAPELESS}\n".encode()))
    done = run_kb("check", "--secrets")
    assert done.returncode == 1
    assert TOKEN not in done.stdout + done.stderr and SHAPELESS not in done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert any(line.startswith(f"{edited}:") and "gitleaks:github-pat" in line for line in lines), lines
    assert any(line.startswith(f"{folder / 'copied.log'}:3:") for line in lines), lines
    assert any(line.startswith(f"{folder / 'trace.log.gz'}:4:") for line in lines), lines
    assert not any(str(clean) in line for line in lines)
    report = json.loads(run_kb("check", "--secrets", "--json").stdout)["data"]
    assert {p["field"] for p in report["problems"]} == {"secrets"} and len(report["problems"]) == 3

    refused = run_kb("site", "build")
    assert refused.returncode == 1 and edited.stem in refused.stderr and clean.stem not in refused.stderr
    assert "--allow-secrets" in refused.stderr and not (kb.root / "site" / "index.html").exists()
    assert run_kb("site", "build", "--allow-secrets").returncode == 0


def test_the_pre_commit_hook_runs_the_check() -> None:
    (hook,) = yaml.safe_load((REPO / ".pre-commit-hooks.yaml").read_text())
    assert hook["id"] == "kb-secrets" and hook["entry"] == "kb check --secrets" and hook["pass_filenames"] is False
