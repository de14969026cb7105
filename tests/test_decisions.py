"""Decisions, releases and revisits: every trigger firing and not firing, supersession, --check exit codes."""

from __future__ import annotations

import pytest
from conftest import Clock, json_data, run_kb, write_entry

from kb.model.entry import Entry
from kb.store.knowledge_base import KnowledgeBase


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


def neuron_run(kb: KnowledgeBase, day: str, n: int, compile_s: float, **fields) -> str:
    entry_id = f"{day}-gpt-oss-neuron-{n:06d}"
    fields.setdefault("versions", {"torch-neuronx": "2.27.1"})
    fields.setdefault("status", "completed")
    write_entry(kb, entry_id, recorded=f"{day}T00:00:{n % 60:02d}Z", backend="neuron",
                workload={"name": "gpt-oss"}, timings={"compile_s": compile_s}, **fields)  # fmt: skip
    return entry_id


def test_a_metric_condition_fires_on_repeated_runs_never_on_one(evidence: KnowledgeBase) -> None:
    decide("when: compile_s < 600 for workload=gpt-oss backend=neuron")
    write_entry(evidence, "2099-01-01-gpt-oss-cuda-000002", recorded="2099-01-01T00:00:00Z", status="completed",
                backend="cuda", workload={"name": "gpt-oss"}, timings={"compile_s": 90.0})  # fmt: skip
    neuron_run(evidence, "2099-01-02", 3, 900.0)
    assert revisit() == []  # the fast one is on another backend; the neuron one is still slow
    # One lucky run is no evidence: it meets the condition, but one run gives no interval.
    neuron_run(evidence, "2099-02-01", 4, 540.0)
    assert revisit() == []
    # Nor do runs on a busy machine, at another batch, or that failed.
    neuron_run(evidence, "2099-02-02", 5, 530.0, hardware={"load": {"busy": True}})
    neuron_run(evidence, "2099-02-02", 6, 520.0, settings={"batch": 64})
    neuron_run(evidence, "2099-02-02", 7, 510.0, status="failed")
    assert revisit() == []
    runs = [neuron_run(evidence, "2099-02-03", n, value) for n, value in ((8, 550.0), (9, 560.0))]
    assert revisit() == []  # with the slow run, the interval of the median crosses the bound
    more = ((10, 545.0), (11, 555.0), (12, 548.0), (13, 552.0))
    runs += [neuron_run(evidence, "2099-02-04", n, value) for n, value in more]
    (due,) = revisit()
    assert due["reasons"] == ["new evidence meets compile_s < 600: compile_s = 9 min 11 s, the median of 8 runs since, "
                              "95% interval 9 min 5 s to 9 min 20 s"]  # fmt: skip
    (why,) = due["why"]
    assert why["runs"] == ["2099-01-02-gpt-oss-neuron-000003", "2099-02-01-gpt-oss-neuron-000004", *runs]
    assert why["releases"] == [] and (why["comparison"]["n"], why["comparison"]["high"]) == (8, 560.0)
    # The release the runs used, once recorded, is named behind the reason; recording it made nothing due.
    released = run_kb("release", "torch-neuronx", "2.27.1", "--date", "2026-01-01")
    release_id = released.stderr.split("recorded release ")[-1].split()[0] if released.returncode == 0 else ""
    assert release_id.startswith("2026-01-01-torch-neuronx-2-27-1"), released.stderr
    assert "due for review after this release" not in released.stderr
    (due,) = revisit()
    assert due["why"][0]["releases"] == [release_id] and due["entries"] == [*why["runs"], release_id]


def test_a_faster_by_trigger_fires_on_a_verdict_that_says_so(evidence: KnowledgeBase) -> None:
    for n, value in ((2, 1650.0), (3, 1620.0)):
        neuron_run(evidence, "2025-10-24", n, value, versions={"torch-neuronx": "2.26.0"})
    decide("when: compile_s faster by 10% for workload=gpt-oss backend=neuron")
    noisy = [neuron_run(evidence, "2099-01-01", n, value) for n, value in ((4, 900.0), (5, 1700.0), (6, 1500.0))]
    assert revisit() == []  # one fast run among noisy ones: the interval straddles the 10% floor
    for path in noisy:
        (evidence.entries_path / f"{path}.md").unlink()
    runs = [neuron_run(evidence, "2099-01-02", n, value) for n, value in ((7, 1300.0), (8, 1320.0), (9, 1290.0))]
    (due,) = revisit()
    (reason,) = due["reasons"]
    assert reason.startswith("new evidence is faster by more than 10%: compile_s faster ×1.26 (n=3 vs 3, 95% ")
    assert reason.endswith(", floor 10%)")
    (why,) = due["why"]
    assert why["runs"] == runs and why["comparison"]["verdict"] == "faster" and why["comparison"]["low"] > 1.1
    shown = " ".join(run_kb("show", due["id"]).stdout.split())
    assert "fired when: compile_s faster by 10% for workload=gpt-oss backend=neuron" in shown
    text = run_kb("revisit").stdout  # wrapped at 80 columns; ids whole
    assert max(len(line) for line in text.splitlines()) <= 80 and all(f" {run}" in text for run in runs)


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


def test_reaffirming_with_versioned_evidence_is_not_due_for_the_release_it_has_seen(
    evidence: KnowledgeBase, clock: Clock
) -> None:
    old = decide("release: torch-neuronx")
    assert run_kb("release", "torch-neuronx", "2.27.1").returncode == 0
    assert [d["id"] for d in revisit()] == [old]
    clock.tick()  # entries are timed to the second: the new decision is recorded after the release
    again = decide("release: torch-neuronx", extra=("--supersedes", old))
    assert revisit() == []
    assert run_kb("revisit", "--check").returncode == 0
    clock.tick()
    assert run_kb("release", "torch-neuronx", "2.28.0").returncode == 0
    (due,) = revisit()
    assert due["id"] == again and due["reasons"][0].startswith("evidence uses torch-neuronx 2.26.0; 2.28.0 released on")


def test_bad_decisions_write_nothing(evidence: KnowledgeBase) -> None:
    before = sorted(evidence.entries_path.iterdir())
    bad_trigger = run_kb("decide", "--title", "t", "--question", "q", "--choice", "c", "--trigger", "when compile fast")
    assert bad_trigger.returncode == 1
    assert bad_trigger.stderr == (
        "kb: error: trigger 'when compile fast' does not parse; the forms are: release: "
        "PACKAGE; when: NAME OP NUMBER [for key=value ...]; when: NAME faster|slower by N% "
        "[for key=value ...]; after: YYYY-MM-DD; newer-evidence\n"
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
