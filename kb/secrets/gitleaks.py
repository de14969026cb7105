"""gitleaks' rule set (gitleaks.json beside this file) in Python's `re`: each rule's regex, keywords, entropy and
allowlists, and a search that tries a rule only on the lines holding one of its keywords, as gitleaks does.

The rules are Go (RE2) regexes. Three things differ in Python and are translated where the file is loaded:
a flag group in the middle of a pattern (`ab(?i)cd`, scoped to the end of its group in Go), `\\z`, and POSIX
classes (`[[:alnum:]]`). tests/test_secrets_rules.py compiles every rule.

The rules are kept as JSON, converted from upstream's config/gitleaks.toml by kb.secrets.refresh: Python reads JSON
many times faster than TOML, and every `kb record` reads the rules.
"""

from __future__ import annotations

import functools
import json
import math
import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

RULES_FILE = Path(__file__).with_name("gitleaks.json")
# gitleaks' catch-all for `name = value`: kb's own context rules (kb.secrets.redact) decide those, with the look-alikes
# of training logs in mind (`key_states`, `num_key_value_heads=8`).
REPLACED = frozenset({"generic-api-key"})
_POSIX = {
    "alnum": "A-Za-z0-9", "alpha": "A-Za-z", "digit": "0-9", "lower": "a-z", "upper": "A-Z", "space": r"\s",
    "xdigit": "0-9A-Fa-f", "word": r"\w", "punct": r"!-/:-@\[-`{-~",
}  # fmt: skip


# Each rule and allowlist is made once and compared as itself (eq=False): a rule keys a table per text searched, and
# hashing one by value hashed all its allowlists.
@dataclass(frozen=True, eq=False)
class Allow:
    target: str  # "secret", "match" or "line"
    patterns: tuple[str, ...]  # Go syntax, translated and compiled when first needed
    stopwords: tuple[str, ...]

    @functools.cached_property
    def regexes(self) -> tuple[re.Pattern[str], ...]:
        return tuple(re.compile(translate(pattern)) for pattern in self.patterns)

    def allows(self, secret: str, match: str, line: str) -> bool:
        text = {"secret": secret, "match": match, "line": line}[self.target]
        if any(pattern.search(text) for pattern in self.regexes):
            return True
        lowered = secret.lower()
        return any(word in lowered for word in self.stopwords)


@dataclass(frozen=True, eq=False)
class Rule:
    id: str
    go_pattern: str  # translated and compiled when a text first holds one of the keywords
    keywords: tuple[str, ...]
    entropy: float = 0.0
    group: int | None = None
    allows: tuple[Allow, ...] = field(default=())

    @functools.cached_property
    def regex(self) -> re.Pattern[str]:
        return re.compile(translate(self.go_pattern))

    def secrets(self, text: str) -> Iterator[tuple[int, int]]:
        """The spans of the secrets this rule finds in `text` (a few whole lines)."""
        for match in self.regex.finditer(text):
            group = self.group if self.group is not None else _first_group(match)
            secret = match[group] or ""
            if not secret or (self.entropy and shannon(secret) < self.entropy):
                continue
            start, end = match.span(group)
            line = text[text.rfind("\n", 0, start) + 1 : (text.find("\n", end) + 1 or len(text) + 1) - 1]
            if any(allow.allows(secret, match[0], line) for allow in self.allows):
                continue
            yield start, end


def _first_group(match: re.Match[str]) -> int:
    return next((n for n in range(1, (match.re.groups or 0) + 1) if match[n]), 0)


def shannon(text: str) -> float:
    """Bits a character, as gitleaks measures a secret's entropy."""
    counts = Counter(text)
    return -sum(n / len(text) * math.log2(n / len(text)) for n in counts.values())


