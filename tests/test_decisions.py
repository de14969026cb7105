"""Decisions, releases and revisits: every trigger firing and not firing, supersession, --check exit codes."""

from __future__ import annotations

import time

import pytest
from conftest import json_data, run_kb, write_entry

from kb.entry import Entry
from kb.store import KnowledgeBase


@pytest.fixture
def evidence(kb: KnowledgeBase) -> KnowledgeBase:
    write_entry(
        kb,
        "2025-10-23-gpt-oss-neuron-000001",
        recorded="2025-10-23T00:00:00Z",
        status="completed",
        backend="neuron",
        workload={"name": "gpt-oss"},
        versions={"torch-neuronx": "2.26.0"},
        timings={"compile_s": 1637.0},
    )
    return kb


def decide(*triggers: str, extra: tuple[str, ...] = ()) -> str:
    args = [
        "decide",
        "--title",
        "gpt-oss stays on CUDA",
        "--question",
        "Where does gpt-oss training run?",
        "--choice",
        "CUDA",
        "--alternative",
        "Trainium2",
        "--rationale",
        "Compile takes 27 min on neuron",
        "--evidence",
        "2025-10-23-gpt-oss-neuron-000001",
        "--owner",
        "infra",
    ]
    for trigger in triggers:
        args += ["--trigger", trigger]
    result = run_kb(*args, *extra)
    assert result.returncode == 0, result.stderr
    return result.stderr.split("decision ")[1].split()[0]


def revisit() -> list[dict]:
    result = run_kb("revisit", "--json")
    assert result.returncode == 0, result.stderr
    return json_data(result.stdout)


def test_a_decision_records_its_evidence_and_triggers(evidence: KnowledgeBase) -> None:
    decision_id = decide("release: torch-neuronx", "after: 2099-01-01")
    entry = Entry.read(evidence.entries_path / f"{decision_id}.md")
    assert entry.kind == "decision"
    assert entry.data["links"] == {"evidence": ["2025-10-23-gpt-oss-neuron-000001"]}
    assert entry.data["decision"]["choice"] == "CUDA" and entry.data["decision"]["status"] == "accepted"
    assert entry.data["decision"]["triggers"] == ["release: torch-neuronx", "after: 2099-01-01"]
    assert revisit() == []
    quiet = run_kb("revisit", "--check")
    assert quiet.returncode == 0 and quiet.stdout == "No decision is due (1 decision checked).\n"


def test_a_newer_release_makes_a_decision_due(evidence: KnowledgeBase) -> None:
    decision_id = decide("release: torch-neuronx")
    assert run_kb("release", "torch-neuronx", "2.25.0", "--date", "2026-01-01").returncode == 0
    assert revisit() == []  # older than the evidence's 2.26.0: not news
    # Newer than the evidence, but out before the decision was made (back-dated): the decision knew of it.
    back_dated = run_kb("release", "torch-neuronx", "2.27.0", "--date", "2026-11-20")
    assert back_dated.returncode == 0 and "2026-11-20-torch-neuronx-2-27-0-" in back_dated.stderr  # its own date
    assert revisit() == []
    assert run_kb("release", "torch-neuronx", "2.27.1").returncode == 0
    (due,) = revisit()
    assert due["id"] == decision_id
    assert due["reasons"][0].startswith("evidence uses torch-neuronx 2.26.0; 2.27.1 released on ")
    check = run_kb("revisit", "--check")
    assert check.returncode == 1 and f"{decision_id}  gpt-oss stays on CUDA" in check.stdout


def test_a_metric_condition_fires_on_new_evidence_only(evidence: KnowledgeBase) -> None:
    decide("when: compile_s < 600 for workload=gpt-oss backend=neuron")
    write_entry(
        evidence,
        "2099-01-01-gpt-oss-cuda-000002",
        recorded="2099-01-01T00:00:00Z",
        status="completed",
        backend="cuda",
        workload={"name": "gpt-oss"},
        timings={"compile_s": 90.0},
    )
    write_entry(
        evidence,
        "2099-01-02-gpt-oss-neuron-000003",
        recorded="2099-01-02T00:00:00Z",
        status="completed",
        backend="neuron",
        workload={"name": "gpt-oss"},
        timings={"compile_s": 900.0},
    )
    assert revisit() == []  # the fast one is on another backend; the neuron one is still slow
    write_entry(
        evidence,
        "2099-02-01-gpt-oss-neuron-000004",
        recorded="2099-02-01T00:00:00Z",
        status="completed",
        backend="neuron",
        workload={"name": "gpt-oss"},
        timings={"compile_s": 540.0},
    )
    (due,) = revisit()
    assert due["reasons"] == ["new evidence 2099-02-01-gpt-oss-neuron-000004 meets compile_s < 600 (compile_s = 540)"]
    assert due["entries"] == ["2099-02-01-gpt-oss-neuron-000004"]


