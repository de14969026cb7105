"""Secret-scanning rules kept as data (gitleaks', Nosey Parker's) read in Python's `re`: each rule's regex, keywords,
entropy and allowlists, and a search that tries a rule only on the lines holding one of its keywords, as gitleaks
does.

The rules are Go (RE2) or Rust regexes. Three things differ in Python and are translated where a file is loaded:
a flag group in the middle of a pattern (`ab(?i)cd`, scoped to the end of its group in Go and Rust), `\\z`, and
POSIX classes (`[[:alnum:]]`). tests/test_secrets_rules.py compiles every rule.

Both sets are kept as JSON, converted from upstream's TOML and YAML by kb.secrets.refresh: Python reads JSON many
times faster, and every `kb record` reads the rules.
"""

from __future__ import annotations

import functools
import json
import math
import re
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

_POSIX = {
    "alnum": "A-Za-z0-9", "alpha": "A-Za-z", "digit": "0-9", "lower": "a-z", "upper": "A-Z", "space": r"\s",
    "xdigit": "0-9A-Fa-f", "word": r"\w", "punct": r"!-/:-@\[-`{-~",
}  # fmt: skip


def read(path: Path) -> dict[str, Any]:
    """A vendored rule file: its rules, and under "vendored" where and which version they came from."""
    return json.loads(path.read_text(encoding="utf-8"))


class Allows(Protocol):
    def allows(self, secret: str, match: str, line: str) -> bool:
        """Whether a secret the rule found is kept after all."""
        ...


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
    allows: tuple[Allows, ...] = field(default=())
    groups: tuple[int, ...] = ()  # the groups that are secrets (a user name and a password); () for the first found
    lines_after: int = 0  # lines after a keyword's that a match may reach (a URL on one line, its secret on the next)

    @functools.cached_property
    def regex(self) -> re.Pattern[str]:
        return re.compile(translate(self.go_pattern))

    def secrets(self, text: str) -> Iterator[tuple[int, int]]:
        """The spans of the secrets this rule finds in `text` (a few whole lines)."""
        for match in self.regex.finditer(text):
            for group in self._groups(match):
                secret = match[group] or ""
                if not secret or (self.entropy and shannon(secret) < self.entropy):
                    continue
                start, end = match.span(group)
                line = text[text.rfind("\n", 0, start) + 1 : (text.find("\n", end) + 1 or len(text) + 1) - 1]
                if any(allow.allows(secret, match[0], line) for allow in self.allows):
                    continue
                yield start, end

    def _groups(self, match: re.Match[str]) -> list[int]:
        if self.group is not None:
            return [self.group]
        if self.groups:
            return [n for n in self.groups if match[n]]
        return [next((n for n in range(1, (match.re.groups or 0) + 1) if match[n]), 0)]


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


# Keywords are searched for by their beginnings: one search of the text serves every keyword that begins alike, and a
# keyword holding a shorter one (`aws_access` and `aws`) is searched for by the shorter one's beginning; only a line
# holding the beginning is read for the keywords themselves. Each search costs milliseconds on a line of megabytes,
# so their number is what a long line costs (the two vendored sets' 385 keywords take 223 searches).
_BEGINNING = 3
Table = dict[
    str, dict[str, tuple[Rule, ...]]
]  # what is searched for -> keyword -> the rules a line holding it calls for


def by_keyword(rules: Iterable[Rule]) -> Table:
    """The table `find` reads: which rules a line holding each keyword is searched for, by what is searched for."""
    rules = tuple(rules)
    keywords = sorted({keyword for rule in rules for keyword in rule.keywords}, key=len)
    table: dict[str, dict[str, list[Rule]]] = {}
    for rule in rules:
        for keyword in rule.keywords:
            shortest = next(other for other in keywords if other in keyword)
            table.setdefault(shortest[:_BEGINNING], {}).setdefault(keyword, []).append(rule)
    return {searched: {keyword: tuple(found) for keyword, found in keyed.items()} for searched, keyed in table.items()}


def find(
    text: str, keyed: Table, unkeyed: tuple[Rule, ...] = (), lowered: str | None = None
) -> list[tuple[int, int, str]]:
    """(start, end, rule id) of each secret the rules find in `text`: each rule of `keyed` (by_keyword's table) on
    the lines holding one of its keywords, each of `unkeyed` everywhere; `lowered`: the text in lower case, each
    character where it was."""
    lowered = text.lower() if lowered is None else lowered
    lines: dict[Rule, dict[int, int]] = {}
    for searched, keywords in keyed.items():
        at = lowered.find(searched)
        while at >= 0:
            start = text.rfind("\n", 0, at) + 1
            end = _line_end(text, at + len(searched))
            line = None  # read only where a keyword is longer than what was found
            for keyword, rules in keywords.items():
                if keyword != searched:
                    line = lowered[start:end] if line is None else line
                    if keyword not in line:
                        continue
                for rule in rules:
                    reach = end
                    for _ in range(rule.lines_after):
                        reach = _line_end(text, reach)
                    spans = lines.setdefault(rule, {})
                    spans[start] = max(spans.get(start, 0), reach)
            at = lowered.find(searched, end)
    found = []
    for rule, spans in lines.items():
        for start, end in _runs(spans):
            found += [(start + s, start + e, rule.id) for s, e in rule.secrets(text[start:end])]
    for rule in unkeyed:
        found += [(start, end, rule.id) for start, end in rule.secrets(text)]
    return found


def _line_end(text: str, at: int) -> int:
    """Where the line holding `at` ends, after its newline."""
    end = text.find("\n", at)
    return len(text) if end < 0 else end + 1


def _runs(lines: dict[int, int]) -> list[tuple[int, int]]:
    """Lines that follow each other joined, so that a rule spanning lines (a key block) sees them together."""
    runs: list[list[int]] = []
    for start in sorted(lines):
        if runs and runs[-1][1] >= start:
            runs[-1][1] = max(runs[-1][1], lines[start])
        else:
            runs.append([start, lines[start]])
    return [(start, end) for start, end in runs]