def translate(pattern: str) -> str:
    """A Go (RE2) regex as Python `re` reads it the same way."""
    pattern = re.sub(r"\[:(\w+):\]", lambda m: _POSIX[m[1]], pattern).replace(r"\z", r"\Z")
    out: list[str] = []
    closers: list[int] = []  # per open group: how many scoped-flag groups to close with it
    at, in_class = 0, False
    while at < len(pattern):
        char = pattern[at]
        if char == "\\":
            out.append(pattern[at : at + 2])
            at += 2
            continue
        if in_class:
            if char == "]" and not _class_start(pattern, at):
                in_class = False
            elif char == "[":
                char = r"\["  # a literal in a class: Python would warn of a nested set
            out.append(char)
        elif char == "[":
            in_class = True
            out.append(char)
        elif char == "(":
            flags = re.match(r"\(\?([a-zA-Z-]+)\)", pattern[at:])
            if flags and (out or closers):
                out.append(f"(?{flags[1]}:")
                if closers:
                    closers[-1] += 1
                else:
                    closers.append(1)  # the top level's pseudo-group, closed at the end
                    closers.insert(0, closers.pop())
                at += len(flags[0])
                continue
            closers.append(0)
            out.append(char)
        elif char == ")":
            out.append(")" * (closers.pop() if closers else 0) + ")")
        elif char == "|" and closers and closers[-1]:
            # an alternative ends the flags' scope in Go: close and reopen without them
            out.append(")" * closers[-1] + "|")
            closers[-1] = 0
        else:
            out.append(char)
        at += 1
    return "".join(out) + ")" * sum(closers)


def _class_start(pattern: str, at: int) -> bool:
    """Whether the `]` at `at` is a class's first character (`[]a]`, `[^]a]`), so a literal."""
    return (pattern[at - 1] == "[" and pattern[at - 2 : at] != "\\[") or pattern[at - 2 : at] == "[^"


@functools.cache
def rules() -> tuple[Rule, ...]:
    """Every rule of the vendored file but those kb replaces, compiled."""
    return tuple(rule for rule in _all_rules() if rule.id not in REPLACED)


@functools.cache
def _all_rules() -> tuple[Rule, ...]:
    config = json.loads(RULES_FILE.read_text(encoding="utf-8"))
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
def _by_keyword(generic: bool) -> dict[str, tuple[Rule, ...]]:
    table: dict[str, list[Rule]] = {}
    for rule in _all_rules() if generic else rules():
        for keyword in rule.keywords:
            table.setdefault(keyword, []).append(rule)
    return {keyword: tuple(found) for keyword, found in table.items()}


def find(text: str, lowered: str | None = None, every_rule: bool = False) -> list[tuple[int, int, str]]:
    """(start, end, rule id) of each secret the rules find in `text`; `lowered`: the text in lower case, each
    character where it was (kb.secrets.redact has it); `every_rule`: the rules kb replaces too (for measuring)."""
    lowered = text.lower() if lowered is None else lowered
    lines: dict[Rule, dict[int, int]] = {}
    for keyword, keyed in _by_keyword(every_rule).items():
        at = lowered.find(keyword)
        while at >= 0:
            start = text.rfind("\n", 0, at) + 1
            end = text.find("\n", at + len(keyword))
            end = len(text) if end < 0 else end + 1
            for rule in keyed:
                lines.setdefault(rule, {})[start] = end
            at = lowered.find(keyword, end)
    found = []
    for rule, spans in lines.items():
        for start, end in _runs(spans):
            found += [(start + s, start + e, rule.id) for s, e in rule.secrets(text[start:end])]
    return found


def _runs(lines: dict[int, int]) -> list[tuple[int, int]]:
    """Lines that follow each other joined, so that a rule spanning lines (a key block) sees them together."""
    runs: list[list[int]] = []
    for start in sorted(lines):
        if runs and runs[-1][1] >= start:
            runs[-1][1] = max(runs[-1][1], lines[start])
        else:
            runs.append([start, lines[start]])
    return [(start, end) for start, end in runs]
