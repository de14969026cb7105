"""What a board cell says, in the terminal and on the site: figures with their significant digits (a slow
backend's 0.42 samples/s is not "0"), the failure's whole message, peak memory, a reported wait with its source,
and each cell's release and date."""

from __future__ import annotations

from conftest import run_kb, write_entry

from kb.store import KnowledgeBase


def slow_run(kb: KnowledgeBase, entry_id: str, backend: str, rate: float, **fields) -> None:
    write_entry(kb, entry_id, recorded=f"2026-11-{entry_id[8:10]}T00:00:00Z", status="completed", backend=backend,
                mode="eager", workload={"name": "diffusion"}, settings={"batch": 1},
                metrics={"samples_per_s": {"value": rate, "unit": "samples/s"}}, **fields)  # fmt: skip


def test_a_figure_below_one_keeps_its_significant_digits(kb: KnowledgeBase) -> None:
    slow_run(kb, "2026-11-10-diffusion-cpu-000001", "cpu", 0.42)
    slow_run(kb, "2026-11-11-diffusion-xla-000002", "xla", 12.345678)
    printed = run_kb("board")
    assert printed.returncode == 0, printed.stderr
    assert "0.42 smp/s" in printed.stdout and "12.35 smp/s" in printed.stdout, printed.stdout
    assert " 0 smp/s" not in printed.stdout and "12 smp/s" not in printed.stdout
