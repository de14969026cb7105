"""Nosey Parker's rule set (noseyparker.json beside this file, Apache-2.0) read as kb.secrets.rules reads rules: its
regexes are Rust's, and it has no keywords, so each rule's are the texts its regex needs (kb.secrets.literals, read
when the file is refreshed and stored beside the rule). A rule that needs none is tried on every line that can hold a
token (kb.secrets.redact passes only those). Its rules match across lines (a command continued with `\\`, a Terraform
block), so a rule is tried on two lines after its keyword's."""

from __future__ import annotations

import functools
import re
from pathlib import Path

from kb.secrets import rules as engine
from kb.secrets.rules import Rule

RULES_FILE = Path(__file__).with_name("noseyparker.json")


@functools.cache
def rules() -> tuple[Rule, ...]:
    """The vendored rules that find a secret, compiled when first used; the rest find identifiers (account ids,
    client ids, bucket names), which evidence may hold."""
    found = []
    for rule in engine.read(RULES_FILE)["rules"]:
        if "secret" in rule.get("categories", ()):
            keywords = tuple(rule["keywords"])
            groups = tuple(n for n, said in _groups(rule["pattern"]).items() if not _IDENTIFIER.search(said))
            found.append(Rule(rule["id"], rule["pattern"], keywords, groups=groups, lines_after=2, allows=_KEPT))
    return tuple(found)


_DIGEST = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")


class _DigestOnALaterLine:
    """A git commit or a SHA-256 in lower-case hex, lines after what the rule matched first: evidence is full of them
    (`commit <sha>` on the line after an AWS key id is no secret key). On the rule's own line, it is masked."""

    @staticmethod
    def allows(secret: str, match: str, line: str) -> bool:
        return "\n" in match and secret not in match.partition("\n")[0] and _DIGEST.fullmatch(secret) is not None


_KEPT = (_DigestOnALaterLine(),)
# What a rule's comment calls a group that identifies rather than authenticates: kept, since evidence holds them.
_IDENTIFIER = re.compile(r"(?i)\b(?:user ?name|host ?name|path|url|domain)\b")


def _groups(pattern: str) -> dict[int, str]:
    """Each capturing group's number -> the comment on the line where it closes (`([^:]+) (?# username )`, in a
    `(?x)` pattern), or ""."""
    names: dict[int, str] = {}
    opened: list[int] = []  # per open group: its number, 0 where it captures nothing
    number, at, in_class = 0, 0, False
    while at < len(pattern):
        char = pattern[at]
        if char == "\\":
            at += 2
            continue
        if in_class:
            in_class = char != "]"
        elif char == "[":
            in_class = True
        elif char == "(":
            if pattern.startswith("(?#", at):
                at = pattern.find(")", at) + 1 or len(pattern)
                continue
            captures = not pattern.startswith("(?", at) or pattern.startswith(("(?P<", "(?<"), at)
            number += captures
            opened.append(number if captures else 0)
            if captures:
                names[number] = ""
        elif char == ")" and opened:
            group = opened.pop()
            line_end = pattern.find("\n", at)
            comment = re.search(r"\(\?#([^)]*)\)", pattern[at + 1 : line_end if line_end >= 0 else len(pattern)])
            if group and comment:
                names[group] = comment[1]
        at += 1
    return names


@functools.cache
def by_keyword() -> engine.Table:
    return engine.by_keyword(rules())


@functools.cache
def unkeyed() -> tuple[Rule, ...]:
    return tuple(rule for rule in rules() if not rule.keywords)


def find(text: str, lowered: str | None = None) -> list[tuple[int, int, str]]:
    """(start, end, rule id) of each secret Nosey Parker's rules find in `text`."""
    return engine.find(text, by_keyword(), unkeyed(), lowered)
