"""Masking searches only where a credential can be, and finds exactly what a search everywhere finds.

The shapes cost 1 to 10 microseconds a character: `kb record` of a program printing 10 MB a second slowed it
25 times. So only lines holding a hint or a run of 16 token characters are searched for shapes, and assignments
only where a stem is. These
tests hold the hints to the patterns: every shape's samples hold one, and on mixed texts the answer is the same.
"""

from __future__ import annotations

import itertools
import random
import re
import string
from collections.abc import Iterator

import pytest
from data.secrets_corpus import LOOK_ALIKES, SECRETS
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kb.secrets import redact

_LOOKAROUND = re.compile(r"\(\?<?[=!]")


def _alternatives(pattern: str) -> list[str]:
    """The top-level alternatives of a pattern, and those of a group that makes up a whole alternative."""
    found = []
    for alternative in _split(pattern):
        alternative = _without_lookarounds(alternative)
        whole_group = alternative.startswith("(?:") and _group_end(alternative, 0) == len(alternative)
        inner = alternative[3:-1] if whole_group else ""
        found += _alternatives(inner) if len(_split(inner)) > 1 else [alternative]
    return found


def _marks(pattern: str) -> Iterator[tuple[int, str, int]]:
    """(index, character, depth after it) of each `(`, `)` and `|` outside classes and escapes."""
    depth, at = 0, 0
    while at < len(pattern):
        char = pattern[at]
        if char == "\\":
            at += 2
            continue
        if char == "[":
            at += 1
            at += pattern[at] == "^"
            at += pattern[at] == "]"  # a ] first is a member
            while pattern[at] != "]":
                at += 2 if pattern[at] == "\\" else 1
        elif char in "()|":
            depth += {"(": 1, ")": -1, "|": 0}[char]
            yield at, char, depth
        at += 1


def _split(pattern: str) -> list[str]:
    cuts = [at for at, char, depth in _marks(pattern) if char == "|" and depth == 0]
    return [pattern[start + 1 : end] for start, end in zip([-1, *cuts], [*cuts, len(pattern)], strict=True)]


def _group_end(pattern: str, start: int) -> int:
    """The index after the `)` that closes the group opening at `start`."""
    depth = next(depth for at, _, depth in _marks(pattern) if at == start)
    return next(at + 1 for at, char, after in _marks(pattern) if at > start and char == ")" and after == depth - 1)


def _without_lookarounds(pattern: str) -> str:
    """Lookarounds dropped: the pattern then matches more, so a hint every match of it holds is in every match of
    the pattern as it is. Groups left empty are dropped too."""
    while found := _LOOKAROUND.search(pattern):
        pattern = pattern[: found.start()] + pattern[_group_end(pattern, found.start()) :]
    while (emptied := re.sub(r"\(\?:\|*\)", "", pattern)) != pattern:  # `(?:)`, `(?:|)`, `(?:||)`: only lookarounds
        pattern = emptied
    return pattern


_SMALL_CLASS = re.compile(r"(?<!\\)\[([A-Za-z0-9]{2,8})\]")  # `[pousr]` in `gh[pousr]_`


def _expansions(pattern: str) -> list[str]:
    """The pattern once for each choice in its groups of alternatives and its small classes of letters: a hint
    missing from one choice (`glagent-` of `gl(?:pat|...|agent)-`) is then in samples every time."""
    for at, char, _ in _marks(pattern):
        if char == "(":
            end = _group_end(pattern, at)
            inner = re.sub(r"^\?(?:P<\w+>|[imsx]+:|:)", "", pattern[at + 1 : end - 1])
            branches = _split(inner)
            if len(branches) > 1:
                return [e for b in branches for e in _expansions(f"{pattern[:at]}(?:{b}){pattern[end:]}")]
    found = _SMALL_CLASS.search(pattern)
    if found is None:
        return [pattern]
    choices = (pattern[: found.start()] + letter + pattern[found.end() :] for letter in found[1])
    return list(itertools.chain.from_iterable(map(_expansions, choices)))


SHAPES = _alternatives(redact._SHAPES)
CONTEXT = _alternatives(redact._CONTEXT_SHAPES)
CHOICES = sorted({choice for alternative in SHAPES for choice in _expansions(alternative)})
CONTEXT_CHOICES = {choice for alternative in CONTEXT for choice in _expansions(alternative)}
# Each context shape's choices, with the hints a line is searched for that shape by.
OWN_HINTS = sorted(
    (choice, hints)
    for hints, pattern in redact._CONTEXT_ALTERNATIVES
    for alternative in _alternatives(pattern)
    for choice in _expansions(alternative)
)


def _hinted(text: str, runs: bool = True) -> bool:
    """Whether masking searches the text's line: a hint, a Discord-like middle or (for tokens) a long run."""
    lowered = text.translate(redact._FOLDS).lower()
    hinted = any(hint in lowered for hint in redact._HINTS) or redact._SHAPELESS.search(text) is not None
    return hinted or (runs and bool(redact._run_lines(text)))


