"""`kb trend` and `kb board --regressions` never disagree on where a series changed: both read the change points
of kb.answers.changepoints, on series split by the same keys (hardware and launch times included). Hand-written
entries: a release the next one undid, a step change two releases back, two machines of different hardware, a
busy machine, and versions long enough to wrap a line."""

from __future__ import annotations

from conftest import json_data, run_kb, write_entry

from kb.store.knowledge_base import KnowledgeBase

GPU = {"accelerators": [{"name": "NVIDIA H100", "count": 1}], "cpu": "Xeon", "cpu_threads": 32}
OTHER_GPU = {"accelerators": [{"name": "NVIDIA A10G", "count": 1}], "cpu": "EPYC", "cpu_threads": 16}


def runs(kb: KnowledgeBase, medians: dict[str, list[float]], *, start: int = 1, **fields) -> int:
    """One completed run of lm on neuron per value, release by release, recorded a day apart."""
    n = start
    fields.setdefault("hardware", GPU)
    for release, values in medians.items():
        for value in values:
            write_entry(kb, f"2026-10-{n:02d}-lm-neuron-{n:06d}", recorded=f"2026-10-{n:02d}T00:00:00Z",
                        backend="neuron", mode="eager", workload={"name": "lm"}, status="completed",
                        versions={"torch": "2.10.0", "torch-neuronx": release},
                        timings={"step_s": {"median": value, "count": 20}}, **fields)  # fmt: skip
            n += 1
    return n


def trend() -> dict:
    result = run_kb("trend", "step_s", "--workload", "lm", "--package", "torch-neuronx", "--json")
    assert result.returncode == 0, result.stderr
    return json_data(result.stdout)


def located() -> list[tuple[str, str, str, dict]]:
    """(series, release before, release after, comparison) of each flagged point of `kb trend`."""
    return [(series["group"], point["previous"], point["version"], point["comparison"])
            for series in trend()["series"] for point in series["points"] if point["flag"]]  # fmt: skip


def slowdowns() -> list[tuple[str, str, dict]]:
    found = json_data(run_kb("board", "--regressions", "--json").stdout)["slowdowns"]
    return [(slow["last_good"], slow["first_bad"], slow["comparison"]) for slow in found]


STEADY = (0.100, 0.1004, 0.0997)


def test_a_release_the_next_one_undid_is_flagged_where_the_board_locates_it(kb: KnowledgeBase) -> None:
    runs(kb, {"2.8.0": list(STEADY), "2.9.0": [v * 1.5 for v in STEADY], "2.10.0": list(STEADY)})
    (slow,) = slowdowns()
    assert slow[:2] == ("2.8.0", "2.9.0")
    (series,) = trend()["series"]
    assert [p["flag"] for p in series["points"]] == ["", "regression", "improvement"]
    bad = series["points"][1]
    assert (bad["previous"], bad["comparison"]) == ("2.8.0", slow[2]) and bad["change"] == 0.5


def test_a_step_change_is_judged_on_the_same_runs_as_the_board(kb: KnowledgeBase) -> None:
    # A step two releases back: the change is judged on all the runs either side of it (6 before, 9 after), by
    # trend as by the board, not on the two releases beside it.
    noise = (0.0, 0.002, -0.0015)
    medians = {r: [round(0.100 + d, 4) for d in noise] for r in ("2.8.0", "2.9.0")}
    medians |= {r: [round(0.150 + d, 4) for d in noise] for r in ("2.10.0", "2.11.0", "2.12.0")}
    runs(kb, medians)
    (slow,) = slowdowns()
    ((_, before, after, comparison),) = located()
    assert (before, after, comparison) == slow and (comparison["n_base"], comparison["n"]) == (6, 9)


def test_other_hardware_and_a_busy_machine_make_no_change(kb: KnowledgeBase) -> None:
    # 2.10.0 ran only on a slower machine: another series, not a regression; runs on a busy machine are left out.
    n = runs(kb, {"2.8.0": list(STEADY), "2.9.0": list(STEADY)})
    n = runs(kb, {"2.10.0": [v * 1.5 for v in STEADY]}, start=n, hardware=OTHER_GPU)
    runs(kb, {"2.10.0": [v * 1.5 for v in STEADY]}, start=n, hardware={**GPU, "load": {"busy": True}})
    assert slowdowns() == [] and located() == []
    found = trend()
    assert sorted(s["group"] for s in found["series"]) == ["neuron · eager · on NVIDIA A10G",
                                                          "neuron · eager · on NVIDIA H100"]  # fmt: skip
    assert found["busy"] == 3
    text = run_kb("trend", "step_s", "--workload", "lm", "--package", "torch-neuronx").stdout
    assert "(3 runs on a busy machine left out)" in text


def test_lines_wrap_without_cutting_a_release_or_its_change(kb: KnowledgeBase) -> None:
    long = ("2.8.0.dev20261001123456789", "2.9.0.dev20261101123456789")
    runs(kb, {long[0]: list(STEADY), long[1]: [v * 1.5 for v in STEADY]})
    text = run_kb("trend", "step_s", "--workload", "lm", "--package", "torch-neuronx").stdout
    lines = text.splitlines()
    assert max(len(line) for line in lines) <= 80
    assert any(line.strip() == f"+50.0% vs {long[0]}  REGRESSION" for line in lines), text
    assert any(line.startswith(f"  {long[1]} ") for line in lines), text
