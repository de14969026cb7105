"""What a board cell says, in the terminal and on the site: figures with their significant digits (a slow
backend's 0.42 samples/s is not "0"), the failure's whole message, peak memory, a reported wait with its source,
and each cell's release and date."""

from __future__ import annotations

from conftest import json_data, run_kb, write_entry

from kb.store import KnowledgeBase


def slow_run(kb: KnowledgeBase, entry_id: str, backend: str, rate: float, **fields) -> None:
    fields.setdefault("metrics", {"samples_per_s": {"value": rate, "unit": "samples/s"}})
    write_entry(kb, entry_id, recorded=f"2026-11-{entry_id[8:10]}T00:00:00Z", status="completed", backend=backend,
                mode="eager", workload={"name": "diffusion"}, settings={"batch": 1}, **fields)  # fmt: skip


def test_a_figure_below_one_keeps_its_significant_digits(kb: KnowledgeBase) -> None:
    slow_run(kb, "2026-11-10-diffusion-cpu-000001", "cpu", 0.42)
    slow_run(kb, "2026-11-11-diffusion-xla-000002", "xla", 12.345678)
    printed = run_kb("board")
    assert printed.returncode == 0, printed.stderr
    assert "0.42 smp/s" in printed.stdout and "12.35 smp/s" in printed.stdout, printed.stdout
    assert " 0 smp/s" not in printed.stdout and "12 smp/s" not in printed.stdout


def test_a_cell_carries_the_peak_memory_of_its_runs(kb: KnowledgeBase) -> None:
    slow_run(
        kb, "2026-11-10-diffusion-cuda-000001", "cuda", 3.0, memory={"device_peak_gb": 31.5, "host_peak_rss_gb": 2.0}
    )
    slow_run(kb, "2026-11-11-diffusion-cuda-000002", "cuda", 3.1, memory={"device_peak_gb": 33.25})
    slow_run(
        kb,
        "2026-11-12-diffusion-xla-000003",
        "xla",
        4.0,
        metrics={"samples_per_s": {"value": 4.0, "unit": "samples/s"}, "peak_memory_gb": {"value": 12.0, "unit": "GB"}},
    )
    slow_run(kb, "2026-11-13-diffusion-cpu-000004", "cpu", 0.5, memory={"host_peak_rss_gb": 0.42})
    slow_run(kb, "2026-11-14-diffusion-neuron-000005", "neuron", 2.0, memory={"host_peak_rss_gb": 9.0})
    cells = {cell["backend"]: cell for cell in json_data(run_kb("board", "--json").stdout)["workloads"][0]["cells"]}
    # The highest of the runs behind the figure; the host's memory only for a run on the host's CPU.
    assert {name: cell["peak_memory_gb"] for name, cell in cells.items()} == {
        "cuda": 33.25,
        "xla": 12.0,
        "cpu": 0.42,
        "neuron": None,
    }


def test_a_reported_wait_is_a_figure_with_its_source(kb: KnowledgeBase) -> None:
    write_entry(kb, "2026-11-30-report-wait-000001", kind="report", recorded="2026-11-30T00:00:00Z",
                backend="neuron", mode="compiled", workload={"name": "gpt-oss-train"},
                metrics={"compile_s": {"value": 1637.0, "unit": "s"}},
                provenance={"source": "reported", "publisher": "SemiAnalysis", "date": "2025-10-23"})  # fmt: skip
    printed = run_kb("board")
    assert "reported, not ranked: neuron · compiled compile 27 min 17 s (SemiAnalysis)" in printed.stdout, (
        printed.stdout
    )


def test_the_summary_gives_each_backend_its_peak_memory_and_the_reruns_due(kb: KnowledgeBase) -> None:
    for day, workload, peak in ((10, "diffusion", 30.0), (11, "lm", 50.0), (12, "vision", 10.0)):
        write_entry(kb, f"2026-11-{day}-{workload}-cuda-0000{day}", recorded=f"2026-11-{day}T00:00:00Z",
                    status="completed", backend="cuda", mode="eager", workload={"name": workload},
                    versions={"torch": "2.10.0" if workload != "vision" else "2.11.0"},
                    metrics={"samples_per_s": {"value": 3.0, "unit": "samples/s"}},
                    memory={"device_peak_gb": peak})  # fmt: skip
    assert run_kb("release", "torch", "2.11.0", "--date", "2026-11-11").returncode == 0
    rows = json_data(run_kb("board", "--summary", "--json").stdout)["rows"]
    assert [(row["label"], row["peak_memory_gb"], row["rerun_due"]) for row in rows] == [("cuda · eager", 30.0, 2)]
    printed = run_kb("board", "--summary").stdout
    assert "    peak memory 30 GB; 2 due a rerun on the newest release" in printed.splitlines(), printed
