"""The CLI's answers on the site, computed on one base by the same functions: the evidence checklist
(`kb board --missing`), regressions (`kb board --regressions`), expectations (`kb expect`) and decisions
(`kb revisit`), each read off the built pages and compared with the command's --json answer."""

from __future__ import annotations

import html
import re
from pathlib import Path

import pytest
from answers_base import HOSTILE, NEURON_BROKEN, WORKLOAD, XLA_FAILED, make_base
from conftest import json_data, run_kb, write_entry

from kb.store.knowledge_base import KnowledgeBase


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
    return fold(html.unescape(re.sub(r"<[^>]+>", " ", main)))


def fold(words: str) -> str:
    """Spaces folded, and none before a comma or stop or inside brackets, where a tag ended or began."""
    return re.sub(r"\( ", "(", re.sub(r" ([,.:;)])", r"\1", " ".join(words.split())))


def test_the_checklist_pages_answer_as_kb_board_missing(built: tuple[KnowledgeBase, Path, dict[str, str]]) -> None:
    base, out, _ = built
    index = text((out / "checklist" / "index.html").read_text())
    workloads = cli(base, "board")["workloads"]
    assert [cell["label"] for workload in workloads for cell in workload["cells"]] == [
        "cuda · compiled", "neuron · compiled", "xla · compiled", "cpu"
    ]  # fmt: skip
    for workload in workloads:  # a page per workload, the index counting what each backend answered
        page = (out / "checklist" / f"{workload['workload']}.html").read_text()
        said = text(page)
        summary = []
        for cell in workload["cells"]:
            answered = sum(1 for check in cell["checklist"] if check["ok"] is True)
            asked = sum(1 for check in cell["checklist"] if check["ok"] is not None)
            summary.append(f"{cell['label']} {answered}/{asked}")
            heading = f"{cell['workload']} on {cell['label']}: {answered} of {asked} answered"
            assert heading in said, heading
            shown = said.split(heading, 1)[1]
            for check in cell["checklist"]:  # in the command's order, each with its mark and what to do
                mark = {True: "yes", False: "no", None: "n/a"}[check["ok"]]
                expected = fold(f"{mark} {check['question']} {check['detail']}")
                assert expected in shown, expected
                shown = shown.split(expected, 1)[1]
                if check["evidence"]:
                    assert f'<a href="../entries/{check["evidence"]}.html">' in page
        assert f"{workload['workload']}: {' · '.join(summary)}" in index


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
    assert slow["series"].startswith("cuda · compiled")
    assert f"{WORKLOAD} tokens_per_s on {slow['series']}: torch 2.9.0 → 2.10.0 {slow['change']:+.1%}" in said
    assert f"slower ×0.75 (n={slow['comparison']['n']} vs" in said
    for entry_id in slow["before"] + slow["after"]:
        assert f'<a href="entries/{entry_id}.html">{entry_id}</a>' in page


def test_the_expectations_page_answers_as_kb_expect(built: tuple[KnowledgeBase, Path, dict[str, str]]) -> None:
    base, out, _ = built
    page = (out / "expectations.html").read_text()
    said = text(page)
    outcomes = cli(base, "expect")
    assert [o["verdict"] for o in outcomes] == ["pass", "fail"]
    assert "PASS lm on cuda · compiled: numerics must pass" in said
    assert "FAIL lm on neuron · compiled: compile_s <= 600 s, the newest run failed: compile_error" in said
    for outcome in outcomes:
        assert f'<a href="entries/{outcome["entry"]}.html">' in page


def test_a_broken_expectations_file_is_named_on_the_page(kb: KnowledgeBase) -> None:
    (kb.root / "expectations.toml").write_text('[[expect]]\nworkload = "lm"\nbackend = "cuda"\nfigure = 3\n')
    assert run_kb("site", "build").returncode == 0
    said = text((kb.root / "site" / "expectations.html").read_text())
    named = 'expectations.toml cannot be read: expectations.toml:1: figure: expected a name, e.g. figure = "tiny-lm"'
    assert named in said
    assert str(kb.root) not in said


