"""`kb expect` pools a timing's repeats as the board pools a cell's (kb.answers.figures.configuration): the same
hardware, launch times apart from device times, runs on a busy machine kept out. Hand-written entries from two
machines of different hardware, launch-time runs and a busy machine."""

from __future__ import annotations

from conftest import json_data, run_kb, write_entry

from kb.store.knowledge_base import KnowledgeBase

H100 = {"accelerators": [{"name": "NVIDIA H100", "count": 1}], "cpu": "Xeon", "cpu_threads": 32}
A10G = {"accelerators": [{"name": "NVIDIA A10G", "count": 1}], "cpu": "EPYC", "cpu_threads": 16}
LAUNCHED = "none: launch times"


def run(kb: KnowledgeBase, n: int, step: float, hardware: dict, sync: str | None = None) -> None:
    timings = {"step_s": {"median": step, "count": 20}, **({"device_sync": sync} if sync else {})}
    write_entry(kb, f"2026-11-{n:02d}-lm-cuda-{n:06d}", recorded=f"2026-11-{n:02d}T00:00:00Z", backend="cuda",
                mode="compiled", workload={"name": "lm"}, status="completed", versions={"torch": "2.10.0"},
                hardware=hardware, timings=timings)  # fmt: skip


def expect(kb: KnowledgeBase, bound: float) -> dict:
    path = kb.root / "expectations.toml"
    path.write_text(f'[[expect]]\nworkload = "lm"\nbackend = "cuda"\nfigure = "step_s"\nmax = {bound}\n')
    (outcome,) = json_data(run_kb("expect", "--json").stdout)
    return outcome


def test_runs_on_other_hardware_are_no_repeats(kb: KnowledgeBase) -> None:
    for n, step in enumerate((0.30, 0.31, 0.29), 1):
        run(kb, n, step, A10G)
    for n, step in enumerate((0.10, 0.102, 0.098), 4):
        run(kb, n, step, H100)
    # The newest runs (on an H100) against the bound, never the midpoint of two machines' figures.
    outcome = expect(kb, 0.15)
    assert (outcome["verdict"], outcome["actual"], outcome["n"]) == ("improved", 0.1, 3)
    assert outcome["left_out"] == "3 on other hardware" and outcome["entry"] == "2026-11-06-lm-cuda-000006"
    said = " ".join(run_kb("expect").stdout.split())
    assert "now 100 ms (median of 3 runs, 4% apart); 3 on other hardware left out" in said
    # The bound is rewritten from those three runs, with 10% room (their spread is 4%).
    assert run_kb("expect", "--update").returncode == 0
    assert "max = 0.11\n" in (kb.root / "expectations.toml").read_text()
    # A newer run on the A10G: its own runs are the evidence now, and they break the bound.
    run(kb, 7, 0.30, A10G)
    outcome = expect(kb, 0.15)
    assert (outcome["verdict"], outcome["actual"], outcome["n"]) == ("fail", 0.3, 4)
    assert run_kb("expect").returncode == 1


def test_launch_times_and_a_busy_machine_are_kept_out(kb: KnowledgeBase) -> None:
    run(kb, 1, 0.001, H100, sync=LAUNCHED)  # nothing waited for the device: how long the work took to queue
    run(kb, 2, 0.001, H100, sync=LAUNCHED)
    run(kb, 3, 0.10, H100)
    run(kb, 4, 0.12, H100)
    busy = {**H100, "load": {"busy": True}}
    run(kb, 5, 0.5, busy)
    run(kb, 6, 0.5, busy)
    outcome = expect(kb, 0.1)
    assert (outcome["verdict"], outcome["actual"], outcome["n"]) == ("fail", 0.11, 2)
    assert outcome["left_out"] == "2 on a busy machine"
    for n in (3, 4):
        (kb.entries_path / f"2026-11-{n:02d}-lm-cuda-{n:06d}.md").unlink()
    # Only launch times left off the busy machine: how fast work was queued meets no step-time bound.
    outcome = expect(kb, 0.1)
    assert (outcome["verdict"], outcome["actual"]) == ("missing", None)
    assert outcome["reason"] == "launch times: not ranked (its figures are launch times, not device times)"
    for n in (1, 2):
        (kb.entries_path / f"2026-11-{n:02d}-lm-cuda-{n:06d}.md").unlink()
    outcome = expect(kb, 1.0)
    assert (outcome["verdict"], outcome["actual"]) == ("missing", None)
    assert outcome["reason"] == "only runs on a busy machine (2): no verdict stands on them"
