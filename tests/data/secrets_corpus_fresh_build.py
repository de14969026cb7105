"""Build tests/data/secrets_corpus_fresh.json from Nosey Parker's rule examples (see secrets_corpus_fresh.py).

    python tests/data/secrets_corpus_fresh_build.py NOSEYPARKER_CHECKOUT COMMIT

Every rule its authors put in the `secret` category (not the identifiers: account ids, ARNs, client ids).
Each rule's regex (Rust syntax; its inline flags moved to the start, where Python takes them) finds the
credential in each of the rule's `examples`; the credential's characters are replaced by random ones of the
same class, fixed by the example's id, keeping its vendor prefix and what else the rule needs to find it, so
that no value stored is anyone's credential; the text around it is kept as the rule's authors wrote it.
Examples whose credential holds no ten letters and digits in a row (nothing to probe for) are left out and
listed.
"""

from __future__ import annotations

import base64
import hashlib
import json
import random
import re
import string
import sys
from pathlib import Path

import yaml

RULES = "crates/noseyparker/data/default/builtin/rules"
OUT = Path(__file__).with_name("secrets_corpus_fresh.json")
# A vendor prefix: a few parts of letters and digits each closed by `-`, `_` or `.` (`sk-ant-api03-`, `glpat-`,
# `github_pat_`), or the first four characters (`AKIA`, `AIza`).
_PREFIX = re.compile(r"(?:[A-Za-z0-9]{1,10}[-_.]){1,3}")
_HEX_LOWER, _HEX_UPPER = set("0123456789abcdef"), set("0123456789ABCDEF")


def python_pattern(pattern: str) -> str:
    """Rust's inline flags apply from where they stand; Python takes them only at the start: all moved there."""
    flags = "".join(sorted(set("".join(re.findall(r"\(\?([imsx]+)\)", pattern)))))
    return (f"(?{flags})" if flags else "") + re.sub(r"\(\?[imsx]+\)", "", pattern)


def randomised(secret: str, example: str, pattern: re.Pattern[str], seed: str) -> str | None:
    """The secret with its characters after the vendor prefix random, and as few more kept as the rule needs to
    still find it in the example (`:AA` of a Telegram token, the host of a webhook URL); None where only the
    secret itself would do."""
    prefix = _PREFIX.match(secret)
    for keep in range(max(len(prefix[0]) if prefix and len(prefix[0]) <= 14 else 0, 4), len(secret)):
        value = _random_after(secret, keep, seed)
        match = pattern.search(example.replace(secret, value))
        if match and value in match.groups():
            return value
    return None


def _random_after(secret: str, keep: int, seed: str) -> str:
    rng = random.Random(hashlib.sha256(seed.encode()).digest())
    body = secret[keep:]
    letters = {c for c in body if c.isalpha()}
    lower = "abcdef" if set(body) <= _HEX_LOWER and letters else string.ascii_lowercase
    upper = "ABCDEF" if set(body) <= _HEX_UPPER and letters else string.ascii_uppercase
    out = []
    for char in body:
        if char.isdigit():
            out.append(rng.choice(string.digits))
        elif char.islower() and char.isascii():
            out.append(rng.choice(lower))
        elif char.isupper() and char.isascii():
            out.append(rng.choice(upper))
        else:
            out.append(char)
    return secret[:keep] + "".join(out)


def build(checkout: Path, commit: str) -> dict:
    items, skipped = [], []
    for path in sorted((checkout / RULES).glob("*.yml")):
        for rule in yaml.safe_load(path.read_text())["rules"]:
            if "secret" not in rule.get("categories", []):
                continue  # an identifier (an account id, an ARN, a client id, a bucket name): no credential
            pattern = re.compile(python_pattern(rule["pattern"]))
            for number, example in enumerate(rule.get("examples") or []):
                ident = f"{rule['id']}#{number}"
                match = pattern.search(example)
                groups = [group for group in (match.groups() if match else ()) if group and len(group) >= 8]
                if not groups or not re.search(r"[A-Za-z0-9]{10,}", groups[-1]):
                    skipped.append(ident)  # no credential of ten letters and digits in a row to probe for
                    continue
                secret = groups[-1]
                value = randomised(secret, example, pattern, ident)
                if value is None:
                    skipped.append(ident)
                    continue
                text = example.replace(secret, value)
                items.append({"id": ident, "rule": rule["name"], "text": _encoded(text), "value": _encoded(value)})
    return {"source": f"praetorian-inc/noseyparker@{commit}", "items": items, "skipped": skipped}


def _encoded(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


if __name__ == "__main__":
    OUT.write_text(json.dumps(build(Path(sys.argv[1]), sys.argv[2]), indent=1) + "\n")
