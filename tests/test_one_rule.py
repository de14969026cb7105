"""One rule for which runs are repeats of one configuration (figures.configuration: hardware included), read by
the board, its summary, kb compare and kb revisit alike; one rule for whether others reproduced a figure, read by
the board and kb rerun alike; one spelling of a package's name (as pip compares them) everywhere."""

from __future__ import annotations

import pytest
from conftest import Clock, json_data, run_kb, write_entry
from test_board_verdicts import PASSED, cuda, neuron, run
from test_rerun_reproduction import rate_run

from kb.answers.changepoints import release_in
from kb.answers.compare import agreement
from kb.index.db import connect, index_path
from kb.model.entry import Entry
from kb.store.knowledge_base import KnowledgeBase

XEON = {"cpu": "Xeon A", "cpu_threads": 32}
EPYC = {"cpu": "EPYC B", "cpu_threads": 64}


def test_revisit_pools_the_runs_since_a_decision_as_the_board_does(kb: KnowledgeBase, clock: Clock) -> None:
    write_entry(kb, "2026-10-01-lm-neuron-000001", recorded="2026-10-01T00:00:00Z", status="completed",
                backend="neuron", mode="eager", workload={"name": "lm"}, hardware=XEON,
                metrics={"tokens_per_s": {"value": 900.0, "unit": "tokens/s"}})  # fmt: skip
    decided = run_kb("decide", "--title", "lm stays", "--question", "Where?", "--choice", "CUDA",
                     "--trigger", "when: tokens_per_s > 500 for workload=lm backend=neuron")  # fmt: skip
    assert decided.returncode == 0, decided.stderr
    decision = decided.stderr.split("decision ")[1].split()[0]
    clock.tick()
    # One run on one machine, then two on another: repeats only within a machine.
    for n, (hardware, rate) in enumerate(((XEON, 1000.0), (EPYC, 2000.0), (EPYC, 2100.0)), start=2):
        write_entry(kb, f"2099-01-01-lm-neuron-{n:06d}", recorded=f"2099-01-01T00:00:0{n}Z", status="completed",
                    backend="neuron", mode="eager", workload={"name": "lm"}, hardware=hardware,
                    metrics={"tokens_per_s": {"value": rate, "unit": "tokens/s"}})  # fmt: skip
    shown = " ".join(run_kb("show", decision).stdout.split())
    assert "tokens_per_s = 2,050 tokens/s, the median of 2 runs since (too few runs" in shown, shown
    assert [item["id"] for item in json_data(run_kb("revisit", "--json").stdout)] == []
    board = json_data(run_kb("board", "--json").stdout)
    (cell,) = [c for w in board["workloads"] for c in w["cells"] if c["backend"] == "neuron"]
    assert cell["n"] == 2 and cell["figure"]["value"] == 2050.0


def test_the_summary_speedup_pools_a_release_as_the_board_pools_its_cell(tmp_path) -> None:
    kb, _ = KnowledgeBase.init(tmp_path / "kb")
    for rate in (1000.0, 1010.0, 990.0):
        run(kb, "lm", "cuda", "eager", rate, versions=cuda(), numerics=PASSED, hardware=XEON)
    for hardware, rate in ((XEON, 3000.0), (EPYC, 2000.0), (EPYC, 2100.0)):  # the newest two on EPYC B
        run(kb, "lm", "neuron", "compiled", rate, versions=neuron("2.26.0"), numerics=PASSED, hardware=hardware)
    board = json_data(run_kb("--kb", str(kb.root), "board", "--incumbent", "cuda", "--json").stdout)
    (cell,) = [c for w in board["workloads"] for c in w["cells"] if c["backend"] == "neuron"]
    assert cell["n"] == 2 and cell["speedup"] == pytest.approx(2.05)
    summary = json_data(run_kb("--kb", str(kb.root), "board", "--summary", "--incumbent", "cuda", "--json").stdout)
    (history,) = {row["label"]: row for row in summary["rows"]}["neuron · compiled"]["history"]
    assert history["geomean"] == pytest.approx(cell["speedup"])


