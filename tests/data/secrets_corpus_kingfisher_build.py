"""Build tests/data/secrets_corpus_kingfisher.json from Kingfisher's rule examples (see secrets_corpus_kingfisher.py).

    python tests/data/secrets_corpus_kingfisher_build.py KINGFISHER_CLONE NOSEYPARKER_CLONE

Both clones are read with `git show` at the commits named below (a bare clone does). Every rule of Kingfisher's
`data/rules/` that finds a credential (not the ones it marks invisible or as identifiers: user names, account and
client ids) with one capturing group (the credential: with several, its rule does not say which); every example of
it, unless Kingfisher took it from Nosey Parker, whose rule set kb vendors and is tuned on: the rule's id (past its
`kingfisher.`/`np.` prefix) or name is one of Nosey Parker's, or the example's credential or text is in one of Nosey
Parker's examples. The credential's characters are replaced as in secrets_corpus_noseyparker_build.py, so that no value
stored is anyone's; the text around it is kept as the rule's authors wrote it. What is left out is listed, with why.
"""

from __future__ import annotations

import base64
import json
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

import yaml
from secrets_corpus_noseyparker_build import RULES as NOSEYPARKER_RULES
from secrets_corpus_noseyparker_build import python_pattern, randomised

KINGFISHER = "mongodb/kingfisher"
KINGFISHER_COMMIT = "ee7c0db3ef87575768f817820c24736249ffcdef"
KINGFISHER_RULES = "data/rules"
NOSEYPARKER = "praetorian-inc/noseyparker"
NOSEYPARKER_COMMIT = "2e6e7f36ce36619852532bbe698d8cb7a26d2da7"
OUT = Path(__file__).with_name("secrets_corpus_kingfisher.json")


def rule_files(clone: Path, commit: str, folder: str) -> list[dict]:
    """The rules of every YAML file in `folder` of the clone at `commit`."""
    listed = subprocess.run(
        ["git", "-C", str(clone), "ls-tree", "--name-only", f"{commit}:{folder}"],
        capture_output=True, text=True, check=True,
    ).stdout.split()  # fmt: skip
    rules = []
    for name in sorted(name for name in listed if name.endswith(".yml")):
        text = subprocess.run(
            ["git", "-C", str(clone), "show", f"{commit}:{folder}/{name}"], capture_output=True, text=True, check=True
        ).stdout
        rules += (yaml.safe_load(text) or {}).get("rules") or []
    return rules


def _suffix(rule_id: str) -> str:
    return rule_id.partition(".")[2]


def build(kingfisher: Path, noseyparker: Path) -> dict:
    theirs = rule_files(noseyparker, NOSEYPARKER_COMMIT, NOSEYPARKER_RULES)
    their_ids = {_suffix(rule["id"]) for rule in theirs}
    their_names = {rule["name"].strip().lower() for rule in theirs}
    their_examples = "\n".join(example for rule in theirs for example in rule.get("examples") or [])
    items, skipped, theirs_too = [], [], []
    seen: Counter[str] = Counter()
    for rule in rule_files(kingfisher, KINGFISHER_COMMIT, KINGFISHER_RULES):
        if rule.get("visible") is False or "identifier" in (rule.get("categories") or []):
            continue  # a user name, an account or client id: found to validate a credential beside it
        theirs_too_whole = _suffix(rule["id"]) in their_ids or rule["name"].strip().lower() in their_names
        seen[rule["id"]] += 1
        if seen[rule["id"]] > 1:  # an id two rules share: the later ones told apart by their order
            rule = {**rule, "id": f"{rule['id']}.{seen[rule['id']]}"}
        if theirs_too_whole:
            theirs_too += [f"{rule['id']}#{n}" for n in range(len(rule.get("examples") or []))]
            continue
        try:
            pattern = re.compile(python_pattern(rule["pattern"]))
        except re.error:
            skipped += [f"{rule['id']}#{n}" for n in range(len(rule.get("examples") or []))]
            continue  # a construct Python's `re` lacks
        for number, example in enumerate(rule.get("examples") or []):
            ident = f"{rule['id']}#{number}"
            match = pattern.search(example) if pattern.groups == 1 else None
            secret = match[1] if match else None
            if not secret or not re.search(r"[A-Za-z0-9]{10,}", secret):
                skipped.append(ident)  # several groups, no match, or no ten letters and digits in a row to probe for
                continue
            if secret in their_examples or example.strip() in their_examples:
                theirs_too.append(ident)
                continue
            value = randomised(secret, example, pattern, ident)
            if value is None:
                skipped.append(ident)
                continue
            items.append({"id": ident, "rule": rule["name"], "text": _encoded(example.replace(secret, value)),
                          "value": _encoded(value)})  # fmt: skip
    return {
        "source": f"{KINGFISHER}@{KINGFISHER_COMMIT}",
        "left_out_as": f"{NOSEYPARKER}@{NOSEYPARKER_COMMIT}",
        "items": items,
        "skipped": skipped,
        "noseyparker_too": theirs_too,
    }


def _encoded(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


if __name__ == "__main__":
    OUT.write_text(json.dumps(build(Path(sys.argv[1]), Path(sys.argv[2])), indent=1) + "\n")
