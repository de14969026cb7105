"""The vendored gitleaks rule set: every rule compiles in Python's `re` as Go reads it, and finds its own shape."""

from __future__ import annotations

import json
import re
import warnings

import pytest

from kb.secrets import gitleaks


def test_every_rule_of_the_vendored_file_compiles_without_warnings() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a nested set or a bad escape read differently from Go
        gitleaks._all_rules.cache_clear()
        compiled = gitleaks._all_rules()
        assert all(rule.regex.pattern and all(allow.regexes is not None for allow in rule.allows) for rule in compiled)
    vendored = json.loads(gitleaks.RULES_FILE.read_text())
    assert len(compiled) == sum("regex" in rule and "path" not in rule for rule in vendored["rules"]) > 200
    assert vendored["vendored"]["version"].startswith("v8.")
    assert all(rule.keywords for rule in compiled if rule.id != "pkcs12-file")


@pytest.mark.parametrize(
    ("go", "python"),
    [
        ("ab(?i)cd", "ab(?i:cd)"),
        ("(?i)ab", "(?i)ab"),
        ("a(b(?i)c|d)e", "a(b(?i:c)|d)e"),
        ("x(?-i:[A-Z])y", "x(?-i:[A-Z])y"),
        (r"[[:alnum:]]{4}\z", r"[A-Za-z0-9]{4}\Z"),
        (r"[a[b]", r"[a\[b]"),
    ],
)
def test_go_syntax_is_translated(go: str, python: str) -> None:
    assert gitleaks.translate(go) == python
    re.compile(python)


def test_a_flag_in_the_middle_applies_to_the_rest_of_its_group_only() -> None:
    pattern = re.compile(gitleaks.translate("(a(?i)b)c"))
    assert pattern.fullmatch("aBc") and not pattern.fullmatch("aBC") and not pattern.fullmatch("ABc")


def test_rules_find_their_shapes_and_honour_entropy() -> None:
    token = "glpat-" + "Zq4Xw8Rt2Yu6Io0Pa3Sd"
    found = gitleaks.find(f"pushing with {token} now")
    assert [(rule, f"pushing with {token} now"[start:end]) for start, end, rule in found] == [("gitlab-pat", token)]
    assert gitleaks.find("glpat-" + "aaaaaaaaaaaaaaaaaaaa") == []  # too little entropy: a placeholder
    assert gitleaks.shannon("aaaa") == 0 and gitleaks.shannon("abcd") == 2
