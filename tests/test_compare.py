"""`kb compare`: what differs, ratios with their direction, noise-aware step times, grouped comparisons."""

from __future__ import annotations

import sys

import pytest
from conftest import json_data, run_kb, write_entry

from kb.store.knowledge_base import KnowledgeBase

ONCE = "inconclusive (n=1 vs 1, floor 2%; too few runs: 3 on each side give an interval)"  # one run a side
HANDOVER = (
    "import json, os\n"
    "def emit(**event):\n"
    "    open(os.path.join(os.environ['KB_RUN_DIR'], 'events.jsonl'), 'a').write(json.dumps(event) + '\\n')\n"
    "emit(event='set', field='timings.step_s', value={{'median': {median}, 'p10': {p10}, 'p90': {p90}, 'count': 50}})\n"
    "emit(event='metric', name='tokens_per_s', value={rate}, unit='tokens/s')\n"
    "emit(event='metric', name='tokens_per_s_median_step', value={step_rate}, unit='tokens/s')\n"
)


def record(batch: int, median: float, p10: float, p90: float, rate: float) -> str:
    script = HANDOVER.format(median=median, p10=p10, p90=p90, rate=rate, step_rate=batch * 64 / median)
    result = run_kb(
        "record",
        "--workload",
        "mlp",
        "--backend",
        "cpu",
        "--mode",
        "eager",
        "--setting",
        f"batch={batch}",
        "--",
        sys.executable,
        "-c",
        script,
    )
    assert result.returncode == 0, result.stderr
    return result.stderr.split("recorded ")[1].split()[0]


def test_two_recorded_runs_side_by_side(kb: KnowledgeBase) -> None:
    slow = record(8, 0.020, 0.019, 0.022, 25600.0)
    fast = record(16, 0.012, 0.011, 0.013, 85333.0)
    result = run_kb("compare", slow, fast, "--json")
    assert result.returncode == 0, result.stderr
    comparison = json_data(result.stdout)
    assert comparison["differences"] == ["batch 8 → 16"]
    rows = {(row["section"], row["name"]): row for row in comparison["rows"]}
    step = rows[("timings", "step_s")]
    # One run a side: the figures are far apart, but one run against one is no verdict (the noise that
    # decides is between runs, and there is none to see).
    one = ONCE
    assert step["values"] == [0.02, 0.012] and step["ratios"] == [1.0, 0.6] and step["verdicts"] == ["baseline", one]
    step_rate = rows[("metrics", "tokens_per_s_median_step")]
    assert step_rate["better"] == "higher" and step_rate["verdicts"] == ["baseline", one]
    rate = rows[("metrics", "tokens_per_s")]
    assert rate["better"] == "higher" and rate["verdicts"] == ["baseline", one]
    assert rate["ratios"][1] == pytest.approx(3.3333, rel=1e-3)
    assert comparison["noise_method"].startswith("between runs") and comparison["runs"] == [1, 1]


def test_the_spread_of_steps_inside_one_run_is_no_footing(kb: KnowledgeBase) -> None:
    # Step spreads that do not overlap (p10-p90 apart): one run each still decides nothing.
    first = record(8, 0.020, 0.0199, 0.0201, 25600.0)
    second = record(8, 0.018, 0.0179, 0.0181, 28000.0)
    rows = json_data(run_kb("compare", first, second, "--json").stdout)["rows"]
    verdicts = {row["name"]: row["verdicts"][1] for row in rows}
    assert verdicts["step_s"] == verdicts["tokens_per_s_median_step"] == verdicts["tokens_per_s"]
    assert verdicts["step_s"] == "inconclusive (n=1 vs 1, floor 2%; too few runs: 3 on each side give an interval)"


def test_reported_figures_are_shown_beside_measured_ones_never_ranked(kb: KnowledgeBase) -> None:
    measured = record(8, 0.020, 0.019, 0.022, 25600.0)
    reported = "2026-11-20-mlp-vendor-000001"
    write_entry(kb, reported, recorded="2026-11-20T00:00:00Z", kind="report", backend="neuron", mode="compiled",
                workload={"name": "mlp"}, provenance={"source": "reported", "publisher": "Vendor blog"},
                metrics={"tokens_per_s": {"value": 182000.0, "unit": "tokens/s"}})  # fmt: skip
    rate = next(row for row in json_data(run_kb("compare", measured, reported, "--json").stdout)["rows"]
                if row["name"] == "tokens_per_s")  # fmt: skip
    assert rate["values"] == [25600.0, 182000.0]
    assert rate["ratios"] == [1.0, None] and rate["verdicts"] == ["baseline", "reported, not ranked"]
    shown = run_kb("compare", measured, reported)
    assert "182,000 tokens/s" in shown.stdout and "reported, not ranked" in shown.stdout and "×7.11" not in shown.stdout


