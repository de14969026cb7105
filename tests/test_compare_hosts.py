"""A cell's repeats share their hardware: runs of the same configuration on another machine (even one with the same
host name, as the entries the repository ships and the machine that runs its main job are both called `vm`) are
reproductions, never repeats pooled into the figure, on the board and in `kb compare` alike."""

from __future__ import annotations

from conftest import json_data, run_kb, write_entry

from kb.store.knowledge_base import KnowledgeBase

INTEL = {"hostname": "vm", "cpu": "Intel(R) Xeon(R) Processor", "cpu_threads": 2, "load": {"busy": False}}
AMD = {"hostname": "vm", "cpu": "AMD EPYC", "cpu_threads": 2}  # recorded before kb read the machine's load
SEQUENCE = iter(range(1, 1000))


def run(kb: KnowledgeBase, mode: str, rate: float, hardware: dict, day: int = 6, author: str = "ana") -> str:
    n = next(SEQUENCE)
    entry_id = f"2026-12-{day:02d}-tiny-lm-cpu-{mode}-{n:06d}"
    write_entry(kb, entry_id, recorded=f"2026-12-{day:02d}T00:{n:02d}:00Z", status="completed", backend="cpu",
                mode=mode, workload={"name": "tiny-lm"}, settings={"batch": 8, "context": 64}, author=author,
                versions={"torch": "2.13.0+cpu"}, hardware=hardware,
                metrics={"tokens_per_s": {"value": rate, "unit": "tokens/s", "better": "higher"}})  # fmt: skip
    return entry_id


def board() -> dict[str, dict]:
    result = run_kb("board", "--workload", "tiny-lm", "--json")
    assert result.returncode == 0, result.stderr
    (workload,) = json_data(result.stdout)["workloads"]
    return {cell["label"]: cell for cell in workload["cells"]}


def test_runs_on_other_hardware_are_reproductions_not_repeats(kb: KnowledgeBase) -> None:
    run(kb, "eager", 14162.1, AMD, day=1, author="")  # the shipped runs: another machine, another day
    run(kb, "compiled", 14754.2, AMD, day=1, author="")
    for rate in (34187.0, 37926.0, 35020.0):
        run(kb, "eager", rate, INTEL)
    for rate in (25902.0, 32775.0, 24110.0):
        run(kb, "compiled", rate, INTEL)
    cells = board()
    eager, compiled = cells["cpu · eager"], cells["cpu · compiled"]
    assert (eager["n"], eager["spread"], eager["figure"]["value"]) == (3, [34187.0, 37926.0], 35020.0)
    assert (compiled["n"], compiled["spread"]) == (3, [24110.0, 32775.0])
    # The other machine is counted as a host that ran the configuration, its one run judged by the verdict rule.
    assert eager["reproduction"] == (
        "reproduction by 1 person on 2 hosts undecided, inconclusive ×0.404 (n=1 vs 3, floor 2%; too few runs: 3 on "
        "each side give an interval)"
    )
    assert compiled["comparison"]["n"] == 3 and compiled["comparison"]["n_base"] == 3
    comparison = json_data(run_kb("compare", "--workload", "tiny-lm", "--by", "mode", "--json").stdout)
    assert comparison["runs"] == [3, 3]


def test_the_same_hardware_on_another_host_is_a_repeat_and_a_reproduction(kb: KnowledgeBase) -> None:
    twin = {**INTEL, "hostname": "vm2"}
    for rate, hardware, author in ((1000.0, INTEL, "ana"), (1010.0, twin, "bo"), (990.0, INTEL, "ana")):
        run(kb, "eager", rate, hardware, author=author)
    eager = board()["cpu · eager"]
    assert eager["n"] == 3 and eager["reproduction"] == (
        "reproduction by 2 people on 2 hosts undecided, inconclusive ×1.02 (n=1 vs 2, floor 2%; too few runs: 3 on "
        "each side give an interval)"
    )
