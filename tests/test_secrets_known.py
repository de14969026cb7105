"""This machine's own credentials are masked by value in everything a run leaves, whatever their shape: the
secret-named environment of `kb record` and the credential files training tools read, in a home made for the test."""

from __future__ import annotations

import base64
import json
import sys
from pathlib import Path

from conftest import run_kb

from kb.secrets.known import gather
from kb.store.knowledge_base import KnowledgeBase

# Shapeless on purpose: no rule, context or entropy test would find these in a line of output.
KNOWN = {
    "netrc": "plain-words-horse-staple",
    "hf": "tea4two-and-two4tea",
    "aws": "lettuce.tomato.onion.9",
    "docker": "registry-pw-orange-77",
    "git": "gitcred-violet-88-x",
    "gh": "gh-cli-oauth-river-12",
    "pypi": "upload-pw-maple-tree",
    "npm": "npm-auth-lemon-grove",
    "kaggle": "kaggle-key-harbour-3",
    "env": "env-held-summer-rain",
}


def fake_home(home: Path) -> Path:
    (home / ".cache" / "huggingface").mkdir(parents=True)
    (home / ".aws").mkdir()
    (home / ".docker").mkdir()
    (home / ".config" / "gh").mkdir(parents=True)
    (home / ".kaggle").mkdir()
    (home / ".netrc").write_text(f"machine api.wandb.ai\n  login user\n  password {KNOWN['netrc']}\n")
    (home / ".cache" / "huggingface" / "token").write_text(KNOWN["hf"] + "\n")
    (home / ".aws" / "credentials").write_text(
        f"[default]\naws_access_key_id = AKIDPLAIN\naws_secret_access_key = {KNOWN['aws']}\nregion = us-east-1\n"
    )
    auth = base64.b64encode(f"bench:{KNOWN['docker']}".encode()).decode()
    (home / ".docker" / "config.json").write_text(json.dumps({"auths": {"ghcr.io": {"auth": auth}}}))
    (home / ".git-credentials").write_text(f"https://bench:{KNOWN['git']}@github.com\n")
    (home / ".config" / "gh" / "hosts.yml").write_text(f"github.com:\n    oauth_token: {KNOWN['gh']}\n")
    (home / ".pypirc").write_text(f"[pypi]\nusername = __token__\npassword = {KNOWN['pypi']}\n")
    (home / ".npmrc").write_text(f"//registry.npmjs.org/:_authToken={KNOWN['npm']}\n")
    (home / ".kaggle" / "kaggle.json").write_text(json.dumps({"username": "bench", "key": KNOWN["kaggle"]}))
    return home


def test_every_credential_file_is_read(tmp_path: Path) -> None:
    home = fake_home(tmp_path / "home")
    found = set(gather({"HOME": str(home), "DEPLOY_TOKEN": KNOWN["env"], "TOKENIZERS_PARALLELISM": "false"}, home))
    assert found == set(KNOWN.values()) | {"AKIDPLAIN", base64.b64encode(f"bench:{KNOWN['docker']}".encode()).decode()}
    assert gather({}, tmp_path / "nowhere") == ()  # no files: nothing known, no error


def test_known_values_are_masked_in_everything_a_run_leaves(kb: KnowledgeBase, tmp_path: Path) -> None:
    home = fake_home(tmp_path / "home")
    printer = "import sys\nfor word in sys.argv[1:]:\n    print('connected with', word)\n"
    done = run_kb(
        "record", "--title", "known", "--note", "used " + KNOWN["aws"], "--",
        sys.executable, "-c", printer, *KNOWN.values(),
        env={"HOME": str(home), "DEPLOY_TOKEN": KNOWN["env"]},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    stored = [p for p in kb.root.rglob("*") if p.is_file()]
    assert any(p.suffix == ".log" for p in stored)
    text = "\n".join(p.read_bytes().decode("utf-8", "replace") for p in stored)
    assert "connected with [REDACTED]" in text
    assert [name for name, value in KNOWN.items() if value in text] == []
