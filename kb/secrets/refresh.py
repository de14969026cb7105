"""Refresh a vendored rule set: `python -m kb.secrets.refresh gitleaks|noseyparker [REF]` (a tag or commit; default:
the latest release). Downloads the rules and the licence at REF, writes the rules beside this file as JSON (what kb
reads: JSON loads far faster than TOML or YAML) with where and which version they came from, and the licence, and
compiles every rule, so that a rule Python cannot read is seen before it is committed."""

from __future__ import annotations

import io
import json
import sys
import tarfile
import urllib.request
from pathlib import Path
from typing import Any

import yaml

from kb.secrets import literals
from kb.secrets import rules as engine
from kb.store.config import loads_toml

HERE = Path(__file__).parent
GITLEAKS = "gitleaks/gitleaks"
NOSEYPARKER = "praetorian-inc/noseyparker"
NOSEYPARKER_RULES = "crates/noseyparker/data/default/builtin/rules/"
# What kb reads of a Nosey Parker rule; its examples (credentials as found) and references stay upstream.
NOSEYPARKER_FIELDS = ("name", "id", "pattern", "categories")


def _get(url: str) -> bytes:
    with urllib.request.urlopen(url, timeout=30) as response:
        return response.read()


def _commit(repo: str, ref: str | None) -> tuple[str, str, str]:
    """(ref, commit, its date) of `ref`, or of the latest release."""
    if ref is None:
        ref = json.loads(_get(f"https://api.github.com/repos/{repo}/releases/latest"))["tag_name"]
    commit = json.loads(_get(f"https://api.github.com/repos/{repo}/commits/{ref}"))
    return ref, commit["sha"], commit["commit"]["committer"]["date"][:10]


def vendored_json(
    rule_set: str, source: str, licence: str, version: tuple[str, str, str], rules: dict[str, Any]
) -> str:
    """A rule set as kb reads it: the rules, and under "vendored" where (`source`: repository and files) and which
    version (ref, commit, date) they came from, their licence, and how to refresh them."""
    ref, sha, date = version
    vendored = {
        "from": f"https://github.com/{source}",
        "version": ref,
        "commit": sha,
        "date": date,
        "license": licence,
        "refresh": f"python -m kb.secrets.refresh {rule_set} [REF]",
    }
    return json.dumps({"vendored": vendored, **rules}, indent=1, ensure_ascii=False) + "\n"


def refresh_gitleaks(ref: str | None) -> str:
    ref, sha, date = _commit(GITLEAKS, ref)
    rules = loads_toml(_get(f"https://raw.githubusercontent.com/{GITLEAKS}/{sha}/config/gitleaks.toml").decode())
    source, licence = f"{GITLEAKS} config/gitleaks.toml", "MIT, see LICENSE-gitleaks"
    text = vendored_json("gitleaks", source, licence, (ref, sha, date), rules)
    (HERE / "gitleaks.json").write_text(text, encoding="utf-8")
    (HERE / "LICENSE-gitleaks").write_bytes(_get(f"https://raw.githubusercontent.com/{GITLEAKS}/{sha}/LICENSE"))
    from kb.secrets import gitleaks

    gitleaks._all_rules.cache_clear()
    return f"{ref} ({sha[:10]}): {len(gitleaks._all_rules())} rules compiled"


def refresh_noseyparker(ref: str | None) -> str:
    ref, sha, date = _commit(NOSEYPARKER, ref)
    files: dict[str, str] = {}
    with tarfile.open(fileobj=io.BytesIO(_get(f"https://api.github.com/repos/{NOSEYPARKER}/tarball/{sha}"))) as tar:
        for member in tar.getmembers():
            path = member.name.partition("/")[2]  # below the archive's top folder
            if path == "LICENSE" or (path.startswith(NOSEYPARKER_RULES) and path.endswith(".yml")):
                files[path] = tar.extractfile(member).read().decode()
    license_text = files.pop("LICENSE")
    (HERE / "noseyparker.json").write_text(noseyparker_rules(files, ref, sha, date), encoding="utf-8")
    (HERE / "LICENSE-noseyparker").write_text(license_text, encoding="utf-8")
    from kb.secrets import noseyparker

    noseyparker.rules.cache_clear()
    rules = noseyparker.rules()
    assert all(rule.regex for rule in rules)
    return f"{ref} ({sha[:10]}): {len(rules)} rules compiled, {sum(not r.keywords for r in rules)} with no keyword"


def noseyparker_rules(files: dict[str, str], ref: str, sha: str, date: str) -> str:
    """One file of the rules in Nosey Parker's rule files (path -> text), each with the fields kb reads and the
    keywords kb.secrets.literals reads from its pattern: reading them takes 50 ms, too long for every recording."""
    rules = [
        {field: rule[field] for field in NOSEYPARKER_FIELDS if field in rule} | {"keywords": keywords(rule["pattern"])}
        for path in sorted(files)
        for rule in yaml.safe_load(files[path])["rules"]
    ]
    fields = ", ".join(NOSEYPARKER_FIELDS)
    source = f"{NOSEYPARKER} {NOSEYPARKER_RULES}*.yml: each rule's {fields}, and the keywords its pattern needs"
    licence = "Apache-2.0, see LICENSE-noseyparker"
    return vendored_json("noseyparker", source, licence, (ref, sha, date), {"rules": rules})


def keywords(pattern: str) -> list[str]:
    """The texts one of which every match of a Nosey Parker pattern holds, lower-cased; [] where there are none."""
    return sorted(literals.required(engine.translate(pattern)) or ())


REFRESH = {"gitleaks": refresh_gitleaks, "noseyparker": refresh_noseyparker}

if __name__ == "__main__":
    if len(sys.argv) < 2 or sys.argv[1] not in REFRESH:
        sys.exit(f"usage: python -m kb.secrets.refresh {'|'.join(REFRESH)} [REF]")
    print(REFRESH[sys.argv[1]](sys.argv[2] if len(sys.argv) > 2 else None))