def reproduced(kb: KnowledgeBase, bo_rates: tuple[float, ...]) -> tuple[str, str]:
    """The board's reproduction line for ana's three runs on host a at ~1,000 tokens/s and bo's reruns of the
    first on host b at `bo_rates`, and kb rerun's agreement of bo's newest with it."""

    def write(n: int, rate: float, who: str, host: str, **fields) -> str:
        return rate_run(kb, n, rate, who, host, **fields)

    original = write(1, 1000.0, "ana", "a")
    for n, rate in ((2, 1010.0), (3, 990.0)):
        write(n, rate, "ana", "a")
    newest = [write(n, rate, "bo", "b", links={"rerun_of": original}) for n, rate in enumerate(bo_rates, start=4)][-1]
    (cell,) = json_data(run_kb("board", "--workload", "lm", "--json").stdout)["workloads"][0]["cells"]
    db = connect(index_path(kb.cache_path))
    try:
        agreed = agreement(kb, db, kb.load(original), Entry.read(kb.entries_path / f"{newest}.md"))
    finally:
        db.close()
    return cell["reproduction"], agreed.text()


def test_a_figure_twice_as_high_elsewhere_is_not_reproduced_as_kb_rerun_says(kb: KnowledgeBase) -> None:
    board, rerun = reproduced(kb, (2000.0, 2020.0, 1980.0))
    assert board.startswith("not reproduced by 2 people on 2 hosts: disagrees, slower ×0.5 (n=3 vs 3, 95% interval")
    assert "tokens_per_s disagrees, faster ×2 (n=3 vs 3, 95% interval" in rerun


def test_a_figure_equivalent_elsewhere_is_reproduced_with_its_footing(kb: KnowledgeBase) -> None:
    board, rerun = reproduced(kb, (1000.0, 1002.0, 998.0))
    assert board.startswith("reproduced by 2 people on 2 hosts: agrees, equivalent within the floor ×1 (n=3 vs 3")
    assert board.endswith(", floor 2%)") and "95% interval ×0.9" in board
    assert "tokens_per_s agrees, equivalent within the floor ×1 (n=3 vs 3, 95% interval" in rerun


def test_a_dotted_package_name_is_one_package_on_the_board_its_summary_and_checklist(tmp_path) -> None:
    kb, _ = KnowledgeBase.init(tmp_path / "kb")
    for rate in (1000.0, 1010.0, 990.0):
        run(kb, "lm", "cuda", "eager", rate, versions=cuda(), numerics=PASSED)
    dotted = {"torch": "2.10.0", "Torch.NeuronX": "2.26.0+b1"}  # as pip compares it: torch-neuronx
    ran = [run(kb, "lm", "neuron", "compiled", rate, versions=dotted, numerics=PASSED) for rate in (2000.0, 2010.0)]
    assert run_kb("--kb", str(kb.root), "release", "torch-neuronx", "2.26.0").returncode == 0
    board = json_data(run_kb("--kb", str(kb.root), "board", "--incumbent", "cuda", "--json").stdout)
    (cell,) = [c for w in board["workloads"] for c in w["cells"] if c["backend"] == "neuron"]
    data = Entry.read(kb.entries_path / f"{ran[0]}.md").data
    assert cell["release"] == f"torch-neuronx {release_in(data, 'torch-neuronx')}" == "torch-neuronx 2.26.0"
    checks = {check["question"]: check for check in cell["checklist"]}
    newest = [check for question, check in checks.items() if "latest release" in question]
    assert newest and newest[0]["ok"] is True, checks
    assert "ran on torch-neuronx 2.26.0+b1; latest release 2.26.0" in newest[0]["detail"]
    summary = json_data(run_kb("--kb", str(kb.root), "board", "--summary", "--incumbent", "cuda", "--json").stdout)
    (history,) = {row["label"]: row for row in summary["rows"]}["neuron · compiled"]["history"]
    assert history["release"] == cell["release"]


def test_a_failure_on_other_hardware_is_not_a_breakage_of_what_passed(kb: KnowledgeBase) -> None:
    def ran(n: int, release: str, hardware: dict, status: str, timings: dict | None = None) -> None:
        write_entry(kb, f"2026-10-0{n}-lm-neuron-{n:06d}", recorded=f"2026-10-0{n}T00:00:00Z", status=status,
                    backend="neuron", mode="eager", workload={"name": "lm"}, hardware=hardware,
                    versions={"torch-neuronx": release}, timings=timings or {},
                    failure={"class": "compile_error"} if status == "failed" else None)  # fmt: skip

    ran(1, "2.26.0", XEON, "completed", {"device_sync": "none: launch times"})
    ran(2, "2.27.1", EPYC, "failed")
    assert json_data(run_kb("board", "--regressions", "--json").stdout)["breakages"] == []
    ran(3, "2.27.1", XEON, "failed")  # the same machine: what passed now fails, however its steps were timed
    (broken,) = json_data(run_kb("board", "--regressions", "--json").stdout)["breakages"]
    assert (broken["before"], broken["after"], broken["failed_entry"]) == (
        "2.26.0",
        "2.27.1",
        "2026-10-03-lm-neuron-000003",
    )
