"""Refresh the vendored gitleaks rules: `python -m kb.secrets.refresh [REF]` (a tag or commit; default: the latest
release). Downloads config/gitleaks.toml and LICENSE at REF, writes them beside this file with the version in a
header, and compiles every rule, so that a rule Python cannot read is seen before it is committed."""

from __future__ import annotations

import json
import sys
import urllib.request
from pathlib import Path

HERE = Path(__file__).parent
REPO = "gitleaks/gitleaks"


def _get(url: str) -> bytes:
    with urllib.request.urlopen(url, timeout=30) as response:
        return response.read()


def refresh(ref: str | None) -> str:
    if ref is None:
        ref = json.loads(_get(f"https://api.github.com/repos/{REPO}/releases/latest"))["tag_name"]
    commit = json.loads(_get(f"https://api.github.com/repos/{REPO}/commits/{ref}"))
    sha, date = commit["sha"], commit["commit"]["committer"]["date"][:10]
    rules = _get(f"https://raw.githubusercontent.com/{REPO}/{sha}/config/gitleaks.toml").decode()
    header = (
        f"# Vendored from https://github.com/{REPO} config/gitleaks.toml\n"
        f"# version: {ref} (commit {sha}, {date}); MIT, see LICENSE-gitleaks\n"
        "# Refresh: python -m kb.secrets.refresh [REF]\n"
    )
    (HERE / "gitleaks.toml").write_text(header + rules, encoding="utf-8")
    (HERE / "LICENSE-gitleaks").write_bytes(_get(f"https://raw.githubusercontent.com/{REPO}/{sha}/LICENSE"))
    from kb.secrets import gitleaks

    gitleaks._all_rules.cache_clear()
    return f"{ref} ({sha[:10]}): {len(gitleaks._all_rules())} rules compiled"


if __name__ == "__main__":
    print(refresh(sys.argv[1] if len(sys.argv) > 1 else None))