def test_the_shapes_are_split_into_their_alternatives() -> None:
    assert len(SHAPES) >= 80 and 15 <= len(CONTEXT) < len(SHAPES) / 2
    for alternative in SHAPES:
        re.compile(alternative)  # each is a pattern of its own
    assert any(alternative.startswith("hf_") for alternative in SHAPES)
    assert any("mysql" in alternative for alternative in SHAPES)


@pytest.mark.parametrize("choice", CHOICES)
# What is left to draw holds no fixed text. Samples of {130,} characters are slow to make on a busy machine.
@settings(max_examples=3, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_every_match_of_every_shape_holds_a_hint(choice: str, data: st.DataObject) -> None:
    sample = data.draw(st.from_regex(choice, fullmatch=True))
    runs = choice not in CONTEXT_CHOICES  # a context shape is searched only on a line with a hint
    assert _hinted(sample, runs), f"no hint in {sample!r}, a match of {choice}: add its fixed text to _HINTS"


def test_every_credential_of_the_corpus_is_masked_as_a_search_everywhere_masks_it() -> None:
    for secret in SECRETS:
        assert redact._mask_shapes(secret.text) == redact._mask_everywhere(secret.text), secret.id
        assert secret.probe not in redact.redact_text(secret.text), secret.id


@pytest.mark.parametrize(("choice", "hints"), OWN_HINTS)
@settings(max_examples=3, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_every_match_of_a_context_shape_holds_one_of_its_own_hints(
    choice: str, hints: tuple[str, ...], data: st.DataObject
) -> None:
    sample = data.draw(st.from_regex(choice, fullmatch=True)).translate(redact._FOLDS).lower()
    assert any(hint in sample for hint in hints), f"no hint of {hints} in {sample!r}, a match of {choice}"


def test_the_folds_cover_every_letter_a_case_insensitive_pattern_matches() -> None:
    for code in range(0x80, 0x110000):
        char = chr(code)
        if 0xD800 <= code < 0xE000 or not re.fullmatch("(?i)[a-z]", char):
            continue
        folded = char.translate(redact._FOLDS).lower()
        assert folded in string.ascii_lowercase and re.fullmatch("(?i)" + folded, char), hex(code)


PIECES = [
    *(secret.text for secret in SECRETS),
    *(look_alike.text for look_alike in LOOK_ALIKES),
    *("step 12 loss=0.1", "tokens/s=3", "password", "login u", "https://", "--token", '"key": ', "Bearer "),
    *("\u017fecret=abcdefgh", "to\u212aen: zzzzzzzz", "\u0130", "a" * 70 + "token=abcdefghij", "\\ntoken=xyzxyzxyz"),
    *("x", "\n", " ", "=", ":", "\\n", "AKIA", "[REDACTED]"),
]
GLUE = ["", " ", "\n", "\t", "=", ":", "\\n", ",", '"', "-", "_"]


def test_masking_finds_what_a_search_everywhere_finds() -> None:
    rng = random.Random(17)
    for _ in range(3000):
        text = "".join(rng.choice(PIECES) + rng.choice(GLUE) for _ in range(rng.randint(1, 12)))
        assert redact._mask_shapes(text) == redact._mask_everywhere(text), text


def test_a_log_of_numbers_keeps_its_secrets_masked_among_thousands_of_lines() -> None:
    lines = [f"step {i} loss=0.{i % 997:03d} tokens/s=12345.6 /data/shard-{i % 64}.bin" for i in range(5000)]
    lines[1234] += f" {SECRETS[0].text}"
    lines[4321] = "HF_TOKEN=hf_" + "Ab1" * 12
    text = "\n".join(lines)
    masked = redact.redact_text(text)
    assert masked == redact._mask_everywhere(text)
    assert SECRETS[0].probe not in masked and "Ab1Ab1" not in masked


@pytest.mark.parametrize("before", ["", "x ", "\\n", "\\nx"])
def test_a_secret_word_as_far_into_its_name_as_an_assignment_looks_is_masked(before: str) -> None:
    # _ASSIGNMENT looks for a secret word up to 66 characters into a name (two dashes and 64 characters).
    for dashes, length in itertools.product(("", "-", "--"), range(55, 70)):
        text = f"{before}{dashes}{'a' * length}_key=abcdefgh1234 and {dashes}{'b' * length}-token: zyxwvu9876"
        assert redact._mask_shapes(text) == redact._mask_everywhere(text), text


def test_a_line_of_one_long_run_is_masked_as_a_search_everywhere_masks_it() -> None:
    for text in ("x" * 5000, "ab" * 3000 + " ghp_" + "Aa1" * 13, "/" + "x" * 100 + "=ya29." + "b" * 30):
        assert redact._mask_shapes(text) == redact._mask_everywhere(text)
