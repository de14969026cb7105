"""docs/reliability.md states the secrets figures the tests and benchmarks find now, and how to reproduce them:
no figure of an older kb, and no git revision to run a benchmark against."""

from __future__ import annotations

import re
from pathlib import Path

from data import secrets_corpus_fresh
from data.secrets_corpus_independent import LOOK_ALIKES, SECRETS
from test_secrets_held_out import FRESH_LEAKS, TUNING_LEAKS

DOC = Path(__file__).parents[1] / "docs" / "reliability.md"


def secrets_section() -> str:
    text = DOC.read_text()
    return text[text.index("## Secrets never reach the knowledge base") : text.index("## The site runs nothing")]


def test_the_secrets_figures_are_the_ones_the_tests_find() -> None:
    said = " ".join(secrets_section().split())
    fresh = len(secrets_corpus_fresh.SECRETS)
    assert f"**{fresh} credentials**" in said and f"| kb | {len(FRESH_LEAKS)} | {len(TUNING_LEAKS)} / 0 |" in said
    assert f"**{len(SECRETS)} credentials, {len(LOOK_ALIKES)} look-alikes**" in said
    assert "`python -m bench.secrets_detectors`" in said


def test_the_secrets_section_names_no_older_kb() -> None:
    section = secrets_section()
    assert "--before" not in section
    assert not re.search(r"\b(?=[0-9a-f]*[a-f])(?=[0-9a-f]*[0-9])[0-9a-f]{7,40}\b", section)  # a git revision
    assert not re.search(r"\b(before the fixes|first split|at one time|used to)\b", section)
