"""Secrets that arrive cut in pieces are masked as if they came whole: a private key printed one line at a time,
a token past a 64 KiB line, a token where the 5 MB git diff is cut, and any split of a text fed to the masker."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from conftest import only_entry
from hypothesis import given, settings
from hypothesis import strategies as st

from kb.secrets.redact import MASK, StreamMasker, redact_text
from kb.store.knowledge_base import KnowledgeBase

KEY_LINES = ["MIIEpAIBAAKCAQEA" + "x7Q2" * 12, "Pz4Lk9Rt" * 8, "Wm3Vn8Ya" * 4 + "Qb=="]
KEY = "\n".join(["-----BEGIN RSA PRIVATE KEY-----", *KEY_LINES, "-----END RSA PRIVATE KEY-----"])
TOKEN = "ghp_" + "Rf5Tg6Yh7Uj8Ik9Ol0Pa1Sd2Fg3Hj4Kl5Zxq"
PASSWORD = "g7Tq" + "Xw2Lp9Rk4Mz"


def _record(*script: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "kb", "record", "--title", "cut", "--", sys.executable, "-c",
                           "\n".join(script)], capture_output=True, timeout=120)  # fmt: skip


def _stored(kb: KnowledgeBase) -> str:
    entry = only_entry(kb)
    files = [entry.path, *(p for p in kb.attachments_path(entry).rglob("*") if p.is_file())]
    return "\n".join(p.read_text("utf-8", "replace") for p in files)


def test_a_private_key_printed_one_line_at_a_time_is_masked_whole(kb: KnowledgeBase) -> None:
    lines = KEY.split("\n")
    result = _record("import sys, time", f"for line in {lines!r}:", "    print(line, flush=True); time.sleep(0.05)")
    assert result.returncode == 0 and result.stdout.decode() == KEY + "\n"  # the terminal sees it all
    stored = _stored(kb)
    assert MASK in stored and not any(part[:12] in stored for part in KEY_LINES)


def test_a_secret_past_64_kib_of_one_line_is_masked(kb: KnowledgeBase) -> None:
    for pad in (65_530, 65_536 - len("token="), 65_540):
        line = "p" * pad + f" token={PASSWORD} " + TOKEN + " q" * 40_000
        masked = "".join(piece for piece in _pieces(line, 4096))
        assert PASSWORD[2:] not in masked and TOKEN[6:] not in masked, pad
    result = _record("import sys", f"sys.stdout.write('p' * 65530 + ' token={PASSWORD} ' + 'q' * 100000)")
    assert result.returncode == 0
    assert PASSWORD[2:] not in _stored(kb)


def test_the_git_diff_cap_never_keeps_half_a_token(kb: KnowledgeBase, tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "init", "-q"], cwd=work, check=True)
    (work / "big.txt").write_text("")
    subprocess.run([*git, "add", "."], cwd=work, check=True)
    subprocess.run([*git, "commit", "-qm", "init"], cwd=work, check=True)
    cap = 5 * 1024 * 1024
    header = len("diff --git a/big.txt b/big.txt\n--- a/big.txt\n+++ b/big.txt\n@@ -0,0 +1,2 @@\n") + 50
    (work / "big.txt").write_text("+" * (cap - header - 20) + "\n" + f"API_TOKEN={TOKEN}\n")
    result = subprocess.run([sys.executable, "-m", "kb", "record", "--title", "diff", "--", "true"], cwd=work,
                            capture_output=True, timeout=120)  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert TOKEN[:10] not in _stored(kb) and TOKEN[-10:] not in _stored(kb)


def _pieces(text: str, size: int) -> list[str]:
    masker = StreamMasker()
    return [masker.feed(text[start : start + size]) for start in range(0, len(text), size)] + [masker.close()]


SECRET_TEXTS = [KEY, f"token={PASSWORD}", f"--password {PASSWORD}", f"Authorization: Bearer {TOKEN}", TOKEN]


@settings(max_examples=150, deadline=None)
@given(
    before=st.text(st.sampled_from("ab =:\n,{"), max_size=200),
    secret=st.sampled_from(SECRET_TEXTS),
    cuts=st.lists(st.integers(1, 400), min_size=1, max_size=12),
)
def test_any_split_masks_as_the_whole_does(before: str, secret: str, cuts: list[int]) -> None:
    text = before + "\n" + secret + "\nafter\n"
    masker, out, start = StreamMasker(long_line=64), [], 0
    for size in cuts:
        out.append(masker.feed(text[start : start + size]))
        start += size
    out += [masker.feed(text[start:]), masker.close()]
    assert "".join(out) == redact_text(text)
