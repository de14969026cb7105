"""The vendored rule sets, gitleaks' and Nosey Parker's: every rule compiles in Python's `re` as Go and Rust read it,
and finds its own shape; a rule without keywords gets them from its regex."""

from __future__ import annotations

import json
import re
import warnings

import pytest

from kb.secrets import gitleaks, literals, noseyparker, rules


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
    assert rules.translate(go) == python
    re.compile(python)


def test_a_flag_in_the_middle_applies_to_the_rest_of_its_group_only() -> None:
    pattern = re.compile(rules.translate("(a(?i)b)c"))
    assert pattern.fullmatch("aBc") and not pattern.fullmatch("aBC") and not pattern.fullmatch("ABc")


def test_rules_find_their_shapes_and_honour_entropy() -> None:
    token = "glpat-" + "Zq4Xw8Rt2Yu6Io0Pa3Sd"
    found = gitleaks.find(f"pushing with {token} now")
    assert [(rule, f"pushing with {token} now"[start:end]) for start, end, rule in found] == [("gitlab-pat", token)]
    assert gitleaks.find("glpat-" + "aaaaaaaaaaaaaaaaaaaa") == []  # too little entropy: a placeholder
    assert rules.shannon("aaaa") == 0 and rules.shannon("abcd") == 2


def test_every_secret_rule_of_the_vendored_noseyparker_file_compiles_without_warnings() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        noseyparker.rules.cache_clear()
        compiled = noseyparker.rules()
        assert all(rule.regex.pattern for rule in compiled)
    vendored = json.loads(noseyparker.RULES_FILE.read_text())
    assert vendored["vendored"]["version"].startswith("v0.") and "Apache-2.0" in vendored["vendored"]["license"]
    assert len(compiled) == sum("secret" in rule.get("categories", ()) for rule in vendored["rules"]) > 150
    assert all(rule.keywords for rule in compiled)  # none is tried on every line: a long line costs each a search


def test_the_stored_noseyparker_keywords_are_the_texts_each_regex_needs() -> None:
    """Read when the file is refreshed: a change to kb.secrets.literals shows here until the file is refreshed."""
    from kb.secrets import refresh

    vendored = json.loads(noseyparker.RULES_FILE.read_text())
    stale = [rule["id"] for rule in vendored["rules"] if rule["keywords"] != refresh.keywords(rule["pattern"])]
    assert not stale, f"run: python -m kb.secrets.refresh noseyparker {vendored['vendored']['commit']}"


@pytest.mark.parametrize(
    ("pattern", "needed"),
    [
        (r"\b(ghp_[a-zA-Z0-9]{36})\b", {"ghp_"}),
        (r"\b((?:ghu|ghs)_[a-zA-Z0-9]{36})\b", {"ghu_", "ghs_"}),  # Python's parser makes it `gh[us]_`
        (r"[Cc]odeclimate_[a-z]{8}", {"codeclimate_"}),
        (r"(?i)aws_?(?:secret)?_?key\s*=", {"aws"}),  # what every match holds, the shortest kept
        (r"(?:password|pwd)\s*=", {"password", "pwd"}),
        (r"\$2[abxy]\$[0-9]{2}\$", {"$2a$", "$2b$", "$2x$", "$2y$"}),
        (r"\b(00[a-zA-Z0-9]{13}![a-zA-Z0-9._]{96})", {"!"}),  # one character, but one logs seldom hold
        (r"\$5(?:\$rounds=\d+)?\$[./A-Za-z0-9]{8,16}", {"$5"}),
        (r"[a-z0-9]{40}", None),  # no text: tried on every line that can hold a token
        (r"(?:ab|[a-z]{5})cd", None),  # an alternative with no text of three characters
    ],
)
def test_a_rule_without_keywords_gets_the_texts_its_regex_needs(pattern: str, needed: set[str] | None) -> None:
    assert literals.required(pattern) == (frozenset(needed) if needed else None)


def test_a_noseyparker_rule_masks_its_password_and_keeps_the_user_name_and_host() -> None:
    text = "uri = postgres://bench_reader:Zq4Xw8Rt2Yu6@db.internal:5432/results"
    found = [text[start:end] for start, end, _ in noseyparker.find(text)]
    assert found == ["Zq4Xw8Rt2Yu6"]


def test_a_noseyparker_rule_reaches_the_lines_after_its_keyword() -> None:
    token = "004EACcEIC_KNpR_oW-mcclydoGOldRsF39tFfMcPj"
    text = f'variable "corp_okta_api_token" {{\n  default = "{token}"\n}}\n'
    assert [text[start:end] for start, end, _ in noseyparker.find(text)] == [token]


def test_a_commit_on_the_line_after_an_aws_key_id_is_kept_and_a_secret_key_beside_it_is_not() -> None:
    key_id, digest = "AKIA" + "ZQ4R7T2XWV5NB3MK", "3f2a9c4d5e6f708192a3b4c5d6e7f80912345678"
    text = f"credentials from the environment: {key_id}\ncommit {digest} (HEAD -> main)"
    assert digest not in [text[start:end] for start, end, _ in noseyparker.find(text)]
    text = f"{key_id} {digest}"
    assert digest in [text[start:end] for start, end, _ in noseyparker.find(text)]


def test_a_refreshed_noseyparker_file_keeps_each_rule_as_written_without_its_examples() -> None:
    import yaml

    from kb.secrets import refresh

    pattern = "(?x)\n\\b\n(ab_[a-z0-9]{20})  (?# token )\n\\b\n"
    source = yaml.safe_dump(
        {"rules": [{"name": "A", "id": "np.a.1", "pattern": pattern, "categories": ["secret"], "examples": ["x"]}]}
    )
    vendored = json.loads(refresh.noseyparker_rules({"rules/a.yml": source}, "v0.1.0", "f" * 40, "2026-01-01"))
    assert vendored["rules"] == [
        {"name": "A", "id": "np.a.1", "pattern": pattern, "categories": ["secret"], "keywords": ["ab_"]}
    ]
    assert vendored["vendored"] == {
        "from": f"https://github.com/{refresh.NOSEYPARKER} {refresh.NOSEYPARKER_RULES}*.yml: each rule's name, id, "
        "pattern, categories, and the keywords its pattern needs",
        "version": "v0.1.0",
        "commit": "f" * 40,
        "date": "2026-01-01",
        "license": "Apache-2.0, see LICENSE-noseyparker",
        "refresh": "python -m kb.secrets.refresh noseyparker [REF]",
    }