def test_the_decisions_page_answers_as_kb_revisit(built: tuple[KnowledgeBase, Path, dict[str, str]]) -> None:
    base, out, ids = built
    page = (out / "decisions.html").read_text()
    said = text(page)
    due = {item["id"]: item for item in cli(base, "revisit")}
    assert sorted(due) == sorted([ids["released"], ids["newer"]])
    groups = re.findall(r'<details class="answer-group decisions-(\w+)" id="\w+"( open)?>', page)
    assert groups == [("due", " open"), ("quiet", " open")]  # three decisions: none folded
    for item in due.values():
        (reason,) = item["reasons"]
        assert f"{reason}. Made due by" in said, reason
        for entry_id in item["entries"]:  # each run or release behind the reason, linked
            assert re.search(rf'<a href="entries/{entry_id}\.html">[^<]+</a>', page), entry_id
    newer = said.split("2 newer runs of the same workload and backend. Made due by ", 1)[1]
    assert newer.startswith(f"{ids['newer25']}, {ids['newer26']}.")
    assert "Made due by torch-neuronx 2.27.1." in said
    # After a review the decision is not due, and the page says when, by whom and why it was kept.
    reviewed = said.split("lm neuron waits, reviewed", 1)[1]
    assert reviewed.startswith(" Where? Choice: CUDA. Status: accepted · 2026-11-20 Not due: no trigger has fired "
                               "since the last review. Last reviewed ")  # fmt: skip
    assert "by Ana: re-checked <2.27.1>: still failing" in reviewed
    assert "re-checked &lt;2.27.1&gt;" in page and "lm stays on CUDA &lt;until&gt; neuron compiles" in page
    # Evidence whose numerics failed is marked, never a plain figure.
    assert "2026-11-12-lm-xla-000012: numerics failed, 3,170 tok/s" in said
    assert '<span class="marked-failed">numerics failed, 3,170 tok/s</span>' in page


def test_a_due_decisions_entry_page_links_what_made_it_due(built: tuple[KnowledgeBase, Path, dict[str, str]]) -> None:
    _, out, ids = built
    page = (out / "entries" / f"{ids['newer']}.html").read_text()
    assert "2 newer runs of the same workload and backend" in text(page)
    for run in (ids["newer25"], ids["newer26"]):
        assert f'<a href="../entries/{run}.html">{run}</a>' in page


def test_a_reviewed_decisions_entry_page_shows_its_reviews(built: tuple[KnowledgeBase, Path, dict[str, str]]) -> None:
    _, out, ids = built
    said = text((out / "entries" / f"{ids['reviewed']}.html").read_text())
    assert "Reviews Reviewed 20" in said and "by Ana: re-checked <2.27.1>: still failing" in said
    assert "reviews[0]" not in said


CONFLICT = "<<<<<<< HEAD\n{ours}\n=======\n{theirs}\n>>>>>>> origin/main\n"


def test_files_with_git_conflict_markers_are_named_unreadable(kb: KnowledgeBase) -> None:
    """A review, a decision and a release file left conflicted by a pull: each named on the pages, none dropped."""
    decided = run_kb("decide", "--title", "Kept", "--question", "Q?", "--choice", "A", "--trigger", "after: 2099-01-01")
    assert decided.returncode == 0, decided.stderr
    assert run_kb("release", "torch", "2.11.0").returncode == 0
    (decision,) = kb.entries_path.glob("*kept*.md")
    (release,) = kb.entries_path.glob("*torch-2-11-0*.md")
    reviews = decision.with_suffix("") / "reviews"
    reviews.mkdir(parents=True)
    (reviews / "2026-12-01T000000Z-ana.json").write_text(CONFLICT.format(ours='{"note": "a"}', theirs='{"note": "b"}'))
    release.write_text(CONFLICT.format(ours=release.read_text(), theirs="kind: release"))
    other = kb.entries_path / "2026-12-02-other-decision-000001.md"
    other.write_text(CONFLICT.format(ours="---\nkind: decision\n---", theirs="---\nkind: decision\n---"))
    built = run_kb("site", "build")
    assert built.returncode == 0, built.stderr
    page = (kb.root / "site" / "decisions.html").read_text()
    said = text(page)
    assert f"{release.name}:1: git conflict markers" in said and f"{other.name}:1: git conflict markers" in said
    card = said.split("Unreadable (1)", 1)[1]
    review = f"entries/{decision.stem}/reviews/2026-12-01T000000Z-ana.json: an unreadable review (git conflict markers)"
    assert card.startswith(" Kept ") and f"Cannot tell whether it is due: {review}" in card
    assert str(kb.root) not in page
    entry = text((kb.root / "site" / "entries" / f"{decision.stem}.html").read_text())
    assert f"A review kb cannot read: {review}" in entry


