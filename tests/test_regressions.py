"""Regressions across releases (what stopped working apart from what got slower) and expectations kept in git
(`kb expect`: pass, fail, improved, missing; `--update` rewrites them from the newest evidence)."""

from __future__ import annotations

from conftest import json_data, run_kb, write_entry

from kb.store.knowledge_base import KnowledgeBase


def run(kb: KnowledgeBase, n: int, neuronx: str, mode: str = "compiled", **fields) -> None:
    fields.setdefault("status", "completed")
    write_entry(kb, f"2026-11-{n:02d}-lm-neuron-{n:06d}", recorded=f"2026-11-{n:02d}T00:00:00Z", backend="neuron",
                mode=mode, workload={"name": "lm"}, versions={"torch": "2.10.0", "torch-neuronx": neuronx},
                **fields)  # fmt: skip


def coverage(kb: KnowledgeBase, n: int, neuronx: str, cases: dict[str, str]) -> None:
    entry_id = f"2026-11-{n:02d}-flex-neuron-{n:06d}"
    passed = sum(1 for outcome in cases.values() if outcome == "passed")
    write_entry(kb, entry_id, kind="coverage", recorded=f"2026-11-{n:02d}T00:00:00Z", backend="neuron",
                workload={"name": "lm"}, versions={"torch-neuronx": neuronx},
                coverage={"cases": "cases.tsv", "passed": passed, "total": len(cases)})  # fmt: skip
    folder = kb.entries_path / entry_id
    folder.mkdir()
    lines = "".join(f"{case}\t{outcome}\t\n" for case, outcome in sorted(cases.items()))
    (folder / "cases.tsv").write_text("case\toutcome\treason\n" + lines)


def fill(kb: KnowledgeBase) -> None:
    step = {"median": 0.1, "p10": 0.1, "p90": 0.1, "count": 20}
    slow = {"median": 0.2, "p10": 0.2, "p90": 0.2, "count": 20}
    run(kb, 1, "2.26.0+build1", timings={"step_s": step, "compile_s": 600.0}, compile={"graph_breaks": {"count": 2}})
    run(kb, 2, "2.27.1", status="failed", failure={"class": "compile_error", "message": "neuronx-cc exited 70"})
    run(kb, 3, "2.26.0", mode="eager", timings={"step_s": step})
    run(kb, 4, "2.27.1", mode="eager", timings={"step_s": slow})
    coverage(kb, 5, "2.26.0", {"test_a": "passed", "test_b": "passed"})
    coverage(kb, 6, "2.27.1", {"test_a": "passed", "test_b": "failed"})


def test_what_stopped_working_is_apart_from_what_got_slower(kb: KnowledgeBase) -> None:
    fill(kb)
    for n, neuronx, median in ((7, "2.26.0", 0.1), (8, "2.26.0", 0.1), (9, "2.27.1", 0.2), (10, "2.27.1", 0.2)):
        run(kb, n, neuronx, mode="eager", timings={"step_s": {"median": median + n / 10000, "count": 20}})
    found = json_data(run_kb("board", "--regressions", "--json").stdout)
    broken = {(b["mode"], b["failure"]): b for b in found["breakages"]}
    run_break = broken[("compiled", "compile_error")]
    assert (run_break["package"], run_break["before"], run_break["after"]) == ("torch-neuronx", "2.26.0", "2.27.1")
    assert run_break["passed_entry"] == "2026-11-01-lm-neuron-000001"
    cases = broken[(None, "1 case newly failing")]
    assert cases["cases"] == ["test_b"]
    # A failed run is a breakage, never a slowdown; the eager step time doubled on the newer torch-neuronx.
    (slow,) = found["slowdowns"]
    said = (slow["series"], slow["figure"], slow["package"], slow["last_good"], slow["first_bad"])
    assert said == ("neuron · eager", "step_s", "torch-neuronx", "2.26.0", "2.27.1")
    assert 0.99 < slow["change"] < 1.01 and slow["comparison"]["verdict"] == "slower"
    assert slow["comparison"]["high"] < 0.98 and slow["comparison"]["n"] == 3
    text = run_kb("board", "--regressions").stdout
    words = " ".join(text.split())  # long lines wrap, never cut
    assert "lm on neuron · compiled: torch-neuronx 2.26.0 -> 2.27.1: compile_error" in words
    assert "lm step_s on neuron · eager: torch-neuronx 2.26.0 -> 2.27.1 +99.5%" in words
    assert "slower ×0.5" in words and max(len(line) for line in text.splitlines()) <= 80


def test_only_comparable_runs_in_time_order_pair_and_a_ctrl_c_is_no_regression(kb: KnowledgeBase) -> None:
    run(kb, 1, "2.26.0", settings={"batch": 8})
    run(kb, 2, "2.27.1", status="failed", settings={"batch": 16}, failure={"class": "oom"})  # another batch
    run(kb, 3, "2.27.1", status="interrupted", settings={"batch": 8}, failure={"class": "interrupted"})  # Ctrl-C
    run(kb, 5, "2.26.0", mode="eager", settings={"batch": 8})
    run(kb, 4, "2.27.1", mode="eager", status="failed", settings={"batch": 8}, failure={"class": "crash"})
    # The failed eager run on the newer release was recorded before the completed one on the older.
    found = json_data(run_kb("board", "--regressions", "--json").stdout)
    assert found["breakages"] == []
    run(kb, 6, "2.27.1", status="failed", settings={"batch": 8}, failure={"class": "compile_error"})
    (broken,) = json_data(run_kb("board", "--regressions", "--json").stdout)["breakages"]
    assert (broken["passed_entry"], broken["failed_entry"]) == (
        "2026-11-01-lm-neuron-000001",
        "2026-11-06-lm-neuron-000006",
    )


