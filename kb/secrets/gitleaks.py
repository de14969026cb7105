"""gitleaks' rule set (gitleaks.json beside this file, MIT) read as kb.secrets.rules reads rules: its regexes are
Go's (RE2), its keywords its own."""

from __future__ import annotations

import functools
from pathlib import Path

from kb.secrets import rules as engine
from kb.secrets.rules import Allow, Rule

RULES_FILE = Path(__file__).with_name("gitleaks.json")
# gitleaks' catch-all for `name = value`: kb's own context rules (kb.secrets.redact) decide those, with the look-alikes
# of training logs in mind (`key_states`, `num_key_value_heads=8`).
REPLACED = frozenset({"generic-api-key"})


@functools.cache
def rules() -> tuple[Rule, ...]:
    """Every rule of the vendored file but those kb replaces, compiled."""
    return tuple(rule for rule in _all_rules() if rule.id not in REPLACED)


@functools.cache
def _all_rules() -> tuple[Rule, ...]:
    config = engine.read(RULES_FILE)
    top = config.get("allowlist", {})
    common = Allow("secret", tuple(top.get("regexes", ())), tuple(top.get("stopwords", ())))
    out = []
    for rule in config["rules"]:
        if "regex" not in rule or "path" in rule:
            continue  # a rule about file names only
        allows = [common] + [
            Allow(
                allow.get("regexTarget", "secret"),
                tuple(allow.get("regexes", ())),
                tuple(word.lower() for word in allow.get("stopwords", ())),
            )
            for allow in rule.get("allowlists", ())
            if "paths" not in allow  # kb has no file path to match: an allowlist that needs one never applies
        ]
        out.append(
            Rule(
                rule["id"],
                rule["regex"],
                tuple(word.lower() for word in rule.get("keywords", ())),
                float(rule.get("entropy", 0.0)),
                rule.get("secretGroup"),
                tuple(allows),
            )
        )
    return tuple(out)


@functools.cache
def _by_keyword(generic: bool) -> engine.Table:
    return engine.by_keyword(_all_rules() if generic else rules())


def find(text: str, lowered: str | None = None, every_rule: bool = False) -> list[tuple[int, int, str]]:
    """(start, end, rule id) of each secret gitleaks' rules find in `text`; `lowered`: the text in lower case, each
    character where it was; `every_rule`: the rules kb replaces too (for measuring)."""
    return engine.find(text, _by_keyword(every_rule), lowered=lowered)
