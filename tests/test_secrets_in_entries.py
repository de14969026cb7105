"""Secrets planted everywhere a run can carry them never reach any file of the knowledge base."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from conftest import run_kb

from kb.store.knowledge_base import KnowledgeBase

# Built at run time so that no scanner mistakes this file for a leak.
HF = "hf_" + "Ab3De5Gh7Jk9Mn1Pq3Rs5Tu7Vw9Xy1Za3B"
GITHUB = "ghp_" + "A1b2C3d4" * 4 + "E5f6"
OPENAI = "sk-proj-" + "Zx9Yw8Vu7Ts6Rq5Po4Nm3Lk2Ji1Hg0Fe" * 2
AWS_ID = "AKIA" + "QWERTYUIOPASDFGH"
AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/" + "bPxRfiCYEXAMPLEKEY"
PASSWORD = "hunter2-" + "correct-horse"
JWT = "eyJhbGciOiJIUzI1NiJ9." + "eyJzdWIiOiIxMjM0NTY3ODkwIn0." + "dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U"
KEY_BODY = "MIIEvQIBADANBgkqhkiG9w0BAQEFAASC" + "BKcwggSjAgEAAoIBAQC7"
PRIVATE_KEY = f"-----BEGIN PRIVATE KEY-----\n{KEY_BODY}\n-----END PRIVATE KEY-----"
SECRETS = [HF, GITHUB, OPENAI, AWS_ID, AWS_SECRET, PASSWORD, JWT, KEY_BODY]
LOOK_ALIKES = ["2.13.0+cpu", "TOKENIZERS_PARALLELISM", "d4f3c2b1a0e9d8c7b6a5f4e3d2c1b0a9f8e7d6c5", "tokens_per_s"]


def all_text(root: Path) -> str:
    return "\n".join(p.read_text("utf-8", errors="replace") for p in sorted(root.rglob("*")) if p.is_file())


def test_secrets_never_reach_entries_or_attachments(kb: KnowledgeBase, tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=work, check=True)
    (work / "config.py").write_text("LR = 3e-4\n")
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", "add", "."], cwd=work, check=True)
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "init"], cwd=work, check=True)
    (work / "config.py").write_text(f"LR = 3e-4\nAPI_TOKEN = '{GITHUB}'\n")  # an uncommitted, leaking change

    script = (
        f"print('using key {AWS_ID} and aws_secret_access_key={AWS_SECRET}')\n"
        f"print('''{PRIVATE_KEY}''')\n"
        "print('commit d4f3c2b1a0e9d8c7b6a5f4e3d2c1b0a9f8e7d6c5 torch 2.13.0+cpu tokens_per_s=120')\n"
    )
    env = {
        "HF_TOKEN": HF,
        "DATABASE_URL": f"postgres://kb:{PASSWORD}@db.internal/runs",
        "TOKENIZERS_PARALLELISM": "false",
        "OPENAI_API_KEY": OPENAI,
    }
    result = run_kb(
        "record",
        "--note",
        f"Auth header was Bearer {JWT}",
        "--setting",
        f"password={PASSWORD}",
        "--",
        sys.executable,
        "-c",
        script,
        "--api-key",
        OPENAI,
        f"--token={HF}",
        cwd=work,
        env={**env, "TORCH_LOGS": "+dynamo"},
    )
    assert result.returncode == 0, result.stderr
    assert AWS_ID in result.stdout  # the terminal sees the command's own output unchanged

    log = tmp_path / "remote.log"
    log.write_text(
        f"export HF_TOKEN={HF}\nretrying with password: {PASSWORD}\n{PRIVATE_KEY}\nTOKENIZERS_PARALLELISM=false\n"
    )
    after = run_kb("record", "--title", "imported", "--log", str(log), "--no-edit", env=env)
    assert after.returncode == 0, after.stderr

    stored = all_text(kb.root)
    for secret in SECRETS:
        assert secret not in stored, secret
    for harmless in LOOK_ALIKES:
        assert harmless in stored, harmless
    assert "[REDACTED]" in stored
    assert "TOKENIZERS_PARALLELISM: 'false'" in stored  # the variable shapes a run and is kept
    assert "git.diff" in stored and "API_TOKEN" in stored  # the diff is kept, its secret masked


def test_a_run_folder_file_masked_in_place_keeps_who_may_read_it(kb: KnowledgeBase) -> None:
    # A file the run kept to its owner (0600) must not become readable by all when its secrets are masked.
    writer = f"import os; p = os.path.join(os.environ['KB_RUN_DIR'], 'login.txt'); open(p, 'w').write('token {HF}\\n')"
    writer += "; os.chmod(p, 0o600)"
    recorded = subprocess.run([sys.executable, "-m", "kb", "record", "--", sys.executable, "-c", writer],
                              capture_output=True, text=True, timeout=120)  # fmt: skip
    assert recorded.returncode == 0, recorded.stderr
    (masked,) = kb.entries_path.glob("*/run/login.txt")
    assert masked.read_text() == "token [REDACTED]\n"
    assert masked.stat().st_mode & 0o777 == 0o600