def test_runs_that_failed_or_failed_numerics_are_marked_in_every_list(
    built: tuple[KnowledgeBase, Path, dict[str, str]],
) -> None:
    _, out, _ = built
    for listing in ("list/index.html", "list/backend/xla.html", "list/workload/lm.html", "list/status/completed.html"):
        page = (out / listing).read_text()
        row = re.search(rf"<tr>(?:(?!</tr>).)*entries/{XLA_FAILED}\.html.*?</tr>", page, re.S)
        assert row and '<span class="why">numerics failed</span>' in row[0], listing
    compared = (out / "compare" / f"{WORKLOAD}.html").read_text()
    column = compared.split(f'<span class="id">{XLA_FAILED}</span>', 1)[1].split("</th>", 1)[0]
    assert '<span class="badge marked-failed">numerics failed</span>' in column
    page = (out / "list" / "backend" / "neuron.html").read_text()
    row = re.search(rf"<tr>(?:(?!</tr>).)*entries/{NEURON_BROKEN}\.html.*?</tr>", page, re.S)
    assert row and "failed" in row[0] and f'<span class="why">{html.escape(HOSTILE)}</span>' in row[0]


def trend_table(out: Path, package: str, found: dict) -> tuple[str, list[str], list[str]]:
    """The site's tokens_per_s table of WORKLOAD across `package` (its chart's HTML and its rows as text) and the rows
    that `kb trend --json` (`found`) gives for it."""
    page = (out / "trends" / f"{WORKLOAD}.html").read_text()
    section = page.split(f'<section class="trend-package" id="{package}">', 1)[1].split("</section>", 1)[0]
    caption = f"tokens_per_s of {WORKLOAD} across {package} versions, by backend and mode (higher is better)"
    chart = section.split(f"<figcaption>{caption}</figcaption>", 1)[1].split("</figure>", 1)[0]
    rows = [fold(html.unescape(re.sub(r"<[^>]+>", " ", row))) for row in re.findall(r"<tr>.*?</tr>", chart, re.S)]
    expected = [
        fold(f"{series['group']} {point['version']} {point['value']:.4g} {point['count']} {point['flag']}")
        for series in found["series"]
        for point in series["points"]
    ]
    return chart, rows, expected


@pytest.mark.parametrize("package", ["torch", "torch-neuronx", "torch-xla"])
def test_trends_follow_every_backend_package_as_kb_trend(
    built: tuple[KnowledgeBase, Path, dict[str, str]], package: str
) -> None:
    base, out, _ = built
    found = cli(base, "trend", "tokens_per_s", "--workload", WORKLOAD, "--package", package)
    _, rows, expected = trend_table(out, package, found)
    assert rows[1:] == expected and expected  # after the header row, every point of every series, in order


def test_sixty_decisions_none_due_are_folded_in_their_groups(kb: KnowledgeBase) -> None:
    for n in range(60):  # as a generated base holds them: half accepted without a trigger, half without a status
        section = {"status": "accepted", "question": "Q?", "choice": "A"} if n % 2 else None
        write_entry(kb, f"2026-10-{n % 28 + 1:02d}-decision-{n:06d}", kind="decision", recorded="2026-10-01T00:00:00Z",
                    decision=section)  # fmt: skip
    assert run_kb("site", "build").returncode == 0
    page = (kb.root / "site" / "decisions.html").read_text()
    groups = re.findall(r'<details class="answer-group decisions-(\w+)" id="\w+"( open)?>', page)
    assert groups == [("quiet", ""), ("closed", "")]  # folded: the first screen says only that none is due
    said = text(page)
    groups_said = "Not due (30) Not checked (rejected, superseded or without a status) (30)"
    assert f"60 decisions. {groups_said} No decision is due." in said
    assert said.count("No revisit trigger set.") == 30 and said.count("Not checked: no status.") == 30


def test_every_page_path_docs_site_md_names_is_built(built: tuple[KnowledgeBase, Path, dict[str, str]]) -> None:
    _, out, _ = built
    table = (Path(__file__).parents[1] / "docs" / "site.md").read_text().split("| page | path |", 1)[1]
    rows = table.split("\n\n", 1)[0].splitlines()[2:]
    paths = [path for row in rows for path in re.findall(r"`([^`]+\.html)`", row.split("|")[2])]
    assert "trends/<workload>.html" in paths
    for path in paths:  # each <placeholder> stands for any name
        assert list(out.glob(re.sub(r"<[^>]+>", "*", path))), path