def test_dates_and_newer_evidence(evidence: KnowledgeBase) -> None:
    decide("after: 2020-01-01")
    (due,) = revisit()
    assert due["reasons"] == ["the revisit date 2020-01-01 has passed"]


def test_newer_evidence_for_the_same_workload_and_backend(evidence: KnowledgeBase) -> None:
    decide("newer-evidence")
    write_entry(
        evidence,
        "2099-01-01-gpt-oss-cuda-000002",
        recorded="2099-01-01T00:00:00Z",
        status="completed",
        backend="cuda",
        workload={"name": "gpt-oss"},
    )
    assert revisit() == []
    write_entry(
        evidence,
        "2099-01-02-gpt-oss-neuron-000003",
        recorded="2099-01-02T00:00:00Z",
        status="failed",
        backend="neuron",
        workload={"name": "gpt-oss"},
    )
    (due,) = revisit()
    assert due["reasons"] == ["1 newer run of the same workload and backend"]


def test_a_superseded_decision_is_no_longer_due(evidence: KnowledgeBase) -> None:
    old = decide("after: 2020-01-01")
    new = decide("after: 2099-01-01", extra=("--supersedes", old))
    previous = Entry.read(evidence.entries_path / f"{old}.md")
    assert previous.data["decision"]["status"] == "superseded"
    assert previous.data["links"]["superseded_by"] == new
    assert Entry.read(evidence.entries_path / f"{new}.md").data["links"]["supersedes"] == old
    assert revisit() == []
    assert run_kb("check").returncode == 0
    # Only the open decision is checked: the superseded one is history.
    assert run_kb("revisit").stdout == "No decision is due (1 decision checked).\n"


def test_reaffirming_with_versioned_evidence_is_not_due_for_the_release_it_has_seen(evidence: KnowledgeBase) -> None:
    old = decide("release: torch-neuronx")
    assert run_kb("release", "torch-neuronx", "2.27.1").returncode == 0
    assert [d["id"] for d in revisit()] == [old]
    time.sleep(1.1)  # entries are timed to the second: the new decision is recorded after the release
    again = decide("release: torch-neuronx", extra=("--supersedes", old))
    assert revisit() == []
    assert run_kb("revisit", "--check").returncode == 0
    time.sleep(1.1)
    assert run_kb("release", "torch-neuronx", "2.28.0").returncode == 0
    (due,) = revisit()
    assert due["id"] == again and due["reasons"][0].startswith("evidence uses torch-neuronx 2.26.0; 2.28.0 released on")


def test_bad_decisions_write_nothing(evidence: KnowledgeBase) -> None:
    before = sorted(evidence.entries_path.iterdir())
    bad_trigger = run_kb("decide", "--title", "t", "--question", "q", "--choice", "c", "--trigger", "when compile fast")
    assert bad_trigger.returncode == 1
    assert bad_trigger.stderr == (
        "kb: error: trigger 'when compile fast' does not parse; the forms are: release: "
        "PACKAGE; when: NAME OP NUMBER [for key=value ...]; after: YYYY-MM-DD; "
        "newer-evidence\n"
    )
    bad_filter = run_kb(
        "decide",
        "--title",
        "t",
        "--question",
        "q",
        "--choice",
        "c",
        "--trigger",
        "when: compile_s < 600 for team=infra",
    )
    assert "'team=infra' should be key=value with key one of backend, kind, mode, status, workload" in bad_filter.stderr
    unknown = run_kb("decide", "--title", "t", "--question", "q", "--choice", "c", "--evidence", "2025-10-23-gpt-oss")
    assert unknown.returncode == 0  # a unique start of an id is enough...
    missing = run_kb(
        "decide", "--title", "t", "--question", "q", "--choice", "c", "--evidence", "2031-01-01-none-000000"
    )
    assert missing.returncode == 1 and missing.stderr.startswith("kb: error: no entry '2031-01-01-none-000000'")
    assert run_kb("decide", "--title", "t").stderr == (
        "kb: error: a decision needs --question, --choice: give them as options (in a terminal, kb asks for them)\n"
    )
    assert run_kb("release", "torch", "two.ten").stderr.startswith("kb: error: 'two.ten' is not a version")
    assert len(sorted(evidence.entries_path.iterdir())) == len(before) + 1  # only the one good decision


def test_show_reads_a_decision_for_people(evidence: KnowledgeBase) -> None:
    decision_id = decide("after: 2099-01-01")
    shown = run_kb("show", decision_id)
    assert shown.returncode == 0, shown.stderr
    for text in (
        "Decision",
        "question",
        "Where does gpt-oss training run?",
        "choice",
        "CUDA",
        "after: 2099-01-01",
        "evidence",
        "2025-10-23-gpt-oss-neuron-000001",
    ):
        assert text in shown.stdout, text
