"""Decisions that can be closed and followed: a release makes one due, a re-affirmed or reviewed decision is
not due again for the same release, `kb show` says why and where each trigger stands, bad reviews write nothing."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from conftest import Clock, json_data, run_kb, write_entry

from kb.answers.decisions import reviews_of
from kb.model.entry import Entry
from kb.store.knowledge_base import KnowledgeBase

REPORT = "2026-10-01-neuron-report-000001"


@pytest.fixture
def evidence(kb: KnowledgeBase) -> KnowledgeBase:
    # Reported evidence names no version: the trap that kept a re-affirmed decision due forever.
    write_entry(kb, REPORT, kind="report", recorded="2026-10-01T00:00:00Z", backend="neuron",
                workload={"name": "gpt-oss"}, provenance={"source": "reported", "publisher": "Vendor"},
                metrics={"tokens_per_s": {"value": 900.0, "unit": "tokens/s"}})  # fmt: skip
    write_entry(kb, "2026-10-02-gpt-oss-neuron-000002", recorded="2026-10-02T00:00:00Z", status="completed",
                backend="neuron", workload={"name": "gpt-oss"}, timings={"compile_s": 1637.0})  # fmt: skip
    return kb


def decide(clock: Clock, *extra: str) -> str:
    result = run_kb("decide", "--title", "gpt-oss stays on CUDA", "--question", "Where?", "--choice", "CUDA",
                    "--evidence", REPORT, "--trigger", "release: torch-neuronx",
                    "--trigger", "when: compile_s < 600 for workload=gpt-oss backend=neuron", *extra)  # fmt: skip
    assert result.returncode == 0, result.stderr
    clock.tick()  # entries are timed to the second: what follows is recorded after it
    return result.stderr.split("decision ")[1].split()[0]


def due() -> list[str]:
    return [item["id"] for item in json_data(run_kb("revisit", "--json").stdout)]


def test_a_release_fires_once_and_a_reaffirmed_decision_is_closed(evidence: KnowledgeBase, clock: Clock) -> None:
    first = decide(clock)
    released = run_kb("release", "torch-neuronx", "2.27.1")
    assert released.returncode == 0, released.stderr
    # kb release says which decisions it made due, and why.
    assert f"{first}  gpt-oss stays on CUDA" in released.stderr
    assert "evidence names no torch-neuronx version; 2.27.1 released on" in released.stderr
    assert "1 decision due for review after this release" in released.stderr
    assert due() == [first]
    clock.tick()
    # Re-checked and kept, with the same evidence: the new decision is not due for the release it has seen.
    again = decide(clock, "--supersedes", first)
    assert due() == []
    assert run_kb("revisit", "--check").returncode == 0
    # A later release makes it due again.
    assert run_kb("release", "torch-neuronx", "2.28.0").returncode == 0
    assert due() == [again]


def test_a_review_closes_a_due_decision_until_something_newer(evidence: KnowledgeBase, clock: Clock) -> None:
    decision = decide(clock)
    run_kb("release", "torch-neuronx", "2.27.1")
    assert run_kb("revisit", "--check").returncode == 1
    clock.tick()
    acked = run_kb("revisit", "--ack", decision, "--note", "re-checked on 2.27.1, still CUDA", "--by", "ana")
    assert acked.returncode == 0, acked.stderr
    (review,) = reviews_of(Entry.read(evidence.entries_path / f"{decision}.md"))
    assert review["by"] == "ana" and review["note"] == "re-checked on 2.27.1, still CUDA" and review["date"]
    assert due() == [] and run_kb("revisit", "--check").returncode == 0
    clock.tick()
    # New evidence meeting a `when:` condition after the review fires it again.
    for n, seconds in ((3, 540.0), (4, 545.0), (5, 535.0)):
        write_entry(evidence, f"2099-01-01-gpt-oss-neuron-{n:06d}", recorded=f"2099-01-01T00:00:0{n}Z",
                    status="completed", backend="neuron", workload={"name": "gpt-oss"},
                    timings={"compile_s": seconds})  # fmt: skip
    assert due() == [decision]
    shown = run_kb("show", decision)
    assert shown.returncode == 0, shown.stderr
    words = " ".join(shown.stdout.split())  # long reasons are wrapped to the terminal's width
    for text in ("Revisit: DUE", "fired when: compile_s < 600 for workload=gpt-oss backend=neuron",
                 "new evidence meets compile_s < 600: compile_s = 9 min, the median of 3 runs since, 95% interval",
                 "quiet release: torch-neuronx",
                 "last reviewed", "by ana: re-checked on 2.27.1, still CUDA"):  # fmt: skip
        assert text in words, text


def test_show_gives_the_current_value_behind_a_quiet_trigger_and_marks_untriggered(
    evidence: KnowledgeBase, clock: Clock
) -> None:
    decision = decide(clock)
    shown = " ".join(run_kb("show", decision).stdout.split())
    assert "Revisit: not due" in shown
    assert "compile_s = 27 min 17 s in 2026-10-02-gpt-oss-neuron-000002" in shown
    bare = run_kb("decide", "--title", "no triggers", "--question", "q", "--choice", "c")
    bare_id = bare.stderr.split("decision ")[1].split()[0]
    assert "Revisit: no trigger; it never comes due by itself" in run_kb("show", bare_id).stdout


def test_a_bad_review_is_one_error_and_writes_nothing(evidence: KnowledgeBase, clock: Clock) -> None:
    decision = decide(clock)
    before = {path: path.read_bytes() for path in evidence.entries_path.rglob("*.md")}
    unknown = run_kb("revisit", "--ack", "2031-01-01-none-000000", "--note", "x")
    assert unknown.returncode == 1 and unknown.stderr.startswith("kb: error: no entry '2031-01-01-none-000000'")
    assert len(unknown.stderr.splitlines()) == 1
    other = run_kb("revisit", "--ack", REPORT, "--note", "x")
    assert other.returncode == 1
    assert other.stderr == f"kb: error: {REPORT} is a report entry, not a decision; only decisions are reviewed\n"
    no_note = run_kb("revisit", "--ack", decision)
    assert no_note.returncode == 1 and "--ack needs --note" in no_note.stderr
    assert {path: path.read_bytes() for path in evidence.entries_path.rglob("*.md")} == before


def test_a_trigger_that_could_never_fire_is_refused_with_the_nearest_names(evidence: KnowledgeBase) -> None:
    before = sorted(evidence.entries_path.iterdir())
    base = ("decide", "--title", "t", "--question", "q", "--choice", "c", "--trigger")
    cases = {
        "when: compile_sec < 600 for workload=gpt-oss backend=neuron": "no figure 'compile_sec'",
        "when: compile_s < 600 for workload=gpt-os backend=neuron": "no workload 'gpt-os'",
        "when: compile_s < 600 for workload=gpt-oss backend=neuronn": "no backend 'neuronn'",
        "release: torch-neuronxx": "no package 'torch-neuronxx'",
    }
    for trigger, said in cases.items():
        refused = run_kb(*base, trigger)
        assert refused.returncode == 1 and said in refused.stderr and "did you mean" in refused.stderr, refused.stderr
    assert "did you mean compile_s" in run_kb(*base, "when: compile_sec < 600").stderr
    assert sorted(evidence.entries_path.iterdir()) == before


def test_a_release_in_the_same_second_as_the_decision_comes_after_it(evidence: KnowledgeBase) -> None:
    second = "2026-11-05T10:00:00Z"
    decision = "2026-11-05-decision-000003"
    write_entry(evidence, decision, kind="decision", recorded=second, links={"evidence": [REPORT]},
                decision={"question": "q", "choice": "CUDA", "status": "accepted", "date": "2026-11-05",
                          "time": "2026-11-05T10:00:00.100000Z", "triggers": ["release: torch-neuronx"]})  # fmt: skip
    write_entry(evidence, "2026-11-05-release-000004", kind="release", recorded=second,
                release={"package": "torch-neuronx", "version": "2.27.0", "date": "2026-11-05",
                         "time": "2026-11-05T10:00:00.900000Z"})  # fmt: skip
    assert due() == [decision]  # recorded in the same second, but after it
    write_entry(evidence, "2026-11-05-release-000005", kind="release", recorded=second,
                release={"package": "torch-neuronx", "version": "2.27.1", "date": "2026-11-05",
                         "time": "2026-11-05T10:00:00.050000Z"})  # fmt: skip
    (item,) = json_data(run_kb("revisit", "--json").stdout)
    assert item["entries"] == ["2026-11-05-release-000004"]  # 2.27.1 came out before the decision, in its second


def test_an_unreadable_decision_stops_the_check_by_name(evidence: KnowledgeBase, clock: Clock) -> None:
    decision = decide(clock)
    path = evidence.entries_path / f"{decision}.md"
    text = path.read_text()
    path.write_text(text.replace("choice: CUDA\n", "<<<<<<< HEAD\nchoice: CUDA\n=======\nchoice: Neuron\n>>>>>>> b\n"))
    checked = run_kb("revisit", "--check")
    assert checked.returncode == 2, checked.stdout + checked.stderr
    assert f"kb: error: {path}" in checked.stderr and "git conflict markers" in checked.stderr


def test_two_reviews_of_one_decision_merge_in_git(evidence: KnowledgeBase, tmp_path: Path, clock: Clock) -> None:
    decision = decide(clock)
    git = ("git", "-c", "user.name=t", "-c", "user.email=t@example.com")
    subprocess.run([*git, "init", "-q", "-b", "main", str(evidence.root)], check=True)
    subprocess.run([*git, "-C", str(evidence.root), "add", "-A"], check=True)
    subprocess.run([*git, "-C", str(evidence.root), "commit", "-qm", "base"], check=True)
    other = tmp_path / "other"
    subprocess.run([*git, "clone", "-q", str(evidence.root), str(other)], check=True)
    for root, who in ((evidence.root, "ana"), (other, "bo")):
        acked = run_kb("--kb", str(root), "revisit", "--ack", decision, "--note", f"kept by {who}", "--by", who)
        assert acked.returncode == 0, acked.stderr
        subprocess.run([*git, "-C", str(root), "add", "-A"], check=True)
        subprocess.run([*git, "-C", str(root), "commit", "-qm", f"review by {who}"], check=True)
    subprocess.run([*git, "-C", str(evidence.root), "pull", "-q", "--no-rebase", "--no-edit", str(other), "main"],
                   check=True)  # fmt: skip
    reviews = reviews_of(Entry.read(evidence.entries_path / f"{decision}.md"))
    assert sorted(r["by"] for r in reviews) == ["ana", "bo"]


def test_in_process_commands_read_the_tests_clock(evidence: KnowledgeBase, clock: Clock) -> None:
    clock.tick(86_400 * 400)  # a year and more ahead: no real clock says so
    decision = Entry.read(evidence.entries_path / f"{decide(clock)}.md")
    assert decision.recorded[:10] == f"{clock.now:%Y-%m-%d}" and decision.id.startswith(f"{clock.now:%Y-%m-%d}")
