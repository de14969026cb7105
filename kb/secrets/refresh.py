"""Refresh the vendored gitleaks rules: `python -m kb.secrets.refresh [REF]` (a tag or commit; default: the latest
release). Downloads config/gitleaks.toml and LICENSE at REF, writes the rules beside this file as gitleaks.json
(what kb reads: JSON loads far faster than TOML) with where and which version they came from, and the license, and
compiles every rule, so that a rule Python cannot read is seen before it is committed."""

from __future__ import annotations

import json
import sys
import urllib.request
from pathlib import Path

from kb.store.config import loads_toml

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
    config = loads_toml(_get(f"https://raw.githubusercontent.com/{REPO}/{sha}/config/gitleaks.toml").decode())
    vendored = {
        "from": f"https://github.com/{REPO} config/gitleaks.toml",
        "version": ref,
        "commit": sha,
        "date": date,
        "license": "MIT, see LICENSE-gitleaks",
        "refresh": "python -m kb.secrets.refresh [REF]",
    }
    text = json.dumps({"vendored": vendored, **config}, indent=1, ensure_ascii=False)
    (HERE / "gitleaks.json").write_text(text + "\n", encoding="utf-8")
    (HERE / "LICENSE-gitleaks").write_bytes(_get(f"https://raw.githubusercontent.com/{REPO}/{sha}/LICENSE"))
    from kb.secrets import gitleaks

    gitleaks._all_rules.cache_clear()
    return f"{ref} ({sha[:10]}): {len(gitleaks._all_rules())} rules compiled"


if __name__ == "__main__":
    print(refresh(sys.argv[1] if len(sys.argv) > 1 else None))
