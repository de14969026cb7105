"""The CLI's answers on the site, computed on one base by the same functions: the evidence checklist
(`kb board --missing`), regressions (`kb board --regressions`), expectations (`kb expect`) and decisions
(`kb revisit`), each read off the built pages and compared with the command's --json answer."""

from __future__ import annotations

import html
import re
from pathlib import Path

import pytest
from answers_base import WORKLOAD, make_base
from conftest import json_data, run_kb

from kb.store import KnowledgeBase


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[KnowledgeBase, Path, dict[str, str]]:
    root = tmp_path_factory.mktemp("site-answers")
    base, ids = make_base(root)
    out = base.root / "site"
    result = run_kb("--kb", str(base.root), "site", "build", "--out", str(out))
    assert result.returncode == 0, result.stderr
    return base, out, ids


def cli(base: KnowledgeBase, *args: str) -> object:
    return json_data(run_kb("--kb", str(base.root), *args, "--json").stdout)


def text(page: str) -> str:
    """A page's main text as a person reads it: tags dropped, entities read, spaces folded."""
    main = page[page.index("<main") : page.index("</main>")]
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", main)).split())


def test_the_checklist_page_answers_as_kb_board_missing(built: tuple[KnowledgeBase, Path, dict[str, str]]) -> None:
    base, out, _ = built
    page = (out / "checklist.html").read_text()
    said = text(page)
    cells = [cell for workload in cli(base, "board")["workloads"] for cell in workload["cells"]]
    assert len(cells) == 4  # cuda, neuron and xla of lm; cpu of the recorded workload
    for cell in cells:
        answered = sum(1 for check in cell["checklist"] if check["ok"] is True)
        asked = sum(1 for check in cell["checklist"] if check["ok"] is not None)
        heading = f"{cell['workload']} on {cell['label']}: {answered} of {asked} answered"
        assert heading in said, heading
        shown = said.split(heading, 1)[1]
        for check in cell["checklist"]:  # in the command's order, each with its mark and what to do
            mark = {True: "yes", False: "no", None: "n/a"}[check["ok"]]
            expected = " ".join(f"{mark} {check['question']} {check['detail']}".split())
            assert expected in shown, expected
            shown = shown.split(expected, 1)[1]
            if check["evidence"]:
                assert f'<a href="entries/{check["evidence"]}.html">' in page


def test_the_regressions_page_answers_as_kb_board_regressions(
    built: tuple[KnowledgeBase, Path, dict[str, str]],
) -> None:
    base, out, _ = built
    page = (out / "regressions.html").read_text()
    said = text(page)
    found = cli(base, "board", "--regressions")
    (broken,) = found["breakages"]
    assert (broken["package"], broken["before"], broken["after"]) == ("torch-neuronx", "2.26.0", "2.27.1")
    assert f"{WORKLOAD} on neuron · compiled: torch-neuronx 2.26.0 → 2.27.1: compile_error" in said
    assert f"last good: 2.26.0, {broken['passed_entry']} · first bad: 2.27.1, {broken['failed_entry']}" in said
    for entry_id in (broken["passed_entry"], broken["failed_entry"]):
        assert f'<a href="entries/{entry_id}.html">{entry_id}</a>' in page
    (slow,) = found["slowdowns"]
    assert f"{WORKLOAD} tokens_per_s on cuda · compiled: torch 2.9.0 → 2.10.0 {slow['change']:+.1%}" in said
    assert f"slower ×0.75 (n={slow['comparison']['n']} vs" in said
    for entry_id in slow["entries"]:
        assert f'<a href="entries/{entry_id}.html">{entry_id}</a>' in page


def test_the_expectations_page_answers_as_kb_expect(built: tuple[KnowledgeBase, Path, dict[str, str]]) -> None:
    base, out, _ = built
    page = (out / "expectations.html").read_text()
    said = text(page)
    outcomes = cli(base, "expect")
    assert [o["verdict"] for o in outcomes] == ["pass", "fail"]
    assert "PASS lm on cuda · compiled: numerics must pass" in said
    assert "FAIL lm on neuron · compiled: compile_s <= 600, the newest run failed: compile_error" in said
    for outcome in outcomes:
        assert f'<a href="entries/{outcome["entry"]}.html">' in page


def test_a_broken_expectations_file_is_named_on_the_page(kb: KnowledgeBase) -> None:
    (kb.root / "expectations.toml").write_text('[[expect]]\nworkload = "lm"\nbackend = "cuda"\nfigure = 3\n')
    assert run_kb("site", "build").returncode == 0
    said = text((kb.root / "site" / "expectations.html").read_text())
    named = 'expectations.toml cannot be read: expectations.toml:1: figure: expected a name, e.g. figure = "tiny-lm"'
    assert named in said
    assert str(kb.root) not in said