def test_expectations_pass_fail_improve_and_are_rewritten(kb: KnowledgeBase) -> None:
    fill(kb)
    path = kb.root / "expectations.toml"
    path.write_text(
        '[[expect]]\nworkload = "lm"\nbackend = "neuron"\nmode = "compiled"\nfigure = "graph_breaks"\nmax = 3\n\n'
        '[[expect]]\nworkload = "lm"\nbackend = "neuron"\nmode = "compiled"\nfigure = "compile_s"\nmax = 500\n\n'
        '[[expect]]\nworkload = "lm"\nbackend = "neuron"\nfigure = "passing_cases"\nmin = 2\n\n'
        '[[expect]]\nworkload = "lm"\nbackend = "neuron"\nmode = "eager"\nfigure = "step_s"\nmax = 1\n'
    )
    result = run_kb("expect", "--json")
    assert result.returncode == 1
    verdicts = [(o["expectation"]["figure"], o["verdict"], o["actual"], o["reason"]) for o in json_data(result.stdout)]
    # The newest compiled run failed to compile: the gate stops it, whatever its older figures said.
    failed = "the newest run failed: compile_error"
    assert verdicts == [("graph_breaks", "fail", None, failed), ("compile_s", "fail", None, failed),
                        ("passing_cases", "fail", 1.0, ""), ("step_s", "improved", 0.2, "")]  # fmt: skip
    shown = " ".join(run_kb("expect").stdout.split())  # long lines wrap, never cut
    assert "FAIL lm on neuron · compiled: compile_s <= 500 s, the newest run failed: compile_error" in shown
    assert run_kb("expect", "--update").returncode == 0
    rewritten = path.read_text()
    # A failing pair keeps its bounds; a count only tightens; one run sets no timing bound.
    assert "max = 3\n" in rewritten and "max = 500.0\n" in rewritten and "min = 2\n" in rewritten
    assert 'mode = "eager"\nfigure = "step_s"\nmax = 1.0' in rewritten
    updated = json_data(run_kb("expect", "--update", "--json").stdout)
    assert updated[3]["notes"] == ["kept: 1 run(s); a timing bound needs 3 repeats (kb record --repeat)"]
    assert updated[2]["notes"] == ["kept: 1 would relax it; --relax lm:neuron:passing_cases to allow"]
    assert run_kb("expect", "--update", "--relax", "lm:neuron:passing_cases").returncode == 0
    assert "min = 1\n" in path.read_text()
    refused = run_kb("expect", "--update", "--relax", "lm:neuron:passing_case")
    assert refused.returncode == 1 and "did you mean lm:neuron:passing_cases" in refused.stderr


def test_the_gate_reads_numerics_repeats_and_names(kb: KnowledgeBase) -> None:
    step = {"median": 0.1, "count": 20}
    for n, median in ((1, 0.10), (2, 0.12), (3, 0.11)):
        run(kb, n, "2.27.1", timings={"step_s": {**step, "median": median}}, numerics={"verdict": "pass"},
            compile={"graph_breaks": {"count": 0}})  # fmt: skip
    run(kb, 4, "2.27.1", status="interrupted", failure={"class": "interrupted"})  # a Ctrl-C: not evidence
    path = kb.root / "expectations.toml"
    gate = (
        '[[expect]]\nworkload = "lm"\nbackend = "neuron"\nfigure = "numerics"\n\n'
        '[[expect]]\nworkload = "lm"\nbackend = "neuron"\nfigure = "step_s"\nmax = 0.2\n\n'
        '[[expect]]\nworkload = "lm"\nbackend = "neuron"\nfigure = "graph_breaks"\nmax = 0\n'
    )
    path.write_text(gate)
    outcomes = json_data(run_kb("expect", "--json").stdout)
    assert [(o["verdict"], o["actual"], o["n"]) for o in outcomes] == [
        ("pass", None, 0), ("improved", 0.11, 3), ("pass", 0.0, 1)
    ]  # fmt: skip
    assert run_kb("expect", "--update").returncode == 0
    assert "max = 0.13\n" in path.read_text()  # the median of 3 runs (0.11), with their 18% spread as room
    # A loss that became NaN fails the gate, numerics and every figure alike.
    run(kb, 5, "2.27.1", timings={"step_s": step}, numerics={"verdict": "pass"},
        metrics={"loss": {"value": None, "nonfinite": "nan", "step": 5}})  # fmt: skip
    outcomes = json_data(run_kb("expect", "--json").stdout)
    assert {o["reason"] for o in outcomes} == {"numerics failed: loss became NaN at step 5"}
    path.write_text(gate.replace('"step_s"', '"step_sec"'))
    wrong = run_kb("expect")
    assert wrong.returncode == 1
    assert wrong.stderr == f"kb: error: {path}:6: figure 'step_sec' is not one kb knows; did you mean step_s?\n"
    path.write_text(gate.replace('backend = "neuron"', 'backend = "neuronn"', 1))
    assert "backend 'neuronn' is not one kb knows; did you mean neuron?" in run_kb("expect").stderr


def test_a_wrong_expectation_names_its_line(kb: KnowledgeBase) -> None:
    path = kb.root / "expectations.toml"
    path.write_text('[[expect]]\nworkload = "lm"\nbackend = "cpu"\nfigure = "step_s"\n\n[[expect]]\nworkload = 3\n')
    result = run_kb("expect")
    assert (
        result.returncode == 1
        and result.stderr == f"kb: error: {path}:1: give one bound, max = NUMBER or min = NUMBER\n"
    )
    path.unlink()
    assert "no expectations yet" in run_kb("expect").stderr
