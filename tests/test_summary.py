"""`kb board --summary`: one line per backend and mode, with its peak memory and how it moved across the releases
of its package (pass rate and geomean speed-up per release), from hand-written runs."""

from __future__ import annotations

import pytest
from conftest import json_data, run_kb
from test_board_verdicts import PASSED, cuda, neuron, run

from kb.store.knowledge_base import KnowledgeBase


def memory(gb: float) -> dict:
    return {"device_peak_gb": gb, "host_peak_rss_gb": 3.0}


def test_the_summary_gives_peak_memory_and_each_release(tmp_path) -> None:
    kb, _ = KnowledgeBase.init(tmp_path / "kb")
    older = {"w1": (2.0, 10.0), "w2": (1.5, 12.0), "w3": (3.0, 14.0)}  # speed-up, peak GB
    newer = {"w2": (1.2, 20.0), "w3": (2.0, 22.0)}
    for workload, (speedup, peak) in older.items():
        for rate in (1000.0, 1010.0, 990.0):
            run(kb, workload, "cuda", "eager", rate, versions=cuda(), numerics=PASSED, memory=memory(40.0))
            run(kb, workload, "neuron", "compiled", rate * speedup, numerics=PASSED, versions=neuron("2.26.0"),
                memory=memory(peak))  # fmt: skip
    for rate in (1000.0, 1010.0, 990.0):
        for workload, (speedup, peak) in newer.items():
            run(
                kb,
                workload,
                "neuron",
                "compiled",
                rate * speedup,
                numerics=PASSED,
                versions=neuron("2.27.1"),
                memory={"device_peak_gb_step": peak, "device_peak_gb_load": 1.0},
            )  # per phase only
        # A busy machine's run and a numerics failure count as tried and completed, never in a speed-up.
        run(kb, "w2", "neuron", "compiled", 9000.0, numerics=PASSED, versions=neuron("2.27.1"),
            hardware={"load": {"busy": True}})  # fmt: skip
    run(kb, "w2", "neuron", "compiled", 9000.0, numerics={"verdict": "fail"}, versions=neuron("2.26.0"))
    for _ in range(2):  # the newest release breaks w1
        run(kb, "w1", "neuron", "compiled", None, status="failed", versions=neuron("2.27.1"),
            failure={"class": "compile_error"})  # fmt: skip
    result = run_kb("--kb", str(kb.root), "board", "--summary", "--incumbent", "cuda", "--json")
    assert result.returncode == 0, result.stderr
    rows = {row["label"]: row for row in json_data(result.stdout)["rows"]}
    neuron_row = rows["neuron · compiled"]
    # Peak memory: the median over the workloads of each cell's peak on its current release (w1 has none there:
    # its runs on 2.27.1 failed), the whole run's peak or, without one, the highest phase's.
    assert neuron_row["peak_memory_gb"] == 21.0 and neuron_row["memory_workloads"] == 2
    assert rows["cuda · eager"]["peak_memory_gb"] == 40.0 and rows["cuda · eager"]["history"][0]["geomean"] is None
    first, second = neuron_row["history"]
    assert (first["release"], first["completed"], first["tried"], first["counted"]) == (
        "torch-neuronx 2.26.0", 10, 10, 3)  # fmt: skip
    assert first["geomean"] == pytest.approx((2.0 * 1.5 * 3.0) ** (1 / 3), rel=1e-3)
    assert first["low"] < first["geomean"] < first["high"]
    assert (second["release"], second["completed"], second["tried"], second["counted"]) == (
        "torch-neuronx 2.27.1", 9, 11, 2)  # fmt: skip
    assert second["geomean"] == pytest.approx((1.2 * 2.0) ** 0.5, rel=1e-3) and second["low"] is None
    text = run_kb("--kb", str(kb.root), "board", "--summary", "--incumbent", "cuda").stdout
    lines = text.splitlines()
    assert max(len(line) for line in lines) <= 80
    assert "    peak memory 21 GB (the median of 2 workloads)" in lines
    assert any(line.split() == ["torch-neuronx", "2.26.0", "10/10", "100%", "×2.08", "[1.5,", "3]", "n=3"]
               for line in lines), text  # fmt: skip
    assert any(line.split() == ["torch-neuronx", "2.27.1", "9/11", "82%", "×1.55", "n=2"] for line in lines), text


def test_the_summary_gives_the_peak_memory_the_board_gives(tmp_path) -> None:
    """One peak memory: a backend's summary is the median of its cells' peaks on the board, so a run on the host's
    CPU gives the process's peak resident memory in both, and a figure's repeats give their highest."""
    kb, _ = KnowledgeBase.init(tmp_path / "kb")
    for workload, peaks in {"w1": (2.0, 2.5), "w2": (4.0, 3.0), "w3": (6.0, 5.0)}.items():
        for rate, peak in zip((1000.0, 1010.0), peaks, strict=True):
            run(kb, workload, "cpu", "eager", rate, versions=cuda(), numerics=PASSED,
                memory={"host_peak_rss_gb": peak})  # fmt: skip
    board = json_data(run_kb("--kb", str(kb.root), "board", "--json").stdout)
    cells = [cell["peak_memory_gb"] for workload in board["workloads"] for cell in workload["cells"]]
    assert sorted(cells) == [2.5, 4.0, 6.0]  # each cell: the highest of the runs behind its figure
    result = run_kb("--kb", str(kb.root), "board", "--summary", "--json")
    (row,) = json_data(result.stdout)["rows"]
    assert (row["peak_memory_gb"], row["memory_workloads"]) == (4.0, 3)
    text = run_kb("--kb", str(kb.root), "board", "--summary").stdout
    assert "    peak memory 4 GB (the median of 3 workloads)" in text.splitlines(), text


@pytest.mark.parametrize(("cold", "warm"), [(130.0, 45.2), (1250.0, 63.0)])
def test_a_summary_line_breaks_between_figures_never_inside_one(cold: float, warm: float) -> None:
    from kb.answers.board import Board
    from kb.answers.summary import BackendSummary, Summary
    from kb.text.answer_lines import summary_lines
    from kb.text.humanize import duration

    row = BackendSummary("neuron · compiled", 3, 30, 46, 3, 1.55, 1.21, 2.13, cold, warm, ["torch-neuronx 2.27.1"])
    lines = summary_lines(Summary([row]), Board("cuda", []))
    assert max(len(line) for line in lines) <= 80
    for piece in ("×1.55 [1.21, 2.13] n=3", f"{duration(cold)} /", duration(warm)):
        assert any(piece in line for line in lines[1:3]), (piece, lines)


def test_no_workload_is_due_a_rerun_before_any_release_is_recorded(tmp_path) -> None:
    """Due a rerun means newer than the evidence, or failed on it: with no release recorded nothing is due, whatever
    the runs; once one is, a workload without a measured run on it is."""
    kb, _ = KnowledgeBase.init(tmp_path / "kb")
    for _ in range(3):
        run(kb, "w1", "cuda", "eager", None, versions=cuda())  # completed, no figure
    result = run_kb("--kb", str(kb.root), "board", "--summary", "--json")
    (row,) = json_data(result.stdout)["rows"]
    assert row["rerun_due"] == 0
    assert "due a rerun" not in run_kb("--kb", str(kb.root), "board", "--summary").stdout
    assert run_kb("--kb", str(kb.root), "release", "torch", "2.11.0").returncode == 0
    (row,) = json_data(run_kb("--kb", str(kb.root), "board", "--summary", "--json").stdout)["rows"]
    assert row["rerun_due"] == 1