@pytest.fixture
def releases(kb: KnowledgeBase) -> KnowledgeBase:
    base = {"status": "completed", "workload": {"name": "qwen3-32b"}, "mode": "compiled"}
    write_entry(
        kb,
        "2026-01-01-qwen-neuron-000001",
        recorded="2026-01-01T00:00:00Z",
        backend="neuron",
        versions={"torch": "2.9.0", "torch-neuronx": "2.9.0.2.15.1"},
        hardware={"accelerators": [{"vendor": "aws", "name": "trainium2", "count": 16}]},
        timings={"compile_s": 1637.0},
        metrics={"tokens_per_s": {"value": 11099.0, "unit": "tokens/s"}},
        **base,
    )
    write_entry(
        kb,
        "2026-06-01-qwen-neuron-000002",
        recorded="2026-06-01T00:00:00Z",
        backend="neuron",
        versions={"torch": "2.10.0", "torch-neuronx": "2.13.3.0"},
        hardware={"accelerators": [{"vendor": "aws", "name": "trainium2", "count": 32}]},
        timings={"compile_s": 540.0},
        metrics={"tokens_per_s": {"value": 14156.0, "unit": "tokens/s"}},
        **base,
    )
    write_entry(
        kb,
        "2026-03-01-qwen-cuda-000003",
        recorded="2026-03-01T00:00:00Z",
        backend="cuda",
        versions={"torch": "2.9.1"},
        metrics={"tokens_per_s": {"value": 20000.0, "unit": "tokens/s"}},
        **base,
    )
    write_entry(kb, "2026-02-01-decision-000004", kind="decision", recorded="2026-02-01T00:00:00Z")
    return kb


def test_versions_and_hardware_differences_are_spelled_out(releases: KnowledgeBase) -> None:
    result = run_kb("compare", "2026-01-01-qwen-neuron-000001", "2026-06-01-qwen-neuron-000002")
    assert result.returncode == 0, result.stderr
    assert "accelerators 16x trainium2 → 32x trainium2" in result.stdout
    assert "torch 2.9.0 → 2.10.0" in result.stdout and "torch-neuronx 2.9.0.2.15.1 → 2.13.3.0" in result.stdout
    assert "×0.33 inconclusive (n=1 vs 1, floor 2%" in " ".join(result.stdout.split())  # 1637 s → 540 s, once each
    markdown = run_kb("compare", "2026-01-01-qwen-neuron-000001", "2026-06-01-qwen-neuron-000002", "--markdown")
    (compile_row,) = [line for line in markdown.stdout.splitlines() if line.startswith("| timings.compile_s |")]
    assert compile_row.endswith(f" ×0.33 {ONCE} |")
    # 16 and 32 devices: throughput per device (11099 / 16 against 14156 / 32).
    per_device = f"| 693.7 tokens/s per device | 442.4 tokens/s per device  ×0.638 {ONCE} |"
    assert f"| metrics.tokens_per_s {per_device}" in markdown.stdout
    assert "- torch 2.9.0 → 2.10.0" in markdown.stdout


def test_grouped_compare_takes_the_newest_of_each_group(releases: KnowledgeBase) -> None:
    by_backend = json_data(run_kb("compare", "--workload", "qwen3-32b", "--by", "backend", "--json").stdout)
    # The baseline: the backend with the most runs (no incumbent is set), then the others.
    assert [e["id"] for e in by_backend["entries"]] == ["2026-06-01-qwen-neuron-000002", "2026-03-01-qwen-cuda-000003"]
    by_torch = json_data(run_kb("compare", "--workload", "qwen3-32b", "--by", "version:torch", "--json").stdout)
    # Version order, not text order: 2.9.0 < 2.9.1 < 2.10.0.
    assert [e["id"] for e in by_torch["entries"]] == [
        "2026-01-01-qwen-neuron-000001",
        "2026-03-01-qwen-cuda-000003",
        "2026-06-01-qwen-neuron-000002",
    ]


def test_bad_comparisons_say_what_is_wrong(releases: KnowledgeBase) -> None:
    kinds = run_kb("compare", "2026-01-01-qwen-neuron-000001", "2026-02-01-decision-000004")
    assert kinds.returncode == 1 and "cannot be compared" in kinds.stderr and "(decision)" in kinds.stderr
    unknown = run_kb("compare", "2026-01-01-qwen-neuron-000001", "2026-06-01-qwen-neuron-000009")
    assert unknown.stderr.startswith("kb: error: no entry '2026-06-01-qwen-neuron-000009'")
    assert "did you mean 2026-06-01-qwen-neuron-000002" in unknown.stderr
    assert (
        run_kb("compare", "2026-01-01-qwen-neuron-000001").stderr == "kb: error: compare needs at least two entries\n"
    )
    assert "no runs of workload 'nope'" in run_kb("compare", "--workload", "nope", "--by", "backend").stderr
    assert "group by backend, mode, or version:PACKAGE" in run_kb("compare", "--workload", "x", "--by", "date").stderr


def test_rerun_repeats_the_command_links_and_compares(kb: KnowledgeBase) -> None:
    first = record(8, 0.020, 0.019, 0.022, 25600.0)
    result = run_kb("rerun", "--yes", first[:20])
    assert result.returncode == 0, result.stderr
    assert f"a rerun of {first}" in result.stderr
    assert "tokens_per_s" in result.stdout and "baseline" in result.stdout
    entries = {e.id: e for e in kb.iter_entries()}
    (again,) = [e for e in entries.values() if e.id != first]
    assert again.data["links"] == {"rerun_of": first}
    assert again.data["command"]["argv"] == entries[first].data["command"]["argv"]
    assert again.data["settings"]["batch"] == 8 and again.data["workload"] == {"name": "mlp"}


def test_rerun_refuses_what_it_cannot_repeat(kb: KnowledgeBase) -> None:
    run_kb("record", "--title", "after the fact", "--no-edit")
    (entry,) = list(kb.iter_entries())
    refused = run_kb("rerun", entry.id)
    assert refused.returncode == 1
    assert refused.stderr == (
        f"kb: error: {entry.id} holds no recorded command to run again (it was recorded after "
        "the fact, or is not a run)\n"
    )
